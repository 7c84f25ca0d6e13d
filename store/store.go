// Package store owns omnibrain's database: one SQLite file (WAL, FTS5)
// with numbered, embedded migrations, the items every part reads, and
// write transactions. Packages that own a feature's tables run their
// queries over it (search: the full-text index and the vectors).
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3" // the sqlite3 driver; built with -tags sqlite_fts5

	"github.com/omnibrain/omnibrain/internal/wait"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// FileName is the database file inside the home directory.
const FileName = "omnibrain.db"

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// Store is the database handle. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex // guards stored
	stored []func()   // OnItemsStored's callbacks
	// committed is signalled after a transaction commits (RunCheckpoints).
	committed chan struct{}
	// afterTruncate, when set by a test, hears each attempt of
	// RunCheckpoints to empty the log.
	afterTruncate func(done bool)
}

// OnItemsStored registers fn to run after every transaction that stored,
// changed or deleted items has committed: the vector indexer wakes up at
// once instead of at its next poll, so that a collected or imported item
// is found by meaning within milliseconds. fn runs on the committing
// goroutine and must not block.
func (s *Store) OnItemsStored(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored = append(s.stored, fn)
}

// Options configure Open.
type Options struct {
	Log *slog.Logger
	Now func() time.Time // the clock; time.Now when nil
}

// busyTimeout is how long a connection waits for another's lock before it
// fails with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// Open opens (creating if needed) the database at path, checks that FTS5 is
// compiled in and applies pending migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	q := url.Values{}
	q.Set("_synchronous", "NORMAL") // with WAL: durable across process crashes
	q.Set("_busy_timeout", strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	q.Set("_txlock", "immediate")
	q.Set("_foreign_keys", "on")
	db, err := sql.Open(driverName, dsn(path, q))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, log: opts.Log, now: opts.Now, committed: make(chan struct{}, 1)}
	// Another process opening the same new database (a daemon starting
	// beside a CLI call) may hold the lock past the busy timeout, or make
	// SQLite refuse at once to avoid a deadlock while both switch it to
	// WAL: wait for it, never fail for it.
	err = waitUnlocked(ctx, opts.Log, func() error {
		if err := s.checkFTS5(ctx); err != nil {
			return err
		}
		if err := s.migrate(ctx); err != nil {
			return err
		}
		return s.mergeOnce(ctx)
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	// The database holds mail: keep it private even if the umask is loose.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			db.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	return s, nil
}

// dsn is the URI that opens path with the driver parameters q.
func dsn(path string, q url.Values) string {
	// In a URI file name "?" starts the parameters and "#" a fragment:
	// a home named "mail#2" must not open the database "mail".
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + q.Encode()
}

// lockedRetry is the pause between attempts to open a locked database.
const lockedRetry = 100 * time.Millisecond

// waitUnlocked runs fn until it does not fail for a lock another
// connection holds, or ctx ends; it says once that it waits.
func waitUnlocked(ctx context.Context, log *slog.Logger, fn func() error) error {
	warned := false
	for {
		err := fn()
		if !isLocked(err) {
			return err
		}
		if !warned {
			log.Warn("the database is locked by another omnibrain process; waiting for it", "err", err)
			warned = true
		}
		if werr := wait.Sleep(ctx, lockedRetry); werr != nil {
			return fmt.Errorf("store: waiting for the database lock: %w", err)
		}
	}
}

// isLocked reports whether err is SQLite's busy or locked.
func isLocked(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB is the database handle, for the repositories of packages that own
// tables of their own (the agent's runs; search's vectors and full-text
// queries) and for tests and benchmarks.
func (s *Store) DB() *sql.DB { return s.db }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) checkFTS5(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts5_probe USING fts5(x)")
	if err != nil {
		if strings.Contains(err.Error(), "no such module") {
			return errors.New("store: this binary's SQLite has no FTS5: build with -tags sqlite_fts5 (the Makefile does)")
		}
		return fmt.Errorf("store: open database: %w", err)
	}
	_, err = s.db.ExecContext(ctx, "DROP TABLE temp.fts5_probe")
	return err
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and _", e.Name())
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share number %d", other, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies every migration newer than PRAGMA user_version in one
// transaction: a crash leaves the old schema, never half of a new one.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	latest := current
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("store: migration %s: %w", m.name, err)
		}
		latest = m.version
	}
	if len(ms) > 0 && current > ms[len(ms)-1].version {
		return fmt.Errorf("store: database schema %d is newer than this binary knows (%d): upgrade omnibrain", current, ms[len(ms)-1].version)
	}
	if latest == current {
		return nil
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", latest)); err != nil {
		return fmt.Errorf("store: set schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	s.log.Info("schema migrated", "from", current, "to", latest)
	return nil
}

// SchemaVersion reports the applied schema version.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// IntegrityCheck runs PRAGMA integrity_check and returns its verdict ("ok").
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var res string
	err := s.db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res)
	return res, err
}

// Tx runs fn in one write transaction, committing when fn returns nil.
func (s *Store) Tx(ctx context.Context, fn func(*Tx) error) error {
	var t *Tx
	err := InTx(ctx, s.db, func(tx *sql.Tx) error {
		// The statements run without the caller's cancellation: with a
		// context that can end, the SQLite driver runs every statement
		// on a goroutine of its own and waits for it, about a sixth of
		// an import's CPU time (20k bench mails, import alone: 4.4-5.2
		// against 3.5-4.6 CPU-s). Cancelling still stops the
		// transaction: database/sql rolls it back when ctx ends, after
		// the statement running then, and the next one fails.
		t = &Tx{tx: tx, ctx: context.WithoutCancel(ctx), now: s.now()}
		return fn(t)
	})
	if err == nil {
		select {
		case s.committed <- struct{}{}:
		default:
		}
	}
	if err == nil && t.itemsStored {
		s.mu.Lock()
		hooks := s.stored
		s.mu.Unlock()
		for _, fn := range hooks {
			fn()
		}
	}
	return err
}

// Tx is one write transaction. Its methods share the context and clock
// reading of the transaction.
type Tx struct {
	tx  *sql.Tx
	ctx context.Context
	now time.Time
	// stmts are the statements prepared in this transaction: a batch
	// repeats the same few, and preparing an INSERT on items also
	// compiles its FTS and vector-queue triggers, so an import spent most
	// of its time preparing. database/sql closes them with the transaction.
	stmts map[string]*sql.Stmt
	// absent are the keys LookAhead found naming nothing stored.
	absent map[copyKey]bool
	// itemsStored says that items were written (OnItemsStored).
	itemsStored bool
}

// maxTxStmts bounds the statements a transaction keeps prepared (queries
// with a variable number of placeholders differ by length).
const maxTxStmts = 64

func (t *Tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	st, err := t.tx.PrepareContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	if t.stmts == nil {
		t.stmts = map[string]*sql.Stmt{}
	}
	if len(t.stmts) < maxTxStmts {
		t.stmts[query] = st
	}
	return st, nil
}

// Exec runs a statement in the transaction, prepared once per transaction.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.ctx, args...)
}

// ExecRows runs query for args, width values to a row, as few times as
// MaxVariables allows: %s in query becomes the rows' placeholders, "?"
// for rows of one value and "(?, ?)" for wider ones.
func (t *Tx) ExecRows(query string, width int, args []any) error {
	row := "?"
	if width > 1 {
		row = "(" + Placeholders(width) + ")"
	}
	for part := range slices.Chunk(args, MaxVariables/width*width) {
		rows := strings.TrimSuffix(strings.Repeat(row+",", len(part)/width), ",")
		if _, err := t.Exec(fmt.Sprintf(query, rows), part...); err != nil {
			return err
		}
	}
	return nil
}

// QueryRow reads one row in the transaction.
func (t *Tx) QueryRow(query string, args ...any) *sql.Row {
	st, err := t.stmt(query)
	if err != nil {
		// Let the error surface from Scan, as QueryRow does.
		return t.tx.QueryRowContext(t.ctx, query, args...)
	}
	return st.QueryRowContext(t.ctx, args...)
}

// QueryContext reads rows in the transaction (a Querier for Collect).
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// ExecContext and QueryRowContext have database/sql's names, so a feature
// package runs the queries of its own tables (a small repository) on the
// database or inside a store transaction alike.
func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryRowContext: see ExecContext.
func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(query)
	if err != nil {
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// Context is the context of the transaction's statements: the caller's
// values, without its cancellation (Store.Tx).
func (t *Tx) Context() context.Context { return t.ctx }

// Now is the clock reading the transaction started with.
func (t *Tx) Now() time.Time { return t.now }

// Millis converts a time to the schema's unix milliseconds; the zero time
// is 0. Feature packages with their own tables use it too, so every table
// stores times one way.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMillis converts the schema's unix milliseconds back; 0 is the zero time.
func FromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// nullMS maps a nullable column to a time.
func nullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return FromMillis(v.Int64)
}
