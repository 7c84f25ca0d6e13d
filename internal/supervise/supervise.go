// Package supervise runs the daemon's long-lived loops under one suture
// supervision tree: each loop is restarted with backoff when it fails or
// panics, a panic never reaches the rest of the daemon, and cancelling the
// context is the normal way to stop.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/omnibrain/omnibrain/health"
	"github.com/thejerf/suture/v4"
)

// Component is one long-lived loop. Run blocks until ctx is done or it
// fails; returning nil means it finished for good and is not restarted.
type Component struct {
	Name string
	Run  func(ctx context.Context) error
}

// Options tune restart behaviour; the zero value suits the daemon.
type Options struct {
	// Backoff is how long a component that keeps failing waits before its
	// next restart (default 15s). It fails Threshold times (default 3,
	// decaying over 30s) before the wait starts.
	Backoff   time.Duration
	Threshold float64
	// StopTimeout bounds how long each component gets to stop (default 10s).
	StopTimeout time.Duration
}

// Tree is the supervision tree.
type Tree struct {
	root   *suture.Supervisor
	log    *slog.Logger
	health *health.Registry
	opts   Options
}

// New returns an empty tree; add components before Run.
func New(log *slog.Logger, reg *health.Registry, opts Options) *Tree {
	if opts.Backoff == 0 {
		opts.Backoff = 15 * time.Second
	}
	if opts.Threshold == 0 {
		opts.Threshold = 3
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 10 * time.Second
	}
	t := &Tree{log: log, health: reg, opts: opts}
	t.root = suture.New("omnibrain", t.spec())
	return t
}

func (t *Tree) spec() suture.Spec {
	return suture.Spec{
		EventHook:        t.event,
		FailureDecay:     30,
		FailureThreshold: t.opts.Threshold,
		FailureBackoff:   t.opts.Backoff,
		Timeout:          t.opts.StopTimeout,
	}
}

// Add puts a component under supervision. Each component gets its own
// child supervisor, so one that keeps failing backs off alone.
func (t *Tree) Add(c Component) {
	child := suture.New(c.Name, t.spec())
	child.Add(&service{c: c})
	t.root.Add(child)
}

// Run serves the tree until ctx is cancelled, then waits for every
// component to stop. A cancelled context is a clean stop: Run returns nil.
func (t *Tree) Run(ctx context.Context) error {
	err := t.root.Serve(ctx)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

func (t *Tree) event(e suture.Event) {
	switch e := e.(type) {
	case suture.EventServicePanic:
		t.log.Error("component panicked; restarting", "component", e.ServiceName, "panic", e.PanicMsg, "stack", e.Stacktrace)
		t.health.Failure(e.ServiceName, fmt.Errorf("panic: %s", e.PanicMsg))
		t.health.Restarted(e.ServiceName)
	case suture.EventServiceTerminate:
		err := fmt.Errorf("%v", e.Err)
		msg := "component failed; restarting"
		if !e.Restarting {
			msg = "component failed; restarting after the backoff"
		}
		t.log.Warn(msg, "component", e.ServiceName, "err", err)
		t.health.Failure(e.ServiceName, err)
		t.health.Restarted(e.ServiceName)
	case suture.EventBackoff:
		t.log.Warn("component keeps failing; backing off", "component", e.SupervisorName, "wait", t.opts.Backoff)
	case suture.EventStopTimeout:
		t.log.Error("component did not stop in time", "component", e.ServiceName, "timeout", t.opts.StopTimeout)
	}
}

// service adapts a Component to suture.Service.
type service struct{ c Component }

func (s *service) String() string { return s.c.Name }

func (s *service) Serve(ctx context.Context) error {
	err := s.c.Run(ctx)
	switch {
	case ctx.Err() != nil:
		// Stopping: whatever the loop returned, this is not a failure.
		return suture.ErrDoNotRestart
	case err == nil:
		return suture.ErrDoNotRestart
	default:
		return err
	}
}
