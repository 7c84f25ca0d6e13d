package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"
)

// driverName is go-sqlite3 with omnibrain's per-connection settings.
const driverName = "sqlite3_omnibrain"

// pageSize is the page size a new database is created with. SQLite's
// default, 4 KB, split an import's rows, indexes and full-text segments
// over four to eight times as many pages: each is read, written to the
// log and copied back on its own. An existing database keeps the size it
// was created with: changing it rewrites the whole file (VACUUM).
const pageSize = 32 << 10

// walAutoCheckpoint is the write-ahead log's size at which the committing
// connection copies it back into the database itself. SQLite's default
// (1000 pages, 4 MB at 4 KB a page) made an import's writer do it every
// few transactions, a sixth of its time (50k bench mails imported alone:
// 14.3-14.9 s against 11.8-12.6 s without). RunCheckpoints does it beside
// the writer instead; this larger size is the bound for when nothing runs
// it (a CLI command without a daemon).
const walAutoCheckpoint = 40 << 20

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		// The page size counts only until the database's first write,
		// and switching to WAL is one.
		if _, err := c.Exec(fmt.Sprintf("PRAGMA page_size = %d; PRAGMA journal_mode = WAL", pageSize), nil); err != nil {
			return err
		}
		size, err := pragmaInt(c, "page_size")
		if err != nil {
			return err
		}
		_, err = c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walAutoCheckpoint/size), nil)
		return err
	}})
}

// pragmaInt reads a PRAGMA's value on a connection being set up.
func pragmaInt(c *sqlite3.SQLiteConn, name string) (int, error) {
	rows, err := c.Query("PRAGMA "+name, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, fmt.Errorf("PRAGMA %s: %w", name, err)
	}
	n, ok := v[0].(int64)
	if !ok || n <= 0 {
		return 0, fmt.Errorf("PRAGMA %s: %v", name, v[0])
	}
	return int(n), nil
}

// checkpointEvery is how often, at most, RunCheckpoints copies the log
// back while transactions commit.
const checkpointEvery = 500 * time.Millisecond

// checkpointQuiet is how long commits must have stopped before
// RunCheckpoints empties the log.
const checkpointQuiet = time.Second

// RunCheckpoints copies the write-ahead log back into the database after
// transactions commit, at most every checkpointEvery, until ctx ends. Its
// checkpoints are passive: they run beside the writer and never wait for
// it, so an import's writer no longer stops to do them.
//
// Once commits have stopped for checkpointQuiet it also truncates the log:
// SQLite never shrinks it, so it kept the size of the largest burst of
// writes (214 MB after one 100k import, beside a 541 MB database). A
// reader still in the log makes it try again a checkpointQuiet later.
func (s *Store) RunCheckpoints(ctx context.Context) error {
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	quiet := time.NewTimer(checkpointQuiet)
	defer quiet.Stop()
	untruncated := true // the log may hold pages since it was last emptied
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.committed:
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			if err := s.checkpoint(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("background checkpoint failed; SQLite's own takes over", "err", err)
			}
			untruncated = true
			quiet.Reset(checkpointQuiet)
		case <-quiet.C:
			if !untruncated {
				continue
			}
			done, err := s.truncateLog(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				s.log.Warn("truncating the write-ahead log failed", "err", err)
				untruncated = false // until the next commit
			case !done:
				quiet.Reset(checkpointQuiet)
			default:
				untruncated = false
			}
			if s.afterTruncate != nil {
				s.afterTruncate(done)
			}
		}
	}
}

// checkpoint copies what it can of the log back without waiting for
// anyone.
func (s *Store) checkpoint(ctx context.Context) error {
	if _, err := walCheckpoint(ctx, s.db, "PASSIVE"); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	return nil
}

// walCheckpoint runs a checkpoint of the given mode on q (the pool or one
// connection) and reports whether a lock held it back.
func walCheckpoint(ctx context.Context, q rowQuerier, mode string) (busy bool, err error) {
	var blocked, logPages, copied int
	err = q.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&blocked, &logPages, &copied)
	return blocked != 0, err
}

// truncateLog copies the whole log back and empties it. It reports false
// when a writer or a reader still holds the log: it does not wait for
// them, since new writers would wait behind it.
func (s *Store) truncateLog(ctx context.Context) (bool, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("store: truncate log: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false, fmt.Errorf("store: truncate log: %w", err)
	}
	busy, err := walCheckpoint(ctx, conn, "TRUNCATE")
	// Back to the pool's timeout, or the connection must not go back to
	// the pool: database/sql discards one that reports ErrBadConn.
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); rerr != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		if err == nil {
			err = rerr
		}
	}
	if err != nil {
		return false, fmt.Errorf("store: truncate log: %w", err)
	}
	return !busy, nil
}
