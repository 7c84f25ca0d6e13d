package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Compaction is what Compact did to a database.
type Compaction struct {
	Path        string        `json:"path"`
	BytesBefore int64         `json:"bytes_before"` // the file and its write-ahead log
	BytesAfter  int64         `json:"bytes_after"`
	PageBefore  int           `json:"page_size_before"`
	PageAfter   int           `json:"page_size_after"`
	FreeBefore  int64         `json:"free_bytes_before"` // pages deleted rows left inside the file
	Took        time.Duration `json:"took_ns"`
}

// ErrInUse is returned by Compact when another connection or process has
// the database open.
var ErrInUse = errors.New("the database is in use")

// Compact rewrites the database at path with SQLite's VACUUM: the pages
// deleted and merged items left go back to the disk, and a database
// created before omnibrain chose its page size gets the size new ones
// have (fewer, larger pages: a faster import and a smaller file).
//
// It needs the database to itself and fails at once, having changed
// nothing, if anything else has it open. SQLite rewrites the file under a
// rollback journal, so a compaction that is interrupted or cancelled
// leaves the database as it was. The copy SQLite builds first goes beside
// the database, not into the system's temporary directory (often memory).
func Compact(ctx context.Context, path string) (Compaction, error) {
	c := Compaction{Path: path}
	if _, err := os.Stat(path); err != nil {
		return c, fmt.Errorf("store: compact: %w", err)
	}
	c.BytesBefore = fileBytes(path)
	// Without a busy timeout: a daemon or another command holding the
	// database is reported at once, not after seconds of waiting.
	db, err := sql.Open(driverName, dsn(path, url.Values{"_busy_timeout": {"0"}}))
	if err != nil {
		return c, fmt.Errorf("store: compact: %w", err)
	}
	err = vacuum(ctx, db, &c)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: compact: %w", cerr)
	}
	if err != nil {
		return c, err
	}
	c.BytesAfter = fileBytes(path)
	return c, nil
}

// vacuum compacts db's database on one connection, filling in c.
func vacuum(ctx context.Context, db *sql.DB, c *Compaction) error {
	conn, err := db.Conn(ctx) // the journal mode changes only on this one
	if err != nil {
		return fmt.Errorf("store: compact: %w", inUse(err))
	}
	defer conn.Close()
	sp, err := space(ctx, conn)
	if err != nil {
		return fmt.Errorf("store: compact: %w", inUse(err))
	}
	c.PageBefore, c.FreeBefore = int(sp.PageSize), sp.FreePages*sp.PageSize
	// SQLite copies the live pages to a temporary file, then writes them
	// back, journalling the pages it overwrites: up to twice the database.
	need := 2 * (sp.Pages - sp.FreePages) * sp.PageSize
	if avail, err := FreeBytes(filepath.Dir(c.Path)); err == nil && avail < need {
		return fmt.Errorf("store: compact: needs about %d MB free beside %s (a copy and a journal), but %d MB are", need>>20, c.Path, avail>>20)
	}

	// Out of WAL mode first: VACUUM cannot change the page size of a WAL
	// database, and leaving WAL checkpoints the log and needs the
	// database to be this connection's alone. Whatever happens from here
	// (even a cancellation that ends the switch's own statement), the
	// database goes back to WAL, as Open expects; a failed VACUUM has
	// already rolled itself back.
	back := context.WithoutCancel(ctx)
	defer conn.ExecContext(back, "PRAGMA journal_mode = WAL")
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = DELETE").Scan(&mode); err != nil {
		return fmt.Errorf("store: compact: %w", inUse(err))
	}
	if mode != "delete" {
		return fmt.Errorf("store: compact: %w (its journal mode stays %s)", ErrInUse, mode)
	}
	// temp_store_directory is process-wide in SQLite: Compact is meant for
	// a process with no other database work (the CLI, daemon stopped).
	dir := strings.ReplaceAll(filepath.Dir(c.Path), "'", "''")
	if _, err := conn.ExecContext(ctx, "PRAGMA temp_store_directory = '"+dir+"'"); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	defer conn.ExecContext(back, "PRAGMA temp_store_directory = ''")

	start := time.Now()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d; VACUUM", pageSize)); err != nil {
		return fmt.Errorf("store: compact: %w", inUse(err))
	}
	c.Took = time.Since(start)
	// Done: a cancellation from here on changes nothing.
	if err := conn.QueryRowContext(back, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("store: compact: back to WAL: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("store: compact: back to WAL: the journal mode is %s", mode)
	}
	if err := conn.QueryRowContext(back, "PRAGMA page_size").Scan(&c.PageAfter); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	return nil
}

// Space is how the database file is used.
type Space struct {
	PageSize, Pages, FreePages int64
}

// Space reads how the database file is used.
func (s *Store) Space(ctx context.Context) (Space, error) {
	return space(ctx, s.db)
}

func space(ctx context.Context, q rowQuerier) (Space, error) {
	var sp Space
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"page_size", &sp.PageSize}, {"page_count", &sp.Pages}, {"freelist_count", &sp.FreePages}} {
		if err := q.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(p.dst); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

// compactWorth is the least Compact must be likely to give back for
// WorthCompacting to suggest it.
const compactWorth = 64 << 20

// WorthCompacting says why Compact would pay ("" if it would not): free
// pages that are a quarter of a large file, or a large file with smaller
// pages than new databases get.
func (sp Space) WorthCompacting() string {
	size, free := sp.Pages*sp.PageSize, sp.FreePages*sp.PageSize
	switch {
	case free >= compactWorth && 4*free >= size:
		return fmt.Sprintf("%d MB of its %d MB are free pages that deleted or merged items left", free>>20, size>>20)
	case size >= compactWorth && sp.PageSize < pageSize:
		return fmt.Sprintf("it has %d KB pages, new homes %d KB (a faster import and a file about a sixth smaller)", sp.PageSize>>10, pageSize>>10)
	}
	return ""
}

// inUse marks SQLite's "locked" as the database being used elsewhere.
func inUse(err error) error {
	if isLocked(err) {
		return fmt.Errorf("%w by another process (%v)", ErrInUse, err)
	}
	return err
}

// fileBytes is the size of the database and its write-ahead log.
func fileBytes(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		} else if !errors.Is(err, fs.ErrNotExist) {
			return -1
		}
	}
	return n
}

// FreeBytes is the space an unprivileged process may still use in dir.
func FreeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
