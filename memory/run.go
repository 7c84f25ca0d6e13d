package memory

import (
	"context"
	"os"
	"sync"
	"time"
)

// filePoll is how often MEMORY.md and SOUL.md are looked at for edits. A
// change is read back once the files have stayed the same for one more
// poll: an editor's save is several writes.
//
// Polling, not a watch on the home directory: the database lives there
// too, and every page SQLite writes raised an event for the daemon to read
// and throw away (5% of its CPU during an import).
const filePoll = 500 * time.Millisecond

// Run watches MEMORY.md and SOUL.md for edits, runs extraction passes in
// the background and retires expired recent context, until ctx is done.
func (m *Memory) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.extractLoop(ctx) }()
	defer wg.Wait()

	// Edits made between Open and now are read now.
	seen := m.filesState()
	if err := m.SyncFiles(ctx); err != nil {
		m.log.Warn("memory: reading the files back failed", "err", err)
	}
	poll := time.NewTicker(filePoll)
	defer poll.Stop()
	hourly := time.NewTicker(time.Hour)
	defer hourly.Stop()
	changed := false // seen differs from what was last read back
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			now := m.filesState()
			if now != seen {
				seen, changed = now, true
				continue // still being saved, maybe
			}
			if !changed {
				continue
			}
			changed = false
			if err := m.SyncFiles(ctx); err != nil {
				m.log.Warn("memory: reading the files back failed", "err", err)
			}
		case <-hourly.C:
			if err := m.Expire(ctx); err != nil {
				m.log.Warn("memory: expiry failed", "err", err)
			}
		}
	}
}

// fileState is what a poll compares: a save changes the size or the time
// (an editor's new file renamed over the old has its own).
type fileState struct {
	size    int64
	modTime time.Time
}

// filesState is the state of MEMORY.md and SOUL.md; a missing file has
// the zero state.
func (m *Memory) filesState() [2]fileState {
	var st [2]fileState
	for i, name := range []string{MemoryFile, SoulFile} {
		if fi, err := os.Stat(m.path(name)); err == nil {
			st[i] = fileState{size: fi.Size(), modTime: fi.ModTime()}
		}
	}
	return st
}

// extractLoop runs a pass whenever Observe says one is due, and once at
// the start for messages left from before a restart.
func (m *Memory) extractLoop(ctx context.Context) {
	if m.o.Model == nil {
		return
	}
	for {
		if _, err := m.Extract(ctx, false); err != nil && ctx.Err() == nil {
			m.log.Warn("memory: extraction pass failed; the messages wait for the next", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.extract:
		}
	}
}
