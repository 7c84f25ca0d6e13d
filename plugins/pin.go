package plugins

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/config"
)

// What HOME/plugins/<name>/ holds for an added plugin. A local plugin's
// own files stay in its folder (which may be this one).
const (
	PinFile      = "pin.json"           // the owner's confirmation
	ManifestCopy = "confirmed-manifest" // the manifest the owner confirmed, byte for byte
	ChangedFile  = "changed.json"       // a different manifest its server now serves, not confirmed
	TokenFile    = "token"              // the bearer secret (0600)
	AppKeyFile   = "app-key"            // the key for app-initiated messages (0600)
)

// Plugin kinds.
const (
	KindHTTP  = "http"  // an Omi chat-tools manifest and its endpoints
	KindLocal = "local" // a folder with plugin.yaml and a program, run in the sandbox
)

// Effects of a plugin tool, as the owner confirmed them.
const (
	EffectRead     = "read"
	EffectOutgoing = "outgoing"
)

// Pin is the owner's confirmation of a plugin: where it comes from, the
// sha256 of the manifest the owner saw, and which tools the owner let
// run without approval. A manifest with another hash is not used until
// the owner confirms it again.
type Pin struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Source string `json:"source"` // the manifest URL, or the local plugin's folder
	SHA256 string `json:"sha256"`
	// Read are the tools confirmed as read: a chat-tools plugin's tools
	// the owner named with --read, a local plugin's read_only claims.
	Read     []string `json:"read,omitempty"`
	Insecure bool     `json:"insecure,omitempty"` // plain http off the loopback accepted
	Trust    bool     `json:"trust,omitempty"`    // read-only claims accepted without Landlock
	// UID is what the plugin's server receives as uid: random per plugin,
	// so two apps cannot match their users.
	UID       string    `json:"uid"`
	Added     time.Time `json:"added"`
	Confirmed time.Time `json:"confirmed"`
}

func (p *Pin) reads(tool string) bool {
	for _, r := range p.Read {
		if r == tool {
			return true
		}
	}
	return false
}

// Changed is a manifest a plugin's server serves that the owner has not
// confirmed.
type Changed struct {
	SHA256 string    `json:"sha256"`
	Seen   time.Time `json:"seen"`
}

func hashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// pluginDir is HOME/plugins/<name>, refusing names that are not plugin names.
func pluginDir(root, name string) (string, error) {
	if !validPluginName.MatchString(name) {
		return "", fmt.Errorf("%q is not a plugin name (1-32 lower-case letters, digits, _ or -)", name)
	}
	return filepath.Join(root, name), nil
}

// readPin reads a plugin's pin; os.ErrNotExist if it was never added.
func readPin(dir string) (*Pin, error) {
	b, err := os.ReadFile(filepath.Join(dir, PinFile))
	if err != nil {
		return nil, err
	}
	var p Pin
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", PinFile, err)
	}
	if p.Name != filepath.Base(dir) {
		return nil, fmt.Errorf("%s names %q, not its folder %q", PinFile, p.Name, filepath.Base(dir))
	}
	if p.Kind != KindHTTP && p.Kind != KindLocal {
		return nil, fmt.Errorf("%s: kind %q", PinFile, p.Kind)
	}
	return &p, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return config.WriteSecretFile(path, append(b, '\n'))
}

// readSecret reads a 0600 secret file; "" when there is none. A file
// others can read is refused, not used.
func readSecret(path string) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if err := config.CheckPrivate(path, fi.Mode()); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Listed is one added plugin as `plugin list` shows it.
type Listed struct {
	Name   string       `json:"name"`
	Source string       `json:"source"`
	Kind   string       `json:"kind"`
	State  string       `json:"state"`            // ok, changed, broken
	Detail string       `json:"detail,omitempty"` // why it is not ok
	Tools  []ListedTool `json:"tools"`
	// ChatMessages: the plugin may send the owner messages.
	ChatMessages bool `json:"chat_messages,omitempty"`
}

// ListedTool is a tool and its effect.
type ListedTool struct {
	Name   string `json:"name"`
	Effect string `json:"effect"`
}

// Plugin states in a listing.
const (
	StateOK      = "ok"
	StateChanged = "changed" // its manifest changed: not used until confirmed
	StateBroken  = "broken"  // it cannot be loaded
)

// List describes every added plugin under root, sorted by name. A
// plugin that cannot be loaded is listed as broken, with the reason.
func List(root string, landlock bool) ([]Listed, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return []Listed{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	out := []Listed{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		pin, err := readPin(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			out = append(out, Listed{Name: e.Name(), State: StateBroken, Detail: err.Error(), Tools: []ListedTool{}})
			continue
		}
		p, err := loadPlugin(dir, pin, landlock)
		if err != nil {
			state := StateBroken
			if errors.Is(err, ErrChanged) {
				state = StateChanged
			}
			out = append(out, Listed{Name: pin.Name, Source: pin.Source, Kind: pin.Kind, State: state, Detail: err.Error(), Tools: []ListedTool{}})
			continue
		}
		out = append(out, p.listed())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Remove deletes what `plugin add` wrote for name. A local plugin's own
// files are left where they are.
func Remove(root, name string) error {
	dir, err := pluginDir(root, name)
	if err != nil {
		return err
	}
	if _, err := readPin(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no plugin %q is added (omnibrain plugin list)", name)
	}
	// The pin goes first: without it nothing else here is used.
	var errs []error
	for _, f := range []string{PinFile, ManifestCopy, ChangedFile, TokenFile, AppKeyFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	os.Remove(dir) // only if empty: a local plugin's own folder stays
	return errors.Join(errs...)
}
