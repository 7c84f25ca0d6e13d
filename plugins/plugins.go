package plugins

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/approval"
)

// Reporter is told when a plugin is refused or fails, so it shows in status.
type Reporter interface {
	Degrade(name string, err error)
	Success(name string)
}

// Manager holds the loaded plugins.
type Manager struct {
	plugins map[string]*Manifest
	log     *slog.Logger
	report  Reporter
}

// Options configure Load.
type Options struct {
	Log    *slog.Logger
	Report Reporter // may be nil
}

// HealthName is the health component plugins report under.
const HealthName = "plugins"

// Load reads every HOME/plugins/<name>/plugin.yaml under dir. A missing dir
// means no plugins. A bad manifest is left out and its error returned
// beside the others, which still load.
func Load(dir string, opts Options) (*Manager, []error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{plugins: map[string]*Manifest{}, log: opts.Log, report: opts.Report}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, []error{fmt.Errorf("plugins: %w", err)}
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pdir := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(filepath.Join(pdir, ManifestName))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", e.Name(), err))
			continue
		}
		man, err := ParseManifest(data, pdir)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", e.Name(), err))
			continue
		}
		if man.Name != e.Name() {
			errs = append(errs, fmt.Errorf("plugin %s: manifest name %q must match its directory", e.Name(), man.Name))
			continue
		}
		m.plugins[man.Name] = man
	}
	return m, errs
}

// Names lists the loaded plugins, sorted.
func (m *Manager) Names() []string {
	var out []string
	for n := range m.plugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrChecksum is returned when a plugin's executable (or a verified file)
// is not the one its manifest names: it is refused, not run.
var ErrChecksum = errors.New("checksum mismatch")

// verify hashes the command and the Verify files.
func (man *Manifest) verify() error {
	files := map[string]string{man.commandPath(): man.SHA256}
	for rel, sum := range man.Verify {
		p, err := man.within(rel)
		if err != nil {
			return err
		}
		files[p] = strings.ToLower(sum)
	}
	for path, want := range files {
		got, err := fileSHA256(path)
		if err != nil {
			return fmt.Errorf("plugin %s: %w", man.Name, err)
		}
		if got != want {
			return fmt.Errorf("plugin %s: %w: %s has sha256 %s, the manifest says %s; it was changed — check it and update the manifest", man.Name, ErrChecksum, path, got, want)
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

// request is what a plugin reads on stdin.
type request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// IdempotencyKey is set for approved actions: the same key means the
	// same approved action, so a plugin can tell a retry from a new one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Op is "run" (default) or "find": has the action with this key
	// already been done? (answer {"found": true, "remote_id": "..."})
	Op string `json:"op,omitempty"`
}

// response is what a plugin writes on stdout.
type response struct {
	Output   string `json:"output"`
	Error    string `json:"error,omitempty"`
	Found    bool   `json:"found,omitempty"`
	RemoteID string `json:"remote_id,omitempty"`
}

// maxOutput bounds what is read from a plugin.
const maxOutput = 1 << 20

// run verifies the checksums, starts the command with req on stdin and
// reads one JSON response. The environment is minimal: the daemon's
// secrets are not passed on.
func (m *Manager) run(ctx context.Context, man *Manifest, tool *ToolDecl, req request) (*response, error) {
	if err := man.verify(); err != nil {
		m.log.Error("plugin refused", "plugin", man.Name, "err", err)
		if m.report != nil {
			m.report.Degrade(HealthName, err)
		}
		return nil, err
	}
	timeout := time.Duration(man.Timeout)
	if tool != nil && tool.Timeout > 0 {
		timeout = time.Duration(tool.Timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, man.commandPath(), man.Args...)
	cmd.Dir = man.dir
	cmd.Env = pluginEnv(man.Name)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxOutput, 8<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Kill the whole process group, so a plugin's children die with it,
	// and do not wait forever for pipes a stray child holds open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("plugin %s: no answer within %s", man.Name, timeout)
	case err != nil:
		return nil, fmt.Errorf("plugin %s: %w: %s", man.Name, err, strings.TrimSpace(stderr.String()))
	case stdout.over:
		return nil, fmt.Errorf("plugin %s: output larger than %d bytes", man.Name, maxOutput)
	}
	var resp response
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &resp); err != nil {
		return nil, fmt.Errorf("plugin %s: output is not the expected JSON {\"output\": …}: %v", man.Name, err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("plugin %s: %s", man.Name, resp.Error)
	}
	if m.report != nil {
		m.report.Success(HealthName)
	}
	return &resp, nil
}

func pluginEnv(name string) []string {
	env := []string{"OMNIBRAIN_PLUGIN=" + name}
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// limitedBuffer keeps at most max bytes and remembers it overflowed.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// ToolName is the agent's name for a plugin tool.
func ToolName(plugin, tool string) string { return plugin + "_" + tool }

// Tools returns the plugins' tools for the agent's registry: read-only
// tools run and their output reaches the model marked as untrusted data;
// every other tool only proposes a plugin_action.
func (m *Manager) Tools() ([]*agent.Tool, error) {
	var out []*agent.Tool
	for _, name := range m.Names() {
		man := m.plugins[name]
		for i := range man.Tools {
			decl := &man.Tools[i]
			full := ToolName(man.Name, decl.Name)
			desc := fmt.Sprintf("[plugin %s] %s", man.Name, decl.Description)
			timeout := time.Duration(man.Timeout)
			if decl.Timeout > 0 {
				timeout = time.Duration(decl.Timeout)
			}
			var t *agent.Tool
			var err error
			if decl.ReadOnly {
				t, err = agent.NewRawTool(full, desc, agent.Read, timeout+time.Second, decl.schema,
					func(ctx context.Context, args json.RawMessage) (agent.Result, error) {
						resp, err := m.run(ctx, man, decl, request{Tool: decl.Name, Arguments: args})
						if err != nil {
							return agent.Result{}, err
						}
						return agent.Result{Data: []agent.Data{{Source: "plugin " + man.Name, Content: resp.Output}}}, nil
					}, nil)
			} else {
				t, err = agent.NewRawTool(full, desc+" Runs only after the owner approves the proposal this creates.", agent.Outgoing, 0, decl.schema, nil,
					func(_ context.Context, args json.RawMessage) (approval.Draft, error) {
						return approval.Draft{
							Kind:    approval.KindPluginAction,
							Title:   fmt.Sprintf("Run %s %s", man.Name, decl.Name),
							Payload: &approval.PluginActionPayload{Plugin: man.Name, Tool: decl.Name, Arguments: args},
						}, nil
					})
			}
			if err != nil {
				return nil, fmt.Errorf("plugin %s: %w", man.Name, err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// Executor runs approved plugin_action proposals; the executor registry
// maps approval.KindPluginAction to it.
func (m *Manager) Executor() Executor { return executor{m} }

// Executor is an approval.Executor that names the kinds it carries out.
type Executor interface {
	approval.Executor
	Kinds() []approval.Kind
}

type executor struct{ m *Manager }

func (executor) Kinds() []approval.Kind { return []approval.Kind{approval.KindPluginAction} }

func (e executor) lookup(p *approval.Proposal) (*Manifest, *ToolDecl, *approval.PluginActionPayload, error) {
	if p.Kind != approval.KindPluginAction {
		return nil, nil, nil, fmt.Errorf("plugins: cannot execute a %s proposal", p.Kind)
	}
	var pl approval.PluginActionPayload
	if err := json.Unmarshal(p.Payload, &pl); err != nil {
		return nil, nil, nil, fmt.Errorf("plugins: payload: %w", err)
	}
	man, ok := e.m.plugins[pl.Plugin]
	if !ok {
		return nil, nil, nil, fmt.Errorf("plugins: no plugin %q is installed", pl.Plugin)
	}
	for i := range man.Tools {
		if d := &man.Tools[i]; d.Name == pl.Tool {
			if d.ReadOnly {
				return nil, nil, nil, fmt.Errorf("plugins: %s %s is read-only and never a proposal", pl.Plugin, pl.Tool)
			}
			return man, d, &pl, nil
		}
	}
	return nil, nil, nil, fmt.Errorf("plugins: plugin %s has no tool %q", pl.Plugin, pl.Tool)
}

// Execute runs the approved action once, passing the idempotency key.
func (e executor) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	man, decl, pl, err := e.lookup(p)
	if err != nil {
		return "", err
	}
	resp, err := e.m.run(ctx, man, decl, request{Tool: pl.Tool, Arguments: pl.Arguments, IdempotencyKey: key, Op: "run"})
	if err != nil {
		return "", err
	}
	if resp.RemoteID != "" {
		return resp.RemoteID, nil
	}
	return key, nil
}

// Find asks the plugin whether an action with key already ran, if its
// manifest says it can answer (find: true).
func (e executor) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	man, decl, pl, err := e.lookup(p)
	if err != nil {
		return "", false, err
	}
	if !man.Find {
		return "", false, fmt.Errorf("plugin %s does not answer lookups (find: true in its manifest): %w", man.Name, approval.ErrNoLookup)
	}
	resp, err := e.m.run(ctx, man, decl, request{Tool: pl.Tool, Arguments: pl.Arguments, IdempotencyKey: key, Op: "find"})
	if err != nil {
		return "", false, err
	}
	return resp.RemoteID, resp.Found, nil
}
