package passes

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A pass already running when Wait is called does not count: it may
// have missed what the caller did just before.
func TestWaitNeedsAPassBegunAfterTheCall(t *testing.T) {
	var tr Tracker
	tr.Begin() // a pass in progress
	done := make(chan error, 1)
	go func() { done <- tr.Wait(context.Background(), nil) }()
	waitBlocked(t, &tr)
	tr.End() // the pass that was running: not enough
	tr.Begin()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v after a pass that began before it", err)
	default:
	}
	tr.End()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitWakesTheLoop(t *testing.T) {
	var tr Tracker
	kick := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loopDone := make(chan struct{})
	go func() { // a loop that runs a pass per kick
		defer close(loopDone)
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
				tr.Begin()
				tr.End()
			}
		}
	}()
	for range 3 {
		if err := tr.Wait(ctx, func() { kick <- struct{}{} }); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	<-loopDone
}

func TestWaitEndsWithItsContext(t *testing.T) {
	var tr Tracker
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait without a loop = %v, want context.Canceled", err)
	}
}

// waitBlocked returns once a Wait is parked on the tracker's channel.
func waitBlocked(t *testing.T, tr *Tracker) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		parked := tr.changed != nil
		tr.mu.Unlock()
		if parked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Wait never parked")
		}
		time.Sleep(time.Millisecond)
	}
}
