package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
)

// memory.recent_context_days reaches the daemon's memory: a recent
// context fact added through the API expires after the configured days,
// not after the default 14.
func TestMemoryRecentContextDaysFromConfig(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	cfg := config.Default(t.TempDir())
	cfg.Location = time.UTC
	cfg.Memory.RecentContextDays = 3
	app, err := Open(ctx, cfg, Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	c, stop := api.NewInProcessClient(app.Handler())
	t.Cleanup(stop)

	added, err := c.MemoryAdd(ctx, api.MemoryAddRequest{Text: "this week I am working from the Porto office", Category: "recent_context"})
	if err != nil {
		t.Fatal(err)
	}
	f := added.Fact
	if f.Expires == nil || !f.Expires.Equal(clock().Add(3*24*time.Hour)) {
		t.Fatalf("fact %+v expires %v, want %v (3 days)", f, f.Expires, clock().Add(3*24*time.Hour))
	}
	active := func() bool {
		l, err := c.Memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range l.Facts {
			if x.ID == f.ID {
				return true
			}
		}
		return false
	}
	advance(3*24*time.Hour - time.Minute)
	if !active() {
		t.Fatalf("%s gone before 3 days", f.ID)
	}
	advance(time.Minute)
	if active() {
		t.Fatalf("%s still listed after 3 days", f.ID)
	}
}
