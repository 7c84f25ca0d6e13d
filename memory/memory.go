package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// HealthName is the component memory reports as.
const HealthName = "memory"

// SuggestionKeyPrefix starts the notification key of a suggestion
// ("memory:suggestion:12"): the bot shows such a message with ✅ Keep and
// ❌ Drop buttons.
const SuggestionKeyPrefix = "memory:suggestion:"

// Model is the model call extraction makes; *router.Router provides it.
type Model interface {
	Chat(ctx context.Context, req router.Request) (*router.Response, error)
}

// Notifier queues a message for the owner; *notify.Queue provides it.
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// Health is where memory reports problems; *health.Registry provides it.
type Health interface {
	Set(name string, s health.State, detail string)
	Degrade(name string, err error)
}

// Options configure a Memory. DB and Home are required.
type Options struct {
	DB       *sql.DB // the store's handle: the tables of migration 0014
	Home     string  // MEMORY.md, SOUL.md and memory-backups/ live here
	Model    Model   // nil: no extraction; "remember" stores the clause as said
	Notifier Notifier
	Health   Health
	Log      *slog.Logger
	Now      func() time.Time
	// RecentContextTTL is how long a recent_context fact lives (14 days).
	RecentContextTTL time.Duration
	// PromptTokens bounds what memory adds to a prompt (default 260).
	PromptTokens int
	// ExtractEvery is how many owner messages make an extraction pass (5).
	ExtractEvery int
	// Embedder embeds facts and questions to rank facts by similarity
	// (nil: the built-in embedder, offline).
	Embedder embedder.Embedder
}

// Memory is the owner's facts and SOUL.md. It is safe for concurrent use.
type Memory struct {
	o    Options
	repo repo
	log  *slog.Logger

	mu       sync.Mutex // serialises every change, to the database and the files
	written  [32]byte   // hash of MEMORY.md as last written or applied
	soul     string     // SOUL.md as last read well
	soulHash [32]byte
	problems map[string]string // file -> what is wrong with it now
	index    *factIndex        // the active facts' vectors, changed with them

	extract chan struct{} // an extraction pass is due
}

// Open opens memory over the store's database and the home's files:
// MEMORY.md and SOUL.md are created when missing, and edits made to them
// while the daemon was not running are applied.
func Open(ctx context.Context, o Options) (*Memory, error) {
	if o.DB == nil || o.Home == "" {
		return nil, errors.New("memory: a database and a home directory are required")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RecentContextTTL <= 0 {
		o.RecentContextTTL = 14 * 24 * time.Hour
	}
	if o.PromptTokens <= 0 {
		o.PromptTokens = 260
	}
	if o.ExtractEvery <= 0 {
		o.ExtractEvery = 5
	}
	index, err := newFactIndex(o.Embedder)
	if err != nil {
		return nil, err
	}
	m := &Memory{o: o, repo: repo{o.DB}, log: o.Log, problems: map[string]string{}, extract: make(chan struct{}, 1), index: index}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.expireLocked(ctx); err != nil {
		return nil, err
	}
	if err := m.syncFileLocked(ctx); err != nil {
		return nil, err
	}
	facts, err := m.repo.facts(ctx, Active)
	if err != nil {
		return nil, err
	}
	m.syncIndexLocked(ctx, facts)
	m.loadSoulLocked()
	m.reportLocked()
	return m, nil
}

// syncIndexLocked makes the fact index hold the active facts. A fact it
// cannot embed is still found by word overlap, so a failure is logged.
func (m *Memory) syncIndexLocked(ctx context.Context, active []*Fact) {
	if err := m.index.sync(ctx, active); err != nil {
		m.log.Warn("memory: fact index", "err", err)
	}
}

func (m *Memory) path(name string) string { return filepath.Join(m.o.Home, name) }

// AddRequest is a fact to store.
type AddRequest struct {
	Text       string
	Category   Category // "": by the rules (Categorize)
	Source     string   // SourceChat, SourceOwner, SourceFile
	SourceRef  string
	SourceText string
	Pinned     bool
	// Replaces is a fact the new one supersedes by the caller's word (a
	// model's extraction); 0: the matching rules decide.
	Replaces int64
}

// AddResult is what Add did.
type AddResult struct {
	Fact       *Fact   // the fact as stored (an older one when Merged)
	Merged     bool    // an active fact already said this; it was kept (and refined)
	Superseded []*Fact // older facts about the same thing, now replaced
}

// Add stores a fact the owner stated: a near-duplicate merges with the
// fact it repeats, and a newer fact about the same thing supersedes the
// older one. MEMORY.md is rewritten.
func (m *Memory) Add(ctx context.Context, req AddRequest) (*AddResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.expireLocked(ctx); err != nil {
		return nil, err
	}
	res, err := m.addLocked(ctx, req, Active)
	if err != nil {
		return nil, err
	}
	return res, m.writeFileLocked(ctx)
}

func (m *Memory) addLocked(ctx context.Context, req AddRequest, state State) (*AddResult, error) {
	text, err := cleanText(req.Text)
	if err != nil {
		return nil, err
	}
	if req.Category == "" {
		req.Category = Categorize(text)
	} else if _, err := ParseCategory(string(req.Category)); err != nil {
		return nil, err
	}
	if req.Source == "" {
		req.Source = SourceOwner
	}
	now := m.o.Now()
	active, err := m.repo.facts(ctx, Active)
	if err != nil {
		return nil, err
	}
	nt := analyse(text)
	res := &AddResult{}
	// A near-duplicate: the best match by word overlap.
	var dup *Fact
	var dupRel relation
	best := 0.0
	var replaced []*Fact
	for _, f := range active {
		if req.Replaces == f.ID {
			replaced = append(replaced, f)
			continue
		}
		switch r := relate(analyse(f.Text), nt); r {
		case duplicate, refines:
			if j := jaccard(analyse(f.Text).all, nt.all); dup == nil || j > best {
				dup, dupRel, best = f, r, j
			}
		case supersedes:
			if req.Replaces == 0 {
				replaced = append(replaced, f)
			}
		}
	}
	if req.Replaces != 0 && len(replaced) == 0 {
		m.log.Info("memory: a fact to replace is not active; adding the new one alone", "replaces", Ref(req.Replaces))
	}
	if dup != nil && state == Active {
		if dupRel == refines {
			dup.Text = text
		}
		if req.Pinned {
			dup.Pinned = true
		}
		dup.Updated = now
		dup.Note = "repeated (" + req.Source + ")"
		if err := updateFact(ctx, m.o.DB, dup); err != nil {
			return nil, err
		}
		res.Fact, res.Merged = dup, true
		return res, nil
	}
	f := &Fact{Text: text, Category: req.Category, State: state, Source: req.Source, SourceRef: req.SourceRef,
		SourceText: clip(req.SourceText, 600), Pinned: req.Pinned, Created: now, Updated: now}
	if f.Category == RecentContext {
		f.Expires = now.Add(m.o.RecentContextTTL)
	}
	if state != Active {
		replaced = nil // a suggestion replaces nothing until it is kept
	}
	err = store.InTx(ctx, m.o.DB, func(tx *sql.Tx) error {
		if err := insertFact(ctx, tx, f); err != nil {
			return err
		}
		for _, old := range replaced {
			old.State, old.SupersededBy, old.Updated = Superseded, f.ID, now
			old.Note = "superseded by " + f.Ref()
			if err := updateFact(ctx, tx, old); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Fact, res.Superseded = f, replaced
	return res, nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Forget removes a fact (or a pending suggestion): it leaves every list,
// prompt and MEMORY.md, and its text is erased; `why` still tells that
// it was forgotten.
func (m *Memory) Forget(ctx context.Context, id int64, why string) (*Fact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.forgetLocked(ctx, m.o.DB, id, why)
	if err != nil {
		return nil, err
	}
	return f, m.writeFileLocked(ctx)
}

// forgetLocked returns the fact as it was before it was forgotten.
func (m *Memory) forgetLocked(ctx context.Context, x execer, id int64, why string) (*Fact, error) {
	f, err := m.repo.fact(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.State != Active && f.State != Pending {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotFound, f.Ref(), f.State)
	}
	was := *f
	f.State, f.Text, f.SourceText, f.Updated = Forgotten, "", "", m.o.Now()
	if was.State == Pending {
		f.State = Dropped
	}
	f.Note = why
	if err := updateFact(ctx, x, f); err != nil {
		return nil, err
	}
	return &was, nil
}

// List returns the facts in the given states (default: active), oldest
// first.
func (m *Memory) List(ctx context.Context, states ...State) ([]*Fact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.expireLocked(ctx); err != nil {
		return nil, err
	}
	if len(states) == 0 {
		states = []State{Active}
	}
	return m.repo.facts(ctx, states...)
}

// Get returns one fact in whatever state.
func (m *Memory) Get(ctx context.Context, id int64) (*Fact, error) { return m.repo.fact(ctx, id) }

// Explanation is `memory why`: a fact, where it came from, and what it
// replaced or what replaced it.
type Explanation struct {
	Fact         *Fact
	Replaced     []*Fact // older facts this one superseded
	SupersededBy []*Fact // the chain of newer facts, oldest first
}

// Why explains a fact.
func (m *Memory) Why(ctx context.Context, id int64) (*Explanation, error) {
	f, err := m.repo.fact(ctx, id)
	if err != nil {
		return nil, err
	}
	ex := &Explanation{Fact: f}
	all, err := m.repo.facts(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*Fact{}
	for _, x := range all {
		byID[x.ID] = x
		if x.SupersededBy == id {
			ex.Replaced = append(ex.Replaced, x)
		}
	}
	for next := f.SupersededBy; next != 0 && len(ex.SupersededBy) < 50; {
		n, ok := byID[next]
		if !ok {
			break
		}
		ex.SupersededBy = append(ex.SupersededBy, n)
		next = n.SupersededBy
	}
	return ex, nil
}

// Suggest records a fact a model drew from outside text (a mail, an
// event, a GitHub item, a plugin's answer). It waits, in no prompt, until
// the owner keeps it; the owner is told with its source. A suggestion
// that repeats a known fact or a waiting suggestion is not made again.
func (m *Memory) Suggest(ctx context.Context, text string, cat Category, itemRef, itemTitle string) (*Fact, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean, err := cleanText(text)
	if err != nil {
		return nil, false, err
	}
	known, err := m.repo.facts(ctx, Active, Pending)
	if err != nil {
		return nil, false, err
	}
	nt := analyse(clean)
	for _, f := range known {
		if r := relate(analyse(f.Text), nt); r == duplicate {
			return f, false, nil
		}
	}
	res, err := m.addLocked(ctx, AddRequest{Text: clean, Category: cat, Source: SourceItem, SourceRef: itemRef, SourceText: itemTitle}, Pending)
	if err != nil {
		return nil, false, err
	}
	f := res.Fact
	if m.o.Notifier != nil {
		from := itemRef
		if itemTitle != "" {
			from = fmt.Sprintf("%s (%s)", itemTitle, itemRef)
		}
		msg := fmt.Sprintf("💡 Remember this about you? %s\nSuggested from %s. It is used nowhere until you keep it. [%s]", f.Text, from, f.Ref())
		if err := m.o.Notifier.Notify(ctx, notify.Message{Level: notify.Important, Key: SuggestionKeyPrefix + fmt.Sprint(f.ID), Text: msg}); err != nil {
			m.log.Warn("memory: could not tell the owner about a suggestion", "fact", f.Ref(), "err", err)
		}
	}
	return f, true, nil
}

// Keep makes a pending suggestion a fact (the owner pressed ✅ Keep).
func (m *Memory) Keep(ctx context.Context, id int64) (*AddResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.repo.fact(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.State != Pending {
		return nil, fmt.Errorf("%w: %s is not a waiting suggestion (it is %s)", ErrDecided, f.Ref(), f.State)
	}
	// Kept, it is a fact like any other: it may repeat or replace one.
	active, err := m.repo.facts(ctx, Active)
	if err != nil {
		return nil, err
	}
	res := &AddResult{Fact: f}
	nt := analyse(f.Text)
	now := m.o.Now()
	err = store.InTx(ctx, m.o.DB, func(tx *sql.Tx) error {
		for _, old := range active {
			if relate(analyse(old.Text), nt) != supersedes {
				continue
			}
			old.State, old.SupersededBy, old.Updated, old.Note = Superseded, f.ID, now, "superseded by "+f.Ref()
			if err := updateFact(ctx, tx, old); err != nil {
				return err
			}
			res.Superseded = append(res.Superseded, old)
		}
		f.State, f.Updated, f.Note = Active, now, "kept by the owner"
		if f.Category == RecentContext {
			f.Expires = now.Add(m.o.RecentContextTTL)
		}
		return updateFact(ctx, tx, f)
	})
	if err != nil {
		return nil, err
	}
	return res, m.writeFileLocked(ctx)
}

// ErrDecided is returned for a suggestion the owner already answered.
var ErrDecided = errors.New("memory: already decided")

// Drop discards a pending suggestion (the owner pressed ❌ Drop).
func (m *Memory) Drop(ctx context.Context, id int64) (*Fact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.repo.fact(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.State != Pending {
		return nil, fmt.Errorf("%w: %s is not a waiting suggestion (it is %s)", ErrDecided, f.Ref(), f.State)
	}
	return m.forgetLocked(ctx, m.o.DB, id, "dropped by the owner")
}

// expireLocked retires recent context past its time.
func (m *Memory) expireLocked(ctx context.Context) error {
	now := m.o.Now()
	res, err := m.o.DB.ExecContext(ctx, `UPDATE memory_facts SET state = ?, updated = ?, note = 'expired' WHERE state = ? AND expires != 0 AND expires <= ?`,
		string(Expired), store.Millis(now), string(Active), store.Millis(now))
	if err != nil {
		return fmt.Errorf("memory: expire: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		m.log.Info("memory: recent context expired", "facts", n)
		return m.writeFileLocked(ctx)
	}
	return nil
}

// Expire retires recent context past its time (the daemon calls it
// hourly; every read does too).
func (m *Memory) Expire(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expireLocked(ctx)
}

// Problems are what is wrong with MEMORY.md or SOUL.md now, by file; an
// edit that could not be applied stays here until a good one is saved.
func (m *Memory) Problems() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.problems {
		out[k] = v
	}
	return out
}

// problemLocked records (or with "" clears) what is wrong with file and
// tells the owner once per distinct problem.
func (m *Memory) problemLocked(ctx context.Context, file, msg string) {
	if m.problems[file] == msg {
		return
	}
	if msg == "" {
		delete(m.problems, file)
		m.reportLocked()
		return
	}
	m.problems[file] = msg
	m.log.Warn("memory: an edit was not applied", "file", file, "problem", msg)
	m.reportLocked()
	if m.o.Notifier != nil {
		sum := sha256.Sum256([]byte(file + msg + m.o.Now().String()))
		err := m.o.Notifier.Notify(ctx, notify.Message{Level: notify.Important, Key: fmt.Sprintf("memory:problem:%x", sum[:8]), Text: "⚠️ " + msg})
		if err != nil {
			m.log.Warn("memory: could not tell the owner about a problem", "err", err)
		}
	}
}

func (m *Memory) reportLocked() {
	if m.o.Health == nil {
		return
	}
	if len(m.problems) == 0 {
		m.o.Health.Set(HealthName, health.OK, "MEMORY.md and SOUL.md in step")
		return
	}
	var msgs []string
	for _, f := range []string{MemoryFile, SoulFile} {
		if p := m.problems[f]; p != "" {
			msgs = append(msgs, p)
		}
	}
	m.o.Health.Degrade(HealthName, errors.New(strings.Join(msgs, "; ")))
}

// sortFacts orders facts by category (MEMORY.md's order), then id.
func sortFacts(fs []*Fact) {
	rank := map[Category]int{}
	for i, c := range Categories {
		rank[c] = i
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if rank[fs[i].Category] != rank[fs[j].Category] {
			return rank[fs[i].Category] < rank[fs[j].Category]
		}
		return fs[i].ID < fs[j].ID
	})
}

func fileHash(path string) ([32]byte, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}, nil, err
	}
	return sha256.Sum256(data), data, nil
}
