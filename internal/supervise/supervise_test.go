package supervise

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/logging"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPanicIsIsolatedAndRestarted(t *testing.T) {
	reg := health.NewRegistry(nil)
	tree := New(logging.Discard(), reg, Options{Backoff: 10 * time.Millisecond, Threshold: 100})

	var panics, steadyRuns atomic.Int32
	restarted := make(chan struct{})
	tree.Add(Component{Name: "flaky", Run: func(ctx context.Context) error {
		if panics.Add(1) <= 2 {
			panic("boom")
		}
		close(restarted)
		<-ctx.Done()
		return ctx.Err()
	}})
	tree.Add(Component{Name: "steady", Run: func(ctx context.Context) error {
		steadyRuns.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Run(ctx) }()

	select {
	case <-restarted:
	case <-time.After(5 * time.Second):
		t.Fatal("panicking component was not restarted")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if got := steadyRuns.Load(); got != 1 {
		t.Errorf("steady component ran %d times, want 1 (a neighbour's panic must not restart it)", got)
	}
	c, _ := reg.Get("flaky")
	if c.Restarts != 2 || c.LastError == "" {
		t.Errorf("flaky health = %+v, want 2 restarts and the panic recorded", c)
	}
}

func TestErrorBacksOffAndNilIsFinal(t *testing.T) {
	reg := health.NewRegistry(nil)
	tree := New(logging.Discard(), reg, Options{Backoff: 200 * time.Millisecond, Threshold: 1})

	var failing, finished atomic.Int32
	tree.Add(Component{Name: "failing", Run: func(ctx context.Context) error {
		failing.Add(1)
		return errors.New("upstream down")
	}})
	tree.Add(Component{Name: "oneshot", Run: func(ctx context.Context) error {
		finished.Add(1)
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := tree.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// Without backoff a failing loop restarts thousands of times in 500ms.
	if n := failing.Load(); n < 2 || n > 10 {
		t.Errorf("failing component ran %d times in 500ms with 200ms backoff, want 2..10", n)
	}
	if n := finished.Load(); n != 1 {
		t.Errorf("component that returned nil ran %d times, want 1", n)
	}
	if c, _ := reg.Get("failing"); c.State != health.Down || c.LastError != "upstream down" {
		t.Errorf("failing health = %+v", c)
	}
}
