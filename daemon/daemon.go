// Package daemon wires omnibrain together: it builds every component from
// the configuration by their constructors, serves the local API and runs
// the long-lived loops under one supervision tree.
package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/logging"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/memory"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

// Version is set by main from the build.
var Version = "dev"

// App is one omnibrain instance over a home directory. Open builds it; the
// CLI uses it in-process when no daemon runs, and Run makes it the daemon.
type App struct {
	cfg     *config.Config
	log     *slog.Logger
	store   *store.Store
	health  *health.Registry
	api     *api.Server
	started time.Time
	daemon  bool

	// components are the long-lived loops Run supervises.
	components []supervise.Component
	closers    []func() error

	collectorReg *collectorRegistry // see collectors(); daemon/collectors.go
	approval     approvalParts      // gate, notify queue, executors; daemon/approval.go
	llm          *router.Router     // the model router; daemon/router.go
	proactive    proactiveParts     // triage, scheduler, briefings; daemon/proactive.go
	agent        agentParts         // agent and chat; daemon/agent.go
	memory       *memory.Memory     // facts about the owner, MEMORY.md, SOUL.md; daemon/memory.go
	vectors      *search.Vectors    // the vector index and its indexer; daemon/search.go
}

// Options are what Open needs beyond the configuration.
type Options struct {
	Log *slog.Logger
	Now func() time.Time
	// LLMTransport, if set, carries the requests to hosted model
	// providers: tests reach a hosted provider name at a loopback fake.
	LLMTransport http.RoundTripper
}

// Open builds the app: the store and every service the API serves.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*App, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := config.EnsureHome(cfg.Home); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.Path(store.FileName), store.Options{Log: opts.Log.With("component", "store"), Now: opts.Now})
	if err != nil {
		return nil, err
	}
	a := &App{
		cfg:     cfg,
		log:     opts.Log,
		store:   st,
		health:  health.NewRegistry(opts.Now),
		started: opts.Now(),
	}
	a.health.Redact(logging.Scrubber(cfg.Secrets()))
	a.closers = append(a.closers, st.Close)
	a.health.Success("store")

	if err := a.openApproval(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := a.openGoogle(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := a.openGitHub(ctx); err != nil {
		st.Close()
		return nil, err
	}
	a.openRouter(ctx, opts.Now, opts.LLMTransport)

	backends := api.Backends{Status: a.status}
	backends.Collect = a.collectors()
	backends.Usage = usageReport{st: st, cfg: cfg, now: opts.Now}
	if err := a.openSearch(ctx, &backends); err != nil {
		st.Close()
		return nil, err
	}
	if err := a.openImporter(ctx, &backends); err != nil {
		st.Close()
		return nil, err
	}
	if err := a.openMemory(ctx, &backends); err != nil {
		st.Close()
		return nil, err
	}
	if err := a.openAgent(ctx, &backends); err != nil {
		st.Close()
		return nil, err
	}
	backends.Proposals = a.proposals()
	backends.Notifications = waitingNotifications{q: a.approval.queue}
	if err := a.openProactive(ctx, &backends); err != nil {
		st.Close()
		return nil, err
	}
	if err := a.openTelegram(ctx, &backends); err != nil {
		st.Close()
		return nil, err
	}
	a.api = api.NewServer(opts.Log.With("component", "api"), "", backends)
	return a, nil
}

// Close releases everything Open acquired, last acquired first.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	return errors.Join(errs...)
}

// Store is the app's store.
func (a *App) Store() *store.Store { return a.store }

// Health is the app's health registry.
func (a *App) Health() *health.Registry { return a.health }

// Handler serves the API in-process (no Host from a socket, no token).
func (a *App) Handler() http.Handler { return a.api.SocketHandler() }

// Run runs the daemon until ctx is cancelled: it takes the home's lock,
// serves the API on the Unix socket (and loopback TCP if configured) and
// supervises every long-lived component.
func (a *App) Run(ctx context.Context) error {
	unlock, err := lockHome(a.cfg.Home)
	if err != nil {
		return err
	}
	defer unlock()
	a.daemon = true

	if a.cfg.API.Listen != "" {
		token, err := loadOrCreateToken(a.cfg.Path(api.TokenFileName))
		if err != nil {
			return err
		}
		a.api.SetToken(token)
	}

	tree := supervise.New(a.log.With("component", "supervisor"), a.health, supervise.Options{})
	socket := a.cfg.Path(api.SocketName)
	tree.Add(supervise.Component{Name: "api", Run: func(ctx context.Context) error {
		a.health.Success("api")
		return a.api.ServeUnix(ctx, socket)
	}})
	if a.cfg.API.Listen != "" {
		tree.Add(supervise.Component{Name: "api-tcp", Run: func(ctx context.Context) error {
			a.health.Success("api-tcp")
			return a.api.ServeTCP(ctx, a.cfg.API.Listen)
		}})
	}
	// The write-ahead log goes back into the database beside the writers
	// rather than in their commits (store.RunCheckpoints).
	tree.Add(supervise.Component{Name: "checkpoints", Run: a.store.RunCheckpoints})
	for _, c := range a.components {
		tree.Add(c)
	}
	a.log.Info("omnibrain started", "version", Version, "home", a.cfg.Home, "socket", socket, "timezone", a.cfg.TimezoneName())
	err = tree.Run(ctx)
	a.log.Info("omnibrain stopped")
	return err
}

func (a *App) status(ctx context.Context) (*api.Status, error) {
	counts, err := a.store.CountItems(ctx)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, c := range counts {
		total += c.Items
	}
	comps := a.health.Snapshot()
	st := &api.Status{
		Version:    Version,
		Home:       a.cfg.Home,
		Timezone:   a.cfg.TimezoneName(),
		Daemon:     a.daemon,
		Overall:    health.Overall(comps),
		Components: comps,
		Items:      counts,
		TotalItems: total,
		DiskBytes:  diskUsage(a.cfg.Home),
		Configured: map[string]bool{
			"telegram": a.cfg.Telegram.Token.IsSet(),
			"google":   a.cfg.Google.ClientID != "" || a.cfg.Google.Credentials != "",
			"github":   a.cfg.GitHub.Token.IsSet(),
			"llm":      a.llm.Available(), // a local Ollama found at start counts
		},
	}
	notes, err := a.approval.queue.Counts(ctx)
	if err != nil {
		return nil, err
	}
	st.NotificationsWaiting = notes[store.NotificationQueued] + notes[store.NotificationSending]
	if a.daemon {
		st.PID = os.Getpid()
		st.StartedAt = a.started
	}
	return st, nil
}

// diskUsage sums the sizes of the files in the home directory.
func diskUsage(home string) int64 {
	var n int64
	filepath.WalkDir(home, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// daemonUnresponsive is an error if a daemon holds the home's lock: this
// process reached the home directly because the daemon's socket did not
// answer, and it must not run an outbox beside the daemon's.
func daemonUnresponsive(home string) error {
	f, err := os.OpenFile(filepath.Join(home, "omnibrain.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("check the home's lock: %w", err)
	}
	defer f.Close() // closing releases a lock taken here
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return err
	}
	pid := lockHolder(home)
	restart := "stop it (omnibrain service stop, or end its process) and start it again (omnibrain service start, or omnibrain run)"
	if pid > 0 {
		restart = fmt.Sprintf("stop it (omnibrain service stop, or kill %d) and start it again (omnibrain service start, or omnibrain run)", pid)
	}
	return fmt.Errorf("%w: the omnibrain daemon holds %s but does not answer on its socket, so nothing was done here: %s", api.ErrConflict, home, restart)
}

// lockHolder is the pid the home's lock holder wrote (0 if unknown).
func lockHolder(home string) int {
	var pid int
	if b, err := os.ReadFile(filepath.Join(home, "omnibrain.lock")); err == nil {
		fmt.Sscan(string(b), &pid)
	}
	return pid
}

// lockHome takes an exclusive lock on the home so two daemons never share it.
func lockHome(home string) (func(), error) {
	path := filepath.Join(home, "omnibrain.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock home: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			// The holder wrote its pid: name it, so the owner knows what to stop.
			if pid := lockHolder(home); pid > 0 {
				return nil, fmt.Errorf("another omnibrain daemon (pid %d) is already running on %s; stop it first (omnibrain service stop, or kill %d)", pid, home, pid)
			}
			return nil, fmt.Errorf("another omnibrain daemon is already running on %s", home)
		}
		return nil, fmt.Errorf("lock home: %w", err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Compact compacts the home's database (store.Compact) while holding the
// home's lock: no daemon may run meanwhile, or start and find the
// database busy. A daemon already running is named, with how to stop it.
func Compact(ctx context.Context, home string) (store.Compaction, error) {
	unlock, err := lockHome(home)
	if err != nil {
		return store.Compaction{}, err
	}
	defer unlock()
	return store.Compact(ctx, filepath.Join(home, store.FileName))
}

// loadOrCreateToken reads the API token file, creating a random token (0600)
// on first use.
func loadOrCreateToken(path string) (string, error) {
	if s, err := config.ReadSecretFile(path); err == nil && s.IsSet() {
		return s.Reveal(), nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	rand.Read(b)
	token := hex.EncodeToString(b)
	if err := config.WriteSecretFile(path, []byte(token+"\n")); err != nil {
		return "", err
	}
	return strings.TrimSpace(token), nil
}
