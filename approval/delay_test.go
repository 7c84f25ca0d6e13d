package approval_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

// delayedEnv is env with a send delay and a remote for replies.
func delayedEnv(t *testing.T, delay, expiry time.Duration) (*env, *approval.Gate, *remote) {
	t.Helper()
	e := newEnv(t)
	r := &remote{}
	ex := &fakeExecutors{byKind: map[approval.Kind]approval.Executor{approval.KindReply: r}}
	g, err := approval.NewGate(approval.GateOptions{Store: e.st, Executors: ex, Notifier: e.queue, Now: e.clock.Now,
		Expiry: expiry, SendDelay: delay, OutboxInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return e, g, r
}

func TestUndoWithinTheSendDelay(t *testing.T) {
	e, g, r := delayedEnv(t, 10*time.Second, 24*time.Hour)
	ctx := context.Background()
	p, _ := g.Propose(ctx, reply("hello"))
	approved, err := g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	if err != nil {
		t.Fatal(err)
	}
	if approved.State != approval.StateApproved || !approved.ExecuteAfter.Equal(e.clock.Now().Add(10*time.Second)) {
		t.Fatalf("approved %s, runs at %v", approved.State, approved.ExecuteAfter)
	}
	e.clock.Add(9 * time.Second)
	if err := g.ExecuteApproved(ctx); err != nil {
		t.Fatal(err)
	}
	if r.calls != 0 {
		t.Fatal("executed within the send delay")
	}
	undone, err := g.Undo(ctx, p.ID, approval.APIOwner())
	if err != nil {
		t.Fatal(err)
	}
	if undone.State != approval.StatePending || !undone.ExecuteAfter.IsZero() || undone.DecidedBy != "" {
		t.Fatalf("after undo: %+v", undone)
	}
	e.clock.Add(time.Minute)
	if err := g.ExecuteApproved(ctx); err != nil {
		t.Fatal(err)
	}
	if r.calls != 0 {
		t.Fatal("an undone approval was executed")
	}
	// Approved again: it waits its own delay, then runs once.
	if _, err := g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	g.ExecuteApproved(ctx)
	if r.calls != 0 {
		t.Fatal("the second approval did not wait its delay")
	}
	e.clock.Add(10 * time.Second)
	g.ExecuteApproved(ctx)
	g.ExecuteApproved(ctx)
	if got, _ := g.Get(ctx, p.ID); got.State != approval.StateExecuted || r.calls != 1 {
		t.Fatalf("after the delay: %s with %d calls, want executed once", got.State, r.calls)
	}
	// Too late now.
	var se *approval.StaleError
	if _, err := g.Undo(ctx, p.ID, approval.APIOwner()); !errors.As(err, &se) || se.Proposal.State != approval.StateExecuted {
		t.Errorf("undo after execution: %v", err)
	}
	audit, _ := g.Audit(ctx, p.ID, 0)
	if countAction(audit, "undone") != 1 || countAction(audit, "approved") != 2 {
		t.Errorf("audit %+v", audit)
	}
}

// Just before it runs, an approval is checked again: expired meanwhile,
// or its thread answered by the owner meanwhile, it is not executed.
func TestApprovalCheckedAgainBeforeItRuns(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		e, g, r := delayedEnv(t, 10*time.Second, time.Minute)
		ctx := context.Background()
		p, _ := g.Propose(ctx, reply("hello"))
		e.clock.Add(55 * time.Second)
		if _, err := g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(10 * time.Second)
		g.ExecuteApproved(ctx)
		if got, _ := g.Get(ctx, p.ID); got.State != approval.StateExpired || r.calls != 0 {
			t.Errorf("%s with %d calls, want expired, none", got.State, r.calls)
		}
	})
	t.Run("answered", func(t *testing.T) {
		e, g, r := delayedEnv(t, 10*time.Second, time.Hour)
		ctx := context.Background()
		p, _ := g.Propose(ctx, reply("hello"))
		if _, err := g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
			t.Fatal(err)
		}
		// The owner answers the thread in Gmail during the delay; the
		// collector stores it (no outbox pass has read it yet).
		e.clock.Add(5 * time.Second)
		own := &store.Item{Source: "gmail", ExternalID: "own-1", Kind: "email", Thread: "t-1", Time: e.clock.Now(), Title: "Re: Q3 budget",
			Body: "Answered myself.", Sender: "owner@example.com", Meta: map[string]any{"from": "owner@example.com", "to": []string{"alice@example.com"}}}
		err := e.st.Tx(ctx, func(tx *store.Tx) error {
			_, err := tx.UpsertMail(own, store.Mail{MessageID: "own-1@example.com", From: store.Address{Email: "owner@example.com"},
				To: []store.Address{{Email: "alice@example.com"}}, Outbound: true}, store.UpsertOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Add(5 * time.Second)
		g.ExecuteApproved(ctx)
		got, _ := g.Get(ctx, p.ID)
		if got.State != approval.StateSuperseded || r.calls != 0 {
			t.Errorf("%s with %d calls, want superseded, none", got.State, r.calls)
		}
	})
}

// The outbox wakes by itself when a send delay ends: nobody kicks it.
func TestOutboxRunsApprovalWhenItsDelayEnds(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &remote{}
	const delay = 150 * time.Millisecond
	g, err := approval.NewGate(approval.GateOptions{Store: st, SendDelay: delay, OutboxInterval: time.Hour,
		Executors: &fakeExecutors{byKind: map[approval.Kind]approval.Executor{approval.KindReply: r}}})
	if err != nil {
		t.Fatal(err)
	}
	executed := make(chan *approval.Proposal, 1)
	g.Subscribe(func(p *approval.Proposal) {
		if p.State == approval.StateExecuted {
			executed <- p
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.RunOutbox(ctx) }()
	defer func() { cancel(); <-done }()
	p, _ := g.Propose(ctx, reply("hello"))
	approved, err := g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-executed:
		audit, _ := g.Audit(ctx, got.ID, 0)
		var began time.Time
		for _, a := range audit {
			if a.Action == "executing" {
				began = a.Time
			}
		}
		if began.Before(approved.Decided.Add(delay).Truncate(time.Millisecond)) || r.calls != 1 {
			t.Errorf("began %v, approved %v: before the delay ended (%d calls)", began, approved.Decided, r.calls)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the outbox did not run the approval after its delay")
	}
}
