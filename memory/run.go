package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long the files must be quiet after an event before they
// are read back: an editor's save is several events (write, rename).
const settle = 150 * time.Millisecond

// Run watches MEMORY.md and SOUL.md for edits, runs extraction passes in
// the background and retires expired recent context, until ctx is done.
func (m *Memory) Run(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("memory: watch files: %w", err)
	}
	defer w.Close()
	// The directory, not the files: editors save by renaming a new file
	// over the old one, which ends a watch on the file itself.
	if err := w.Add(m.o.Home); err != nil {
		return fmt.Errorf("memory: watch %s: %w", m.o.Home, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.extractLoop(ctx) }()
	defer wg.Wait()

	// Edits made between Open and the watch are read now.
	if err := m.SyncFiles(ctx); err != nil {
		m.log.Warn("memory: reading the files back failed", "err", err)
	}
	hourly := time.NewTicker(time.Hour)
	defer hourly.Stop()
	var quiet *time.Timer
	var quietC <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if name := filepath.Base(ev.Name); name != MemoryFile && name != SoulFile {
				continue
			}
			if quiet == nil {
				quiet = time.NewTimer(settle)
				quietC = quiet.C
			} else {
				quiet.Reset(settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			m.log.Warn("memory: file watch", "err", err)
		case <-quietC:
			quiet, quietC = nil, nil
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
