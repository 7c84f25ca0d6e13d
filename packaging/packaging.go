// Package packaging holds omnibrain's service definitions — a systemd user
// unit and a launchd agent — as templates, and renders them. The service
// manager integration (kardianos/service) installs the rendered text
// verbatim, so what the tests check is exactly what gets installed.
package packaging

import (
	"embed"
	"encoding/xml"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// SystemdUnit renders the systemd user unit.
func SystemdUnit(s Service) (string, error) {
	quoted := make([]string, len(s.Command))
	for i, a := range s.Command {
		quoted[i] = systemdQuote(a)
	}
	return render("systemd/omnibrain.service.tmpl", s,
		"{{name}}", s.Name,
		"{{description}}", s.Description,
		"{{command}}", strings.Join(quoted, " "),
		"{{environment}}", systemdQuote("OMNIBRAIN_HOME="+s.Home))
}

// LaunchdPlist renders the launchd agent.
func LaunchdPlist(s Service) (string, error) {
	if s.LogDir == "" {
		s.LogDir = filepath.Join(s.Home, "logs")
	}
	var args strings.Builder
	for _, a := range s.Command {
		args.WriteString("\n\t\t<string>" + xmlText(a) + "</string>")
	}
	return render("launchd/omnibrain.plist.tmpl", s,
		"{{name}}", xmlText(s.Name),
		"{{arguments}}", args.String(),
		"{{home}}", xmlText(s.Home),
		"{{logdir}}", xmlText(s.LogDir))
}

// render fills the template's placeholders in one pass (a value is never
// read as a placeholder). Not text/template: its method lookup by name
// makes the linker keep every exported method of every type in the
// binary, some 30 MB of it.
func render(name string, s Service, placeholders ...string) (string, error) {
	if err := s.validate(); err != nil {
		return "", fmt.Errorf("packaging: %w", err)
	}
	text, err := templates.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("packaging: %w", err)
	}
	out := strings.NewReplacer(placeholders...).Replace(string(text))
	// kardianos/service runs its own template engine over what we hand it;
	// text without "{{" passes through unchanged. This also catches a
	// placeholder left unfilled.
	if strings.Contains(out, "{{") {
		return "", fmt.Errorf("packaging: rendered %s contains \"{{\", which the service installer would misread", name)
	}
	return out, nil
}

// xmlText escapes s for XML character data.
func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // writing to a Builder cannot fail
	return b.String()
}

// systemdQuote quotes one word for an ExecStart= or Environment= line:
// double quotes, with backslash, quote and the specifier character %
// escaped as systemd.service(5) requires.
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	return `"` + r.Replace(s) + `"`
}
