package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/store"
)

// writeFileLocked rewrites MEMORY.md from the active facts. An edit of
// the file not yet read back is applied first; whatever stood in the file
// is copied to memory-backups/ before it is replaced.
func (m *Memory) writeFileLocked(ctx context.Context) error {
	path := m.path(MemoryFile)
	if h, _, err := fileHash(path); err == nil && h != m.written {
		if err := m.applyFileLocked(ctx); err != nil {
			return err
		}
	}
	facts, err := m.repo.facts(ctx, Active)
	if err != nil {
		return err
	}
	m.syncIndexLocked(ctx, facts)
	data := RenderMemory(facts)
	cur, err := os.ReadFile(path)
	if err == nil && bytes.Equal(cur, data) {
		m.written = sha256.Sum256(data)
		return nil
	}
	if _, err := backup(path, m.path(BackupDir), m.o.Now()); err != nil {
		return fmt.Errorf("memory: back up %s: %w", MemoryFile, err)
	}
	if err := config.WriteSecretFile(path, data); err != nil {
		return fmt.Errorf("memory: write %s: %w", MemoryFile, err)
	}
	m.written = sha256.Sum256(data)
	return nil
}

// syncFileLocked reads MEMORY.md back if it changed since it was last
// written (or creates it), applying the owner's edits, and rewrites it
// so new lines get their ids.
func (m *Memory) syncFileLocked(ctx context.Context) error {
	h, _, err := fileHash(m.path(MemoryFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Never "forget everything": a missing file is written anew.
		return m.writeFileLocked(ctx)
	case err != nil:
		return fmt.Errorf("memory: read %s: %w", MemoryFile, err)
	case h == m.written:
		return nil
	}
	if err := m.applyFileLocked(ctx); err != nil {
		return err
	}
	if _, bad := m.problems[MemoryFile]; bad {
		return nil // leave the owner's edit in place to be fixed
	}
	return m.writeFileLocked(ctx)
}

// SyncFiles reads MEMORY.md and SOUL.md back after an edit.
func (m *Memory) SyncFiles(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loadSoulLocked()
	return m.syncFileLocked(ctx)
}

// maxDropShare: an edit that deletes more than this share of the facts
// (and more than one) is refused.
const maxDropShare = 0.25

// applyFileLocked applies MEMORY.md as it is on disk to the facts, all or
// nothing. A malformed file, or one that would delete more than a quarter
// of the facts, changes nothing and is reported; the file is left as the
// owner saved it, and a copy goes to memory-backups/ before any later
// rewrite replaces it.
func (m *Memory) applyFileLocked(ctx context.Context) error {
	path := m.path(MemoryFile)
	h, data, err := fileHash(path)
	if err != nil {
		return fmt.Errorf("memory: read %s: %w", MemoryFile, err)
	}
	lines, perr := ParseMemory(data)
	if perr != nil {
		m.refuseLocked(ctx, path, perr.Error()+"; nothing was changed")
		m.written = h // reported once; a rewrite will back it up
		return nil
	}
	all, err := m.repo.facts(ctx)
	if err != nil {
		return err
	}
	byID := map[int64]*Fact{}
	active := map[int64]*Fact{}
	for _, f := range all {
		byID[f.ID] = f
		if f.State == Active {
			active[f.ID] = f
		}
	}
	now := m.o.Now()
	var changed, restored, added []*Fact
	var stale []string
	seen := map[int64]bool{}
	known := map[string]bool{} // normalised texts already present
	for _, f := range active {
		known[normText(f.Text)] = true
	}
	for _, l := range lines {
		if l.ID != 0 {
			f, ok := active[l.ID]
			switch {
			case ok:
				seen[l.ID] = true
				if f.Text == l.Text && f.Category == l.Category && f.Pinned == l.Pinned {
					continue
				}
				g := *f
				if g.Category != l.Category {
					g.Expires = timeZero
					if l.Category == RecentContext {
						g.Expires = now.Add(m.o.RecentContextTTL)
					}
				}
				g.Text, g.Category, g.Pinned, g.Updated, g.Note = l.Text, l.Category, l.Pinned, now, "edited in MEMORY.md"
				changed = append(changed, &g)
			case byID[l.ID] != nil:
				// Forgotten, superseded or expired since the file was written.
				stale = append(stale, Ref(l.ID))
			default:
				// An id the database does not know (it was replaced or
				// lost): the line is the owner's record; restore it.
				restored = append(restored, m.fileFact(l, now))
			}
			continue
		}
		if known[normText(l.Text)] {
			continue
		}
		known[normText(l.Text)] = true
		added = append(added, m.fileFact(l, now))
	}
	var deleted []*Fact
	for id, f := range active {
		if !seen[id] {
			deleted = append(deleted, f)
		}
	}
	if len(deleted) > 1 && float64(len(deleted)) > maxDropShare*float64(len(active)) {
		m.refuseLocked(ctx, path, fmt.Sprintf("%s: this edit would delete %d of %d facts (more than a quarter), so it was not applied and nothing was changed; forget facts one by one with `omnibrain memory forget ID`, or delete fewer lines at a time", MemoryFile, len(deleted), len(active)))
		m.written = h
		return nil
	}
	err = store.InTx(ctx, m.o.DB, func(tx *sql.Tx) error {
		for _, f := range changed {
			if err := updateFact(ctx, tx, f); err != nil {
				return err
			}
		}
		for _, f := range append(restored, added...) {
			if err := insertFact(ctx, tx, f); err != nil {
				return err
			}
		}
		for _, f := range deleted {
			if _, err := m.forgetLocked(ctx, tx, f.ID, "deleted from MEMORY.md"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n := len(changed) + len(restored) + len(added) + len(deleted); n > 0 || len(stale) > 0 {
		m.log.Info("memory: MEMORY.md applied", "changed", len(changed), "added", len(added), "restored", len(restored), "deleted", len(deleted), "stale", strings.Join(stale, ","))
	}
	m.written = h
	m.problemLocked(ctx, MemoryFile, "")
	return nil
}

var timeZero time.Time

func (m *Memory) fileFact(l Line, now time.Time) *Fact {
	f := &Fact{ID: l.ID, Text: l.Text, Category: l.Category, State: Active, Source: SourceFile, Pinned: l.Pinned, Created: now, Updated: now, Note: "added in MEMORY.md"}
	if f.Category == RecentContext {
		f.Expires = now.Add(m.o.RecentContextTTL)
	}
	return f
}

// refuseLocked reports an edit that was not applied and keeps a copy of it.
func (m *Memory) refuseLocked(ctx context.Context, path, msg string) {
	if name, err := backup(path, m.path(BackupDir), m.o.Now()); err == nil && name != "" {
		msg += " (your version is saved as " + name + ")"
	}
	m.problemLocked(ctx, MemoryFile, msg)
}

func normText(s string) string {
	return strings.ToLower(strings.TrimRight(strings.Join(strings.Fields(s), " "), ".!"))
}

// maxSoulBytes bounds SOUL.md: it goes into every prompt.
const maxSoulBytes = 16 << 10

// loadSoulLocked reads SOUL.md, creating it with the defaults on first
// use. A file that cannot be used (not text, too long) is reported and
// the last good version stays in use.
func (m *Memory) loadSoulLocked() {
	path := m.path(SoulFile)
	h, data, err := fileHash(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := config.WriteSecretFile(path, []byte(defaultSoul)); err != nil {
			m.log.Warn("memory: could not create SOUL.md", "err", err)
		}
		data, h = []byte(defaultSoul), sha256.Sum256([]byte(defaultSoul))
	} else if err != nil {
		m.problemLocked(context.Background(), SoulFile, fmt.Sprintf("%s: %v", SoulFile, err))
		return
	}
	if h == m.soulHash {
		return
	}
	m.soulHash = h
	switch {
	case !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0:
		m.problemLocked(context.Background(), SoulFile, SoulFile+": the file is not UTF-8 text; the previous version stays in use")
		return
	case len(data) > maxSoulBytes:
		m.problemLocked(context.Background(), SoulFile, fmt.Sprintf("%s: the file is larger than %d bytes; the previous version stays in use", SoulFile, maxSoulBytes))
		return
	}
	m.soul = soulPrompt(string(data))
	m.problemLocked(context.Background(), SoulFile, "")
}

// soulPrompt is SOUL.md without its title and comments.
func soulPrompt(s string) string {
	var out []string
	inComment := false
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if inComment {
			if i := strings.Index(t, "-->"); i >= 0 {
				inComment = false
				t = strings.TrimSpace(t[i+3:])
			} else {
				continue
			}
		}
		for {
			i := strings.Index(t, "<!--")
			if i < 0 {
				break
			}
			j := strings.Index(t[i:], "-->")
			if j < 0 {
				inComment = true
				t = strings.TrimSpace(t[:i])
				break
			}
			t = strings.TrimSpace(t[:i] + t[i+j+3:])
		}
		if t == "" || strings.HasPrefix(t, "# ") {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, "\n")
}
