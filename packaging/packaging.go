// Package packaging holds omnibrain's service definitions — a systemd user
// unit and a launchd agent — as templates, and renders them. The service
// manager integration (kardianos/service) installs the rendered text
// verbatim, so what the tests check is exactly what gets installed.
package packaging

import (
	"bytes"
	"embed"
	"encoding/xml"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/template"
)

//go:embed systemd/omnibrain.service.tmpl launchd/omnibrain.plist.tmpl
var templates embed.FS

// Service describes the installed service.
type Service struct {
	Name        string // unit / launchd label, e.g. "omnibrain"
	Description string
	Command     []string // absolute executable, then its arguments
	Home        string   // OMNIBRAIN_HOME for the service
	LogDir      string   // launchd only: where stdout/stderr go
}

func (s Service) validate() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, "/ \t\n"):
		return fmt.Errorf("service name %q: must be one word", s.Name)
	case len(s.Command) == 0 || !filepath.IsAbs(s.Command[0]):
		return errors.New("service command must start with an absolute executable path")
	case !filepath.IsAbs(s.Home):
		return fmt.Errorf("service home %q must be absolute", s.Home)
	}
	for _, a := range append(s.Command, s.Home, s.Description) {
		if strings.ContainsAny(a, "\n\r\x00") {
			return fmt.Errorf("service argument %q contains a line break or NUL", a)
		}
	}
	return nil
}

var funcs = template.FuncMap{
	"systemdQuote": systemdQuote,
	"xml": func(s string) (string, error) {
		var b bytes.Buffer
		err := xml.EscapeText(&b, []byte(s))
		return b.String(), err
	},
}

// SystemdUnit renders the systemd user unit.
func SystemdUnit(s Service) (string, error) {
	return render("systemd/omnibrain.service.tmpl", s)
}

// LaunchdPlist renders the launchd agent.
func LaunchdPlist(s Service) (string, error) {
	if s.LogDir == "" {
		s.LogDir = filepath.Join(s.Home, "logs")
	}
	return render("launchd/omnibrain.plist.tmpl", s)
}

func render(name string, s Service) (string, error) {
	if err := s.validate(); err != nil {
		return "", fmt.Errorf("packaging: %w", err)
	}
	t, err := template.New(filepath.Base(name)).Funcs(funcs).ParseFS(templates, name)
	if err != nil {
		return "", fmt.Errorf("packaging: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, s); err != nil {
		return "", fmt.Errorf("packaging: render %s: %w", name, err)
	}
	out := b.String()
	// kardianos/service runs its own template engine over what we hand it;
	// text without "{{" passes through unchanged.
	if strings.Contains(out, "{{") {
		return "", fmt.Errorf("packaging: rendered %s contains \"{{\", which the service installer would misread", name)
	}
	return out, nil
}

// systemdQuote quotes one word for an ExecStart= or Environment= line:
// double quotes, with backslash, quote and the specifier character %
// escaped as systemd.service(5) requires.
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	return `"` + r.Replace(s) + `"`
}
