package plugins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ManifestName is a local plugin's manifest, in its folder.
const ManifestName = "plugin.yaml"

// Manifest is a plugin's declaration.
type Manifest struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Command is the executable, relative to the plugin directory or
	// absolute; Args follow it.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// SHA256 is the hex sha256 of the Command file, checked before every
	// run. Verify lists further files (a script the command interprets)
	// with their sha256, checked the same way.
	SHA256  string            `yaml:"sha256"`
	Verify  map[string]string `yaml:"verify"`
	Timeout Duration          `yaml:"timeout"`
	// Find declares that the command answers {"op":"find"} requests
	// (has the action with this idempotency key already run?). Without
	// it the command is never asked: a plugin that ignores op would run
	// the action again instead of answering.
	Find  bool       `yaml:"find"`
	Tools []ToolDecl `yaml:"tools"`
	// Knowledge are markdown or text files (relative paths) that can be
	// imported as items.
	Knowledge []string `yaml:"knowledge"`

	dir string // the plugin directory
}

// ToolDecl is one tool a plugin offers.
type ToolDecl struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// ReadOnly declares that the tool only reads; every other tool is
	// outgoing and runs only as an approved proposal.
	ReadOnly bool `yaml:"read_only"`
	// Parameters is the JSON schema of the arguments object.
	Parameters map[string]any `yaml:"parameters"`
	Timeout    Duration       `yaml:"timeout"`

	schema json.RawMessage
}

// Duration is a time.Duration written like "10s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 10s or 2m", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Limits on what a manifest may declare.
const (
	DefaultTimeout  = 30 * time.Second
	MaxTimeout      = 10 * time.Minute
	maxManifestSize = 256 << 10
)

var (
	validPluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	validToolName   = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,31}$`)
	validSHA256     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ParseManifest reads and checks a manifest for a plugin in dir. Every
// problem is an error naming the field; nothing is guessed.
func ParseManifest(data []byte, dir string) (*Manifest, error) {
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("manifest is %d bytes (max %d)", len(data), maxManifestSize)
	}
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	m.dir = dir
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", m.Name, err)
	}
	return &m, nil
}

func (m *Manifest) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !validPluginName.MatchString(m.Name) {
		bad("name %q: use 1-32 lower-case letters, digits, _ or -", m.Name)
	}
	if strings.TrimSpace(m.Command) == "" {
		bad("command is required")
	} else if strings.ContainsRune(m.Command, 0) {
		bad("command contains a NUL byte")
	} else if !filepath.IsAbs(m.Command) {
		if _, err := m.within(m.Command); err != nil {
			bad("command %q: %v", m.Command, err)
		}
	}
	m.SHA256 = strings.ToLower(strings.TrimSpace(m.SHA256))
	if !validSHA256.MatchString(m.SHA256) {
		bad("sha256 must be the 64 hex digits of the command's sha256 (sha256sum %s)", m.Command)
	}
	for p, sum := range m.Verify {
		if _, err := m.within(p); err != nil {
			bad("verify %q: %v", p, err)
		}
		if !validSHA256.MatchString(strings.ToLower(sum)) {
			bad("verify %q: sha256 must be 64 hex digits", p)
		}
	}
	switch t := time.Duration(m.Timeout); {
	case t == 0:
		m.Timeout = Duration(DefaultTimeout)
	case t < 0 || t > MaxTimeout:
		bad("timeout %s must be between 0 and %s", t, MaxTimeout)
	}
	if len(m.Tools) == 0 && len(m.Knowledge) == 0 {
		bad("declares neither tools nor knowledge")
	}
	seen := map[string]bool{}
	for i := range m.Tools {
		t := &m.Tools[i]
		if !validToolName.MatchString(t.Name) {
			bad("tool %q: use 1-32 letters, digits, _ or -", t.Name)
		}
		if seen[t.Name] {
			bad("tool %q declared twice", t.Name)
		}
		seen[t.Name] = true
		if strings.TrimSpace(t.Description) == "" {
			bad("tool %q: description is required (the model reads it)", t.Name)
		}
		if tt := time.Duration(t.Timeout); tt < 0 || tt > MaxTimeout {
			bad("tool %q: timeout %s must be between 0 and %s", t.Name, tt, MaxTimeout)
		}
		if t.Parameters == nil {
			t.Parameters = map[string]any{"type": "object"}
		}
		if t.Parameters["type"] != "object" {
			bad("tool %q: parameters must be a JSON schema of type object", t.Name)
		}
		b, err := json.Marshal(t.Parameters)
		if err != nil {
			bad("tool %q: parameters: %v", t.Name, err)
		}
		t.schema = b
	}
	for _, k := range m.Knowledge {
		if _, err := m.within(k); err != nil {
			bad("knowledge %q: %v", k, err)
			continue
		}
		switch strings.ToLower(filepath.Ext(k)) {
		case ".md", ".markdown", ".txt":
		default:
			bad("knowledge %q: only .md, .markdown and .txt files", k)
		}
	}
	return errors.Join(errs...)
}

// within resolves a relative path inside the plugin directory, refusing
// absolute paths and any that climb out of it.
func (m *Manifest) within(rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) || strings.ContainsRune(rel, 0) {
		return "", errors.New("must be a relative path inside the plugin directory")
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", errors.New("must not leave the plugin directory")
	}
	return filepath.Join(m.dir, clean), nil
}

// commandPath is the executable to run.
func (m *Manifest) commandPath() string {
	if filepath.IsAbs(m.Command) {
		return m.Command
	}
	return filepath.Join(m.dir, m.Command)
}

// Dir is the plugin's directory.
func (m *Manifest) Dir() string { return m.dir }

// ErrChecksum is returned when a plugin's executable (or a verified file)
// is not the one its manifest names: it is refused, not run.
var ErrChecksum = errors.New("checksum mismatch")

// verify hashes the command and the Verify files.
func (m *Manifest) verify() error {
	files := map[string]string{m.commandPath(): m.SHA256}
	for rel, sum := range m.Verify {
		p, err := m.within(rel)
		if err != nil {
			return err
		}
		files[p] = strings.ToLower(sum)
	}
	for path, want := range files {
		got, err := fileSHA256(path)
		if err != nil {
			return fmt.Errorf("plugin %s: %w", m.Name, err)
		}
		if got != want {
			return fmt.Errorf("plugin %s: %w: %s has sha256 %s, the manifest says %s; it was changed — check it and update the manifest", m.Name, ErrChecksum, path, got, want)
		}
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
