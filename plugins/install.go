package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/config"
)

// AddOptions are what `plugin add` and `plugin update` were told.
type AddOptions struct {
	Root string // HOME/plugins
	Home string // the omnibrain home: a local plugin's folder stays out of it
	// Source is a manifest URL or a local plugin's folder.
	Source string
	Name   string // "": the local manifest's name, or from the URL's host
	// Read names the tools that run without approval.
	Read     []string
	Insecure bool
	Trust    bool
	// TokenFile holds the secret sent as a bearer token where a tool
	// says auth_required.
	TokenFile string
	// Landlock says local plugins are confined by Landlock here.
	Landlock bool
	Client   *http.Client
	Now      time.Time
}

// Candidate is a plugin about to be added or updated: what the owner is
// shown before confirming, and what Save writes.
type Candidate struct {
	Pin          Pin
	Tools        []ToolView
	ChatMessages bool
	Warnings     []string
	// Removed are tools an update drops.
	Removed []string

	raw   []byte
	token string
	omi   *OmiManifest
	local *Manifest
}

// ToolView is one tool as the owner sees it before confirming.
type ToolView struct {
	Name        string
	Effect      string // read or outgoing
	Target      string // "POST https://…" or the local command
	Description string
	Status      string
	Note        string // on update: new, changed or unchanged
}

// Prepare reads the plugin at o.Source and checks it against o, for
// `plugin add`: nothing is written.
func Prepare(ctx context.Context, o AddOptions) (*Candidate, error) {
	c, err := prepare(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	dir, _ := pluginDir(o.Root, c.Pin.Name)
	if _, err := readPin(dir); err == nil {
		return nil, fmt.Errorf("a plugin named %q is already added (omnibrain plugin update %s, or add this one with --name)", c.Pin.Name, c.Pin.Name)
	}
	return c, nil
}

// PrepareUpdate reads name's source again, for `plugin update`. Tools the
// owner let read keep that effect if their declaration did not change;
// o.Read, if given, replaces the choice.
func PrepareUpdate(ctx context.Context, o AddOptions, name string) (*Candidate, error) {
	dir, err := pluginDir(o.Root, name)
	if err != nil {
		return nil, err
	}
	pin, err := readPin(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no plugin %q is added (omnibrain plugin list)", name)
	}
	if err != nil {
		return nil, err
	}
	o.Source, o.Name = pin.Source, pin.Name
	o.Insecure = o.Insecure || pin.Insecure
	o.Trust = o.Trust || pin.Trust
	return prepare(ctx, o, pin)
}

func prepare(ctx context.Context, o AddOptions, old *Pin) (*Candidate, error) {
	if o.Client == nil {
		o.Client = NewHTTPClient()
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var c *Candidate
	var err error
	if strings.Contains(o.Source, "://") {
		c, err = prepareHTTP(ctx, o)
	} else {
		c, err = prepareLocal(o)
	}
	if err != nil {
		return nil, err
	}
	c.Pin.Added, c.Pin.Confirmed, c.Pin.UID = o.Now, o.Now, randomHex(16)
	if old != nil {
		c.Pin.Added, c.Pin.UID = old.Added, old.UID
		if err := c.compare(o, old); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func prepareHTTP(ctx context.Context, o AddOptions) (*Candidate, error) {
	u, err := ParseSourceURL(o.Source, o.Insecure)
	if err != nil {
		return nil, err
	}
	raw, err := FetchManifest(ctx, o.Client, u)
	if err != nil {
		return nil, err
	}
	m, err := ParseOmiManifest(raw, u, o.Insecure)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", u, err)
	}
	name := o.Name
	if name == "" {
		name = nameFromHost(u)
	}
	if !validPluginName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a plugin name (1-32 lower-case letters, digits, _ or -): choose one with --name", name)
	}
	c := &Candidate{raw: raw, omi: m, ChatMessages: m.ChatMessages.Enabled,
		Pin: Pin{Name: name, Kind: KindHTTP, Source: u.String(), SHA256: hashBytes(raw), Insecure: o.Insecure}}
	var names, needAuth []string
	for _, t := range m.Tools {
		names = append(names, t.Name)
		if t.Auth() {
			needAuth = append(needAuth, t.Name)
		}
	}
	for _, r := range o.Read {
		if !slices.Contains(names, r) {
			return nil, fmt.Errorf("--read %s: the manifest has no tool %q (it has: %s)", r, r, strings.Join(names, ", "))
		}
	}
	c.Pin.Read = dedupe(o.Read)
	if o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		if c.token = strings.TrimSpace(string(b)); c.token == "" || strings.ContainsAny(c.token, "\r\n") {
			return nil, fmt.Errorf("--token-file %s: want one line, the token", o.TokenFile)
		}
		if len(needAuth) == 0 {
			c.Warnings = append(c.Warnings, "no tool says auth_required: the token is kept but never sent")
		}
	} else if len(needAuth) > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s say auth_required and no --token-file was given: they are called without a token", strings.Join(needAuth, ", ")))
	}
	if o.Insecure && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		c.Warnings = append(c.Warnings, "--insecure: calls travel in plain http, anyone on the network can read and change them")
	}
	for _, t := range m.Tools {
		c.Tools = append(c.Tools, ToolView{Name: t.Name, Effect: c.Pin.effect(t.Name), Target: t.Method + " " + t.url.String(),
			Description: t.Description, Status: t.StatusMessage})
	}
	return c, nil
}

func prepareLocal(o AddOptions) (*Candidate, error) {
	if o.TokenFile != "" {
		return nil, errors.New("--token-file is for chat-tools plugins (a manifest URL), not local ones")
	}
	dir, err := filepath.Abs(o.Source)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("plugin folder: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("plugin folder %s: %w (a local plugin is a folder with %s)", dir, err, ManifestName)
	}
	man, err := ParseManifest(raw, dir)
	if err != nil {
		return nil, err
	}
	if o.Name != "" && o.Name != man.Name {
		return nil, fmt.Errorf("--name %s: a local plugin's name is the one in its manifest (%s)", o.Name, man.Name)
	}
	if err := checkFolder(dir, o.Home, o.Root, man.Name); err != nil {
		return nil, err
	}
	if err := man.verify(); err != nil {
		return nil, err
	}
	var claims []string
	for _, t := range man.Tools {
		if t.ReadOnly {
			claims = append(claims, t.Name)
		}
	}
	read := claims
	if len(o.Read) > 0 {
		for _, r := range o.Read {
			if !slices.Contains(claims, r) {
				return nil, fmt.Errorf("--read %s: the manifest does not declare %q read_only, so it stays outgoing", r, r)
			}
		}
		read = dedupe(o.Read)
	}
	if len(read) > 0 && !o.Landlock && !o.Trust {
		return nil, fmt.Errorf("this kernel has no Landlock, so nothing stops %s from reading your omnibrain home although it claims to only read (%s): add it with --trust to accept the claim, or ask its author for a version without read_only tools", man.Name, strings.Join(read, ", "))
	}
	c := &Candidate{raw: raw, local: man,
		Pin: Pin{Name: man.Name, Kind: KindLocal, Source: dir, SHA256: hashBytes(raw), Read: read, Trust: o.Trust}}
	if !o.Landlock {
		c.Warnings = append(c.Warnings, "this kernel has no Landlock: the plugin runs with a scrubbed environment, a private HOME and resource limits, but could read your files")
	}
	for _, t := range man.Tools {
		c.Tools = append(c.Tools, ToolView{Name: t.Name, Effect: c.Pin.effect(t.Name), Target: strings.Join(append([]string{man.commandPath()}, man.Args...), " "),
			Description: t.Description})
	}
	return c, nil
}

// checkFolder keeps a local plugin's folder, which it may read, apart
// from the omnibrain home: it may be the plugin's own HOME/plugins/<name>,
// never the home or a folder around it.
func checkFolder(dir, home, root, name string) error {
	if home == "" {
		return nil
	}
	h, err := filepath.EvalSymlinks(home)
	if err != nil {
		h = home
	}
	if within(dir, h) {
		return fmt.Errorf("plugin folder %s holds the omnibrain home %s: a plugin may read its folder, so it must not be around your data", dir, h)
	}
	if within(h, dir) {
		own := filepath.Join(h, strings.TrimPrefix(root, home), name)
		if r, err := filepath.EvalSymlinks(root); err == nil {
			own = filepath.Join(r, name)
		}
		if dir != own {
			return fmt.Errorf("plugin folder %s is inside the omnibrain home: put it in %s or outside the home", dir, own)
		}
	}
	return nil
}

// within reports whether path is parent or inside it.
func within(parent, path string) bool {
	rel, err := filepath.Rel(parent, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// compare marks what an update changes, and keeps the read choice of
// tools whose declaration did not change unless o.Read replaces it.
func (c *Candidate) compare(o AddOptions, old *Pin) error {
	dir, _ := pluginDir(o.Root, old.Name)
	prev, err := confirmed(dir, old)
	if err != nil {
		prev = nil // the old copy is unreadable: everything counts as new
	}
	seen := map[string]bool{}
	var carried []string
	for i := range c.Tools {
		v := &c.Tools[i]
		seen[v.Name] = true
		same := prev != nil && prev.sameTool(c, v.Name)
		switch {
		case prev == nil || !prev.hasTool(v.Name):
			v.Note = "new"
		case same:
			v.Note = "unchanged"
			if old.reads(v.Name) {
				carried = append(carried, v.Name)
			}
		default:
			v.Note = "changed"
		}
	}
	if prev != nil {
		for _, n := range prev.toolNames() {
			if !seen[n] {
				c.Removed = append(c.Removed, n)
			}
		}
	}
	if len(o.Read) == 0 && c.Pin.Kind == KindHTTP {
		c.Pin.Read = carried
	}
	for i := range c.Tools {
		c.Tools[i].Effect = c.Pin.effect(c.Tools[i].Name)
	}
	return nil
}

func (p *Pin) effect(tool string) string {
	if p.reads(tool) {
		return EffectRead
	}
	return EffectOutgoing
}

// Save writes the confirmed plugin under root; the pin last, so a crash
// leaves either the old confirmation or the new one.
func (c *Candidate) Save(root string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	dir, err := pluginDir(root, c.Pin.Name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	if err := config.WriteSecretFile(filepath.Join(dir, ManifestCopy), c.raw); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	if c.Pin.Kind == KindHTTP {
		if c.token != "" {
			if err := config.WriteSecretFile(filepath.Join(dir, TokenFile), []byte(c.token+"\n")); err != nil {
				return fmt.Errorf("plugins: %w", err)
			}
		}
		if c.ChatMessages {
			if key, err := readSecret(filepath.Join(dir, AppKeyFile)); err != nil || key == "" {
				if err := config.WriteSecretFile(filepath.Join(dir, AppKeyFile), []byte(randomHex(32)+"\n")); err != nil {
					return fmt.Errorf("plugins: %w", err)
				}
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, ChangedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("plugins: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, PinFile), c.Pin); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	return nil
}

// Verified is what `plugin verify` found for one plugin.
type Verified struct {
	Name   string `json:"name"`
	State  string `json:"state"` // ok, changed, unreachable, broken
	Detail string `json:"detail,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // of a changed manifest
}

// Verify state beyond the listing's.
const StateUnreachable = "unreachable"

// Verify checks that name's manifest is still the confirmed one: a
// chat-tools plugin's server is asked again, a local plugin's files are
// hashed. A changed manifest is recorded (changed.json) and not used
// until the owner confirms it with `plugin update`.
func Verify(ctx context.Context, client *http.Client, root, name string, now time.Time) Verified {
	v := Verified{Name: name, State: StateOK}
	dir, err := pluginDir(root, name)
	if err != nil {
		return Verified{Name: name, State: StateBroken, Detail: err.Error()}
	}
	pin, err := readPin(dir)
	if err != nil {
		return Verified{Name: name, State: StateBroken, Detail: err.Error()}
	}
	switch pin.Kind {
	case KindHTTP:
		u, err := url.Parse(pin.Source)
		if err != nil {
			return Verified{Name: name, State: StateBroken, Detail: err.Error()}
		}
		raw, err := FetchManifest(ctx, client, u)
		if err != nil {
			return Verified{Name: name, State: StateUnreachable, Detail: err.Error()}
		}
		if sum := hashBytes(raw); sum != pin.SHA256 {
			if err := recordChanged(dir, sum, now); err != nil {
				return Verified{Name: name, State: StateBroken, Detail: err.Error()}
			}
			return Verified{Name: name, State: StateChanged, Detail: changedDetail(name), SHA256: sum}
		}
		if err := os.Remove(filepath.Join(dir, ChangedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Verified{Name: name, State: StateBroken, Detail: err.Error()}
		}
	case KindLocal:
		if _, err := loadPlugin(dir, pin, true); err != nil {
			state := StateBroken
			if errors.Is(err, ErrChanged) || errors.Is(err, ErrChecksum) {
				state = StateChanged
			}
			return Verified{Name: name, State: state, Detail: err.Error()}
		}
	}
	return v
}

// recordChanged notes a manifest the owner has not confirmed, keeping
// the time it was first seen.
func recordChanged(dir, sum string, now time.Time) error {
	var cur Changed
	if b, err := os.ReadFile(filepath.Join(dir, ChangedFile)); err == nil && json.Unmarshal(b, &cur) == nil && cur.SHA256 == sum {
		return nil
	}
	return writeJSON(filepath.Join(dir, ChangedFile), Changed{SHA256: sum, Seen: now})
}

func changedDetail(name string) string {
	return fmt.Sprintf("its server now serves a different manifest; its tools are not used until you review and confirm it: omnibrain plugin update %s", name)
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// nameFromHost names a plugin after its host: "tools.example.com" →
// "tools-example-com".
func nameFromHost(u *url.URL) string {
	h := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	n := strings.Trim(nonName.ReplaceAllString(h, "-"), "-")
	if len(n) > 32 {
		n = strings.TrimRight(n[:32], "-")
	}
	return n
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
