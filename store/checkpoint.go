package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"
)

// driverName is go-sqlite3 with omnibrain's per-connection settings.
const driverName = "sqlite3_omnibrain"

// walAutoCheckpoint is the write-ahead log's size, in pages, at which the
// committing connection copies it back into the database itself. SQLite's
// default (1000 pages, 4 MB) made an import's writer do it every few
// transactions, a sixth of its time (50k bench mails imported alone: 14.3-14.9
// s against 11.8-12.6 s without). RunCheckpoints does it beside the writer
// instead; this larger size is the bound for when nothing runs it (a CLI
// command without a daemon).
const walAutoCheckpoint = 10000

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walAutoCheckpoint), nil)
		return err
	}})
}

// checkpointEvery is how often, at most, RunCheckpoints copies the log
// back while transactions commit.
const checkpointEvery = 500 * time.Millisecond

// RunCheckpoints copies the write-ahead log back into the database after
// transactions commit, at most every checkpointEvery, until ctx ends. Its
// checkpoints are passive: they run beside the writer and never wait for
// it, so an import's writer no longer stops to do them.
func (s *Store) RunCheckpoints(ctx context.Context) error {
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.committed:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := s.checkpoint(ctx, "PASSIVE"); err != nil && ctx.Err() == nil {
			s.log.Warn("background checkpoint failed; SQLite's own takes over", "err", err)
		}
	}
}

// Checkpoint copies the write-ahead log into the database and truncates
// it, if no reader holds it. SQLite's automatic checkpoints never shrink
// the file, so after an import it kept the size of the largest burst of
// writes (19 MB of 74 after 10k mails): a writer calls this once its
// burst is over.
func (s *Store) Checkpoint(ctx context.Context) error {
	return s.checkpoint(ctx, "TRUNCATE")
}

// checkpoint runs a checkpoint of the given mode.
func (s *Store) checkpoint(ctx context.Context, mode string) error {
	var busy, logPages, copied int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &logPages, &copied); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	return nil
}
