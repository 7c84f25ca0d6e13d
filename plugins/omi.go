package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// OmiManifest is a chat-tools manifest in Omi's format, as served at
// /.well-known/omi-tools.json: the tools an app offers and whether it may
// send the owner messages of its own.
type OmiManifest struct {
	Tools        []OmiTool    `json:"tools"`
	ChatMessages ChatMessages `json:"chat_messages"`
}

// OmiTool is one tool of a manifest.
type OmiTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Endpoint is the URL called, absolute or relative to the manifest's.
	Endpoint string `json:"endpoint"`
	// Method is GET (arguments as query parameters) or POST (the default),
	// PUT, PATCH or DELETE (arguments in a JSON body).
	Method     string          `json:"method"`
	Parameters json.RawMessage `json:"parameters"`
	// AuthRequired (default true) sends the plugin's secret, if the owner
	// gave one, as a bearer token.
	AuthRequired  *bool  `json:"auth_required"`
	StatusMessage string `json:"status_message"`

	url      *url.URL        // Endpoint resolved against the manifest URL
	schema   json.RawMessage // Parameters as an object schema
	props    map[string]bool // the parameters the schema names
	resolved *jsonschema.Resolved
}

// ChatMessages is the manifest's app-initiated messages setting.
type ChatMessages struct {
	Enabled bool `json:"enabled"`
}

// reserved are the body fields omnibrain sets itself.
var reserved = map[string]bool{"uid": true, "app_id": true, "tool_name": true}

// Limits of a manifest.
const (
	maxToolsPerPlugin = 200
	maxDescription    = 4000
	maxStatusMessage  = 200
)

// ParseOmiManifest reads and checks a manifest fetched from base (its
// URL, which relative endpoints are resolved against). insecure allows
// plain-http endpoints off the loopback. Every problem is reported,
// naming the tool and field.
func ParseOmiManifest(data []byte, base *url.URL, insecure bool) (*OmiManifest, error) {
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("manifest is %d bytes (max %d)", len(data), maxManifestSize)
	}
	var m OmiManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest is not the chat-tools JSON ({\"tools\":[…]}): %w", err)
	}
	if dec.More() {
		return nil, errors.New("manifest has data after its JSON object")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(m.Tools) == 0 && !m.ChatMessages.Enabled {
		bad("declares no tools")
	}
	if len(m.Tools) > maxToolsPerPlugin {
		bad("declares %d tools (max %d)", len(m.Tools), maxToolsPerPlugin)
	}
	seen := map[string]bool{}
	for i := range m.Tools {
		t := &m.Tools[i]
		if !validToolName.MatchString(t.Name) {
			bad("tool %q: name: use 1-32 letters, digits, _ or -", t.Name)
			continue
		}
		if seen[t.Name] {
			bad("tool %q declared twice", t.Name)
		}
		seen[t.Name] = true
		if err := t.check(base, insecure); err != nil {
			bad("tool %q: %w", t.Name, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &m, nil
}

func (t *OmiTool) check(base *url.URL, insecure bool) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch d := strings.TrimSpace(t.Description); {
	case d == "":
		bad("description is required (the model reads it)")
	case utf8.RuneCountInString(d) > maxDescription:
		bad("description is longer than %d characters", maxDescription)
	}
	if utf8.RuneCountInString(t.StatusMessage) > maxStatusMessage || strings.ContainsAny(t.StatusMessage, "\r\n") {
		bad("status_message must be one line of at most %d characters", maxStatusMessage)
	}
	t.Method = strings.ToUpper(strings.TrimSpace(t.Method))
	switch t.Method {
	case "":
		t.Method = "POST"
	case "GET", "POST", "PUT", "PATCH", "DELETE":
	default:
		bad("method %q: want GET, POST, PUT, PATCH or DELETE", t.Method)
	}
	if u, err := endpointURL(base, t.Endpoint, insecure); err != nil {
		bad("endpoint: %w", err)
	} else {
		t.url = u
	}
	if err := t.parseSchema(); err != nil {
		bad("parameters: %w", err)
	}
	return errors.Join(errs...)
}

// parseSchema accepts Omi's parameters ({"properties", "required"}, with
// or without "type": "object") and keeps the parameter names: only they
// are ever sent.
func (t *OmiTool) parseSchema() error {
	s := map[string]any{}
	if len(bytes.TrimSpace(t.Parameters)) > 0 && string(bytes.TrimSpace(t.Parameters)) != "null" {
		if err := json.Unmarshal(t.Parameters, &s); err != nil {
			return fmt.Errorf("not a JSON object: %w", err)
		}
	}
	switch typ := s["type"]; typ {
	case nil:
		s["type"] = "object"
	case "object":
	default:
		return fmt.Errorf("type %v: the parameters must be an object schema", typ)
	}
	t.props = map[string]bool{}
	if ps, ok := s["properties"]; ok {
		pm, ok := ps.(map[string]any)
		if !ok {
			return errors.New("properties must be an object")
		}
		for name := range pm {
			if reserved[name] {
				return fmt.Errorf("parameter %q is set by omnibrain itself (uid, app_id and tool_name are reserved)", name)
			}
			t.props[name] = true
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		return err
	}
	if t.resolved, err = js.Resolve(nil); err != nil {
		return err
	}
	t.schema = b
	return nil
}

// Auth reports whether calls send the plugin's secret (default true).
func (t *OmiTool) Auth() bool { return t.AuthRequired == nil || *t.AuthRequired }

// URL is the resolved endpoint.
func (t *OmiTool) URL() *url.URL { return t.url }

// endpointURL resolves ref against base and checks that calls to it are
// allowed: https, or plain http to this machine only (unless insecure).
func endpointURL(base *url.URL, ref string, insecure bool) (*url.URL, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, errors.New("is required")
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	u := r
	if base != nil {
		u = base.ResolveReference(r)
	}
	if err := checkURL(u, insecure); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL allows https anywhere and http to a loopback host; insecure
// allows http anywhere. Credentials in URLs are refused: secrets live in
// 0600 files.
func checkURL(u *url.URL, insecure bool) error {
	if u.User != nil {
		return fmt.Errorf("%s: credentials in the URL are not accepted (use --token-file)", redactURL(u))
	}
	if u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", u.String())
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if insecure || loopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%s: plain http is only allowed to this machine (localhost); use https, or --insecure if you accept that anyone on the network can read and change the calls", u)
	default:
		return fmt.Errorf("%s: scheme %q: want https (or http to localhost)", u, u.Scheme)
	}
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
