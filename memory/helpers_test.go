package memory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// notes records what memory tells the owner.
type notes struct {
	mu   sync.Mutex
	msgs []notify.Message
}

func (n *notes) Notify(_ context.Context, m notify.Message) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, m)
	return nil
}

func (n *notes) all() []notify.Message {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]notify.Message(nil), n.msgs...)
}

type env struct {
	t      testing.TB
	st     *store.Store
	home   string
	clock  *testutil.Clock
	notes  *notes
	health *health.Registry
	m      *Memory
}

type envOpts struct {
	home  string
	st    *store.Store
	model Model
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	e := &env{t: t, home: o.home, st: o.st, clock: testutil.NewClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)), notes: &notes{}}
	if e.home == "" {
		e.home = t.TempDir()
	}
	if e.st == nil {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		e.st = st
	}
	e.health = health.NewRegistry(e.clock.Now)
	e.m = e.open(o.model)
	return e
}

func (e *env) open(model Model) *Memory {
	e.t.Helper()
	m, err := Open(context.Background(), Options{DB: e.st.DB(), Home: e.home, Model: model, Notifier: e.notes, Health: e.health, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) add(text string) *AddResult {
	e.t.Helper()
	res, err := e.m.Add(context.Background(), AddRequest{Text: text, Source: SourceOwner})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// texts are the active facts' texts.
func (e *env) texts() []string {
	e.t.Helper()
	fs, err := e.m.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Text)
	}
	return out
}

func (e *env) file() string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, MemoryFile))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// edit replaces old with new in MEMORY.md (old must be there) and reads it back.
func (e *env) edit(old, new string) {
	e.t.Helper()
	f := e.file()
	if !strings.Contains(f, old) {
		e.t.Fatalf("MEMORY.md lacks %q:\n%s", old, f)
	}
	e.write(strings.Replace(f, old, new, 1))
}

func (e *env) write(content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.home, MemoryFile), []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := e.m.SyncFiles(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) prompt(q string) string {
	return e.m.PromptMemory(context.Background(), q)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
