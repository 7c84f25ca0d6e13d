package plugins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/plugins/sandbox"
)

// Reporter is told when a plugin is refused or fails, so it shows in status.
type Reporter interface {
	Degrade(name string, err error)
	Success(name string)
}

// HealthName is the health component plugins report under.
const HealthName = "plugins"

// ErrChanged marks a plugin whose manifest is not the one the owner
// confirmed: its tools are not used until `plugin update` confirms it.
var ErrChanged = errors.New("the plugin's manifest changed since you confirmed it")

// Options configure a Manager.
type Options struct {
	Log    *slog.Logger
	Report Reporter // may be nil
	// Helper is the sandbox helper, the omnibrain binary; default the
	// running executable.
	Helper string
	// Landlock says the kernel confines local plugins (default: asked).
	Landlock *bool
	Client   *http.Client
	// CallTimeout bounds a chat-tools call (default DefaultCallTimeout).
	CallTimeout time.Duration
	Now         func() time.Time
}

// Manager holds the added plugins under one folder (HOME/plugins) and
// gives the agent their tools and the gate their executor. Reload picks
// up what `plugin add`, `update` and `remove` changed.
type Manager struct {
	root     string
	opts     Options
	log      *slog.Logger
	landlock bool

	mu      sync.RWMutex
	plugins map[string]*plugin
}

// Load reads every plugin added under root. A plugin that cannot be
// loaded is left out and its error returned beside the others, which
// still load.
func Load(root string, opts Options) (*Manager, []error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Client == nil {
		opts.Client = NewHTTPClient()
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Helper == "" {
		if exe, err := os.Executable(); err == nil {
			opts.Helper = exe
		}
	}
	m := &Manager{root: root, opts: opts, log: opts.Log}
	if opts.Landlock != nil {
		m.landlock = *opts.Landlock
	} else {
		m.landlock = sandbox.LandlockABI() > 0
	}
	return m, m.Reload()
}

// Landlock reports whether local plugins are confined by Landlock here.
func (m *Manager) Landlock() bool { return m.landlock }

// Root is the folder plugins are added under.
func (m *Manager) Root() string { return m.root }

// Reload reads the added plugins again.
func (m *Manager) Reload() []error {
	loaded := map[string]*plugin{}
	var errs []error
	entries, err := os.ReadDir(m.root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("plugins: %w", err))
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(m.root, e.Name())
		pin, err := readPin(dir)
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(filepath.Join(dir, ManifestName)); serr == nil {
				errs = append(errs, fmt.Errorf("plugin %s: not added, so not used: review it and run omnibrain plugin add %s", e.Name(), dir))
			}
			continue
		}
		if err == nil {
			var p *plugin
			if p, err = loadPlugin(dir, pin, m.landlock); err == nil {
				if err = p.buildTools(m); err == nil {
					p.m = m
					loaded[pin.Name] = p
					continue
				}
			}
		}
		errs = append(errs, fmt.Errorf("plugin %s: %w", e.Name(), err))
	}
	m.mu.Lock()
	m.plugins = loaded
	m.mu.Unlock()
	return errs
}

// Names lists the loaded plugins, sorted.
func (m *Manager) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.plugins))
	for n := range m.plugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (m *Manager) get(name string) (*plugin, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.plugins[name]
	return p, ok
}

// Tools are the tools of every plugin that may be used now, for the
// agent's runs (agent.Options.MoreTools): a plugin whose manifest changed
// offers none.
func (m *Manager) Tools() []*agent.Tool {
	var out []*agent.Tool
	for _, name := range m.Names() {
		p, ok := m.get(name)
		if !ok || p.held() != nil {
			continue
		}
		out = append(out, p.tools...)
	}
	return out
}

// ToolCount is the number of tools the loaded plugins offer.
func (m *Manager) ToolCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, p := range m.plugins {
		n += len(p.tools)
	}
	return n
}

// VerifyAll asks every chat-tools plugin's server for its manifest
// again (Verify) and returns what changed.
func (m *Manager) VerifyAll(ctx context.Context) []Verified {
	var out []Verified
	for _, name := range m.Names() {
		if p, ok := m.get(name); !ok || p.pin.Kind != KindHTTP {
			continue
		}
		out = append(out, Verify(ctx, m.opts.Client, m.root, name, m.opts.Now()))
	}
	return out
}

// plugin is one loaded plugin.
type plugin struct {
	m      *Manager
	pin    *Pin
	dir    string // HOME/plugins/<name>
	omi    *OmiManifest
	local  *Manifest
	token  string
	appKey string
	// read tools run without approval: named by the owner, and for a
	// local plugin also declared read_only and confined (or trusted).
	read  map[string]bool
	tools []*agent.Tool
}

// loadPlugin reads an added plugin and checks it is the confirmed one.
func loadPlugin(dir string, pin *Pin, landlock bool) (*plugin, error) {
	p := &plugin{pin: pin, dir: dir, read: map[string]bool{}}
	switch pin.Kind {
	case KindHTTP:
		raw, err := os.ReadFile(filepath.Join(dir, ManifestCopy))
		if err != nil {
			return nil, err
		}
		if hashBytes(raw) != pin.SHA256 {
			return nil, fmt.Errorf("%w: %s was changed on disk", ErrChanged, ManifestCopy)
		}
		base, err := url.Parse(pin.Source)
		if err != nil {
			return nil, err
		}
		if p.omi, err = ParseOmiManifest(raw, base, pin.Insecure); err != nil {
			return nil, err
		}
		if p.token, err = readSecret(filepath.Join(dir, TokenFile)); err != nil {
			return nil, err
		}
		if p.omi.ChatMessages.Enabled {
			if p.appKey, err = readSecret(filepath.Join(dir, AppKeyFile)); err != nil {
				return nil, err
			}
		}
		for _, t := range p.omi.Tools {
			p.read[t.Name] = pin.reads(t.Name)
		}
	case KindLocal:
		man, err := readLocal(pin)
		if err != nil {
			return nil, err
		}
		p.local = man
		for _, t := range man.Tools {
			p.read[t.Name] = pin.reads(t.Name) && t.ReadOnly && (landlock || pin.Trust)
		}
	}
	return p, nil
}

// confirmed is the plugin as the owner confirmed it, from the copy of
// its manifest kept when it was added (to show what an update changes).
func confirmed(dir string, pin *Pin) (*plugin, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestCopy))
	if err != nil {
		return nil, err
	}
	p := &plugin{pin: pin, dir: dir, read: map[string]bool{}}
	if pin.Kind == KindLocal {
		p.local, err = ParseManifest(raw, pin.Source)
		return p, err
	}
	base, err := url.Parse(pin.Source)
	if err != nil {
		return nil, err
	}
	p.omi, err = ParseOmiManifest(raw, base, pin.Insecure)
	return p, err
}

// readLocal reads a local plugin's manifest from its folder, refusing
// one that is not the confirmed one.
func readLocal(pin *Pin) (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(pin.Source, ManifestName))
	if err != nil {
		return nil, err
	}
	if hashBytes(raw) != pin.SHA256 {
		return nil, fmt.Errorf("%w: %s in %s is not the one you added; review it, then: omnibrain plugin update %s", ErrChanged, ManifestName, pin.Source, pin.Name)
	}
	return ParseManifest(raw, pin.Source)
}

// held says why the plugin's tools must not be used now: a chat-tools
// server that serves a manifest the owner has not confirmed, a local
// plugin whose manifest changed on disk. Nil: usable.
func (p *plugin) held() error {
	switch p.pin.Kind {
	case KindHTTP:
		if _, err := os.Stat(filepath.Join(p.dir, ChangedFile)); err == nil {
			return fmt.Errorf("plugin %s: %w: %s", p.pin.Name, ErrChanged, changedDetail(p.pin.Name))
		}
	case KindLocal:
		if _, err := readLocal(p.pin); err != nil {
			return fmt.Errorf("plugin %s: %w", p.pin.Name, err)
		}
	}
	return nil
}

func (p *plugin) listed() Listed {
	l := Listed{Name: p.pin.Name, Source: p.pin.Source, Kind: p.pin.Kind, State: StateOK, Tools: []ListedTool{}}
	if err := p.held(); err != nil {
		l.State, l.Detail = StateChanged, err.Error()
	}
	for _, n := range p.toolNames() {
		eff := EffectOutgoing
		if p.read[n] {
			eff = EffectRead
		}
		l.Tools = append(l.Tools, ListedTool{Name: n, Effect: eff})
	}
	l.ChatMessages = p.omi != nil && p.omi.ChatMessages.Enabled
	return l
}

func (p *plugin) toolNames() []string {
	var out []string
	if p.omi != nil {
		for _, t := range p.omi.Tools {
			out = append(out, t.Name)
		}
	}
	if p.local != nil {
		for _, t := range p.local.Tools {
			out = append(out, t.Name)
		}
	}
	return out
}

func (p *plugin) hasTool(name string) bool { return slices.Contains(p.toolNames(), name) }

func (p *plugin) omiTool(name string) (*OmiTool, bool) {
	if p.omi == nil {
		return nil, false
	}
	for i := range p.omi.Tools {
		if p.omi.Tools[i].Name == name {
			return &p.omi.Tools[i], true
		}
	}
	return nil, false
}

func (p *plugin) localTool(name string) (*ToolDecl, bool) {
	if p.local == nil {
		return nil, false
	}
	for i := range p.local.Tools {
		if p.local.Tools[i].Name == name {
			return &p.local.Tools[i], true
		}
	}
	return nil, false
}

// sameTool reports whether c declares tool name exactly as p does.
func (p *plugin) sameTool(c *Candidate, name string) bool {
	if a, ok := p.omiTool(name); ok && c.omi != nil {
		for _, b := range c.omi.Tools {
			if b.Name == name {
				return a.Description == b.Description && a.Method == b.Method && a.url.String() == b.url.String() &&
					string(a.schema) == string(b.schema) && a.Auth() == b.Auth() && a.StatusMessage == b.StatusMessage
			}
		}
	}
	if a, ok := p.localTool(name); ok && c.local != nil {
		for _, b := range c.local.Tools {
			if b.Name == name {
				return a.Description == b.Description && a.ReadOnly == b.ReadOnly && string(a.schema) == string(b.schema) &&
					p.local.SHA256 == c.local.SHA256 && slices.Equal(p.local.Args, c.local.Args)
			}
		}
	}
	return false
}
