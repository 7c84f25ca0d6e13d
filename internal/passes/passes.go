// Package passes lets a background loop say when it has finished a whole
// pass, so that a caller (a test above all) can wait until the loop has
// seen everything that happened before it asked — instead of sleeping and
// hoping, which passes on a fast machine when it should fail.
package passes

import (
	"context"
	"sync"
)

// Tracker counts one loop's passes. The loop calls Begin and End around
// each pass; anyone may Wait. The zero value is ready to use.
type Tracker struct {
	mu      sync.Mutex
	begun   uint64
	ended   uint64
	changed chan struct{} // closed when a pass ends, then replaced
}

// Begin marks the start of a pass.
func (t *Tracker) Begin() {
	t.mu.Lock()
	t.begun++
	t.mu.Unlock()
}

// End marks the end of the pass begun last.
func (t *Tracker) End() {
	t.mu.Lock()
	t.ended = t.begun
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	t.mu.Unlock()
}

// Wait returns once a whole pass that began after the call has ended, or
// with ctx's error. wake, if not nil, is called once to start a pass
// early (a loop's Kick). Without a running loop it waits for ctx.
func (t *Tracker) Wait(ctx context.Context, wake func()) error {
	t.mu.Lock()
	target := t.begun + 1
	t.mu.Unlock()
	if wake != nil {
		wake()
	}
	for {
		t.mu.Lock()
		if t.ended >= target {
			t.mu.Unlock()
			return nil
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
