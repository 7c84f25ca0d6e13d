// Package wait holds the one way the daemon's loops pause: a sleep that
// ends early when its context does.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, when it returns the context's
// cause (its error unless a cause was given).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
