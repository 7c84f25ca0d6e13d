package approval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"go.uber.org/goleak"
)

type fakeExecutors struct {
	byKind map[approval.Kind]approval.Executor
}

func (f *fakeExecutors) Executor(k approval.Kind) (approval.Executor, bool) {
	e, ok := f.byKind[k]
	return e, ok
}

// remote is a stand-in remote side: it remembers what it received by key.
type remote struct {
	mu      sync.Mutex
	sent    map[string]string // key -> payload
	calls   int
	finds   int
	fail    error
	findErr error
	block   chan struct{} // if set, Execute records the send and then waits for ctx
	lost    error         // if set, Execute records the send and then returns it
}

func (r *remote) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	r.mu.Lock()
	r.calls++
	if r.fail != nil {
		r.mu.Unlock()
		return "", r.fail
	}
	if r.sent == nil {
		r.sent = map[string]string{}
	}
	r.sent[key] = string(p.Payload)
	block, lost := r.block, r.lost
	r.mu.Unlock()
	if lost != nil {
		return "", lost
	}
	if block != nil {
		close(block)
		<-ctx.Done()
		return "", ctx.Err()
	}
	return "remote-" + key[:6], nil
}

func (r *remote) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finds++
	if r.findErr != nil {
		return "", false, r.findErr
	}
	_, ok := r.sent[key]
	if !ok {
		return "", false, nil
	}
	return "remote-" + key[:6], true, nil
}

func TestOutboxExecutesOnceWithKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := &remote{}
	e.execs.byKind[approval.KindReply] = r
	p, _ := e.gate.Propose(ctx, reply("hello"))
	if _, err := e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := e.gate.ExecuteApproved(ctx); err != nil {
			t.Fatal(err)
		}
	}
	key := approval.IdempotencyKey(p.ID, p.PayloadHash)
	if r.calls != 1 || r.sent[key] != string(p.Payload) {
		t.Fatalf("calls %d sent %v", r.calls, r.sent)
	}
	got, _ := e.gate.Get(ctx, p.ID)
	if got.State != approval.StateExecuted || got.RemoteID != "remote-"+key[:6] || got.IdempotencyKey != key || got.Attempts != 1 {
		t.Errorf("after execution: %+v", got)
	}
	audit, _ := e.gate.Audit(ctx, p.ID, 0)
	if last := audit[len(audit)-1]; last.Action != "executed" || last.Actor != "system" {
		t.Errorf("audit ends with %+v", last)
	}
}

func TestOutboxFailureIsReportedNotRetried(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := &remote{fail: errors.New("gmail: googleapi: Error 500: backend error")}
	e.execs.byKind[approval.KindReply] = r
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	e.gate.ExecuteApproved(ctx)
	e.gate.ExecuteApproved(ctx)
	if r.calls != 1 {
		t.Errorf("%d attempts, want 1", r.calls)
	}
	got, _ := e.gate.Get(ctx, p.ID)
	if got.State != approval.StateFailed || got.Error != r.fail.Error() {
		t.Errorf("after failure: %+v", got)
	}
	n, err := e.st.NotificationByKey(ctx, "proposal-failed:"+p.ID)
	if err != nil {
		t.Fatalf("owner not told: %v", err)
	}
	if n.Level != "important" || !strings.Contains(n.Text, p.ID) || !strings.Contains(n.Text, "Error 500") {
		t.Errorf("failure notice %+v", n)
	}
}

func TestOutboxWithoutExecutorFails(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	e.gate.ExecuteApproved(ctx)
	got, _ := e.gate.Get(ctx, p.ID)
	if got.State != approval.StateFailed || !strings.Contains(got.Error, "nothing can execute") {
		t.Errorf("%+v", got)
	}
}

func TestOutboxRefusesTamperedPayload(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := &remote{}
	e.execs.byKind[approval.KindReply] = r
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	if _, err := e.st.DB().Exec(`UPDATE proposals SET payload = replace(payload, 'alice', 'mallory') WHERE id = ?`, p.ID); err != nil {
		t.Fatal(err)
	}
	e.gate.ExecuteApproved(ctx)
	if r.calls != 0 {
		t.Fatal("a payload the owner did not approve was executed")
	}
	if got, _ := e.gate.Get(ctx, p.ID); got.State != approval.StateFailed {
		t.Errorf("state %s", got.State)
	}
}

// A crash while executing: the remote side got the action, the store still
// says executing. After a restart Find sees it and nothing is sent again.
func TestOutboxResolvesInterruptedExecutionWithFind(t *testing.T) {
	e := newEnv(t)
	r := &remote{block: make(chan struct{})}
	e.execs.byKind[approval.KindReply] = r
	ctx, cancel := context.WithCancel(context.Background())
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	done := make(chan error)
	go func() { done <- e.gate.RunOutbox(ctx) }()
	<-r.block // the send reached the remote side
	cancel()  // and the daemon dies before recording it
	<-done
	if got, _ := e.gate.Get(context.Background(), p.ID); got.State != approval.StateExecuting {
		t.Fatalf("state after crash %s", got.State)
	}

	r.block = nil
	restart(t, e, r, func(g *approval.Gate) {
		got, _ := g.Get(context.Background(), p.ID)
		if got.State != approval.StateExecuted || r.calls != 1 {
			t.Errorf("after restart: state %s, %d calls", got.State, r.calls)
		}
	})
}

// A crash after claiming but before the remote side got anything: after a
// restart Find finds nothing. Right after the attempt that absence is not
// believed (Gmail may not have indexed an accepted mail yet); once it has
// had time to settle, the action is executed, once.
func TestOutboxRetriesInterruptedExecutionThatNeverLanded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	key := approval.IdempotencyKey(p.ID, p.PayloadHash)
	claimWithoutRunning(t, e, p)
	r := &remote{}
	e.clock.Add(30 * time.Second)
	restart(t, e, r, func(g *approval.Gate) {
		got, _ := g.Get(ctx, p.ID)
		if got.State != approval.StateExecuting || r.calls != 0 {
			t.Errorf("30s after the attempt: state %s, %d calls; want executing, no retry yet", got.State, r.calls)
		}
	})
	e.clock.Add(3 * time.Minute)
	restart(t, e, r, func(g *approval.Gate) {
		got, _ := g.Get(ctx, p.ID)
		if got.State != approval.StateExecuted || r.calls != 1 || r.sent[key] == "" {
			t.Errorf("after the settle time: state %s, %d calls", got.State, r.calls)
		}
	})
}

func TestOutboxWaitsWhenFindFails(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	claimWithoutRunning(t, e, p)
	r := &remote{findErr: errors.New("gmail unreachable")}
	restart(t, e, r, func(g *approval.Gate) {
		got, _ := g.Get(ctx, p.ID)
		if got.State != approval.StateExecuting || r.calls != 0 {
			t.Errorf("executed without knowing whether it already was: state %s, %d calls", got.State, r.calls)
		}
	})
}

// An attempt whose outcome the executor cannot know (the answer was lost
// and the lookup failed), or that timed out, stays executing; the next
// pass looks it up and records it as executed without a second attempt.
func TestOutboxUnknownOutcomeIsLookedUpNotRetried(t *testing.T) {
	for name, r := range map[string]*remote{
		"lost answer": {lost: fmt.Errorf("gmail: send: Gmail answered 503; looking it up failed too: %w", approval.ErrOutcomeUnknown)},
		"timeout":     {block: make(chan struct{})},
	} {
		r.findErr = errors.New("the remote side is unreachable") // until the test says otherwise
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ex := &fakeExecutors{byKind: map[approval.Kind]approval.Executor{approval.KindReply: r}}
			g, err := approval.NewGate(approval.GateOptions{Store: e.st, Executors: ex, Notifier: e.queue, Now: e.clock.Now,
				OutboxInterval: time.Hour, ExecuteTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			states := make(chan approval.State, 16)
			g.Subscribe(func(p *approval.Proposal) { states <- p.State })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, _ := g.Propose(ctx, reply("hello"))
			g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
			done := make(chan error)
			go func() { done <- g.RunOutbox(ctx) }()
			waitState := func(want approval.State) {
				t.Helper()
				for {
					select {
					case s := <-states:
						if s == want {
							return
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("never %s", want)
					}
				}
			}
			waitState(approval.StateExecuting)
			// The attempt ends without an outcome: still executing, nobody told of a failure.
			deadline := time.Now().Add(10 * time.Second)
			for !hasAudit(t, g, p.ID, "outcome-unknown") {
				if time.Now().After(deadline) {
					t.Fatal("the unknown outcome was not recorded")
				}
				time.Sleep(5 * time.Millisecond)
			}
			testutil.WaitPass(t, "outbox", g.WaitPass) // a pass that cannot look it up leaves it alone
			if got, _ := g.Get(ctx, p.ID); got.State != approval.StateExecuting {
				t.Fatalf("after an unknown outcome: %s", got.State)
			}
			r.mu.Lock()
			r.block, r.lost, r.findErr = nil, nil, nil
			r.mu.Unlock()
			g.Kick()
			waitState(approval.StateExecuted)
			cancel()
			<-done
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.calls != 1 || r.finds == 0 {
				t.Errorf("%d attempts and %d lookups; want 1 attempt, then lookups", r.calls, r.finds)
			}
			if _, err := e.st.NotificationByKey(context.Background(), "proposal-failed:"+p.ID); err == nil {
				t.Error("the owner was told it failed")
			}
		})
	}
}

func hasAudit(t *testing.T, g *approval.Gate, id, action string) bool {
	t.Helper()
	audit, err := g.Audit(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range audit {
		if a.Action == action {
			return true
		}
	}
	return false
}

// restart runs a fresh gate's outbox over the same store for one pass and
// calls check after it.
func restart(t *testing.T, e *env, r *remote, check func(*approval.Gate)) {
	t.Helper()
	ex := &fakeExecutors{byKind: map[approval.Kind]approval.Executor{approval.KindReply: r}}
	g, err := approval.NewGate(approval.GateOptions{Store: e.st, Executors: ex, Notifier: e.queue, Now: e.clock.Now, OutboxInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.RunOutbox(ctx) }()
	testutil.WaitPass(t, "outbox", g.WaitPass)
	cancel()
	<-done
	check(g)
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// claimWithoutRunning leaves p in executing with its key, as a crash
// right after the claim does.
func claimWithoutRunning(t *testing.T, e *env, p *approval.Proposal) {
	t.Helper()
	if ok, err := e.gate.ClaimWithoutRunning(context.Background(), p); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
}

// The retry after an interrupted attempt checks the payload against its
// approved hash too, like the first attempt.
func TestOutboxRetryRefusesTamperedPayload(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	claimWithoutRunning(t, e, p)
	if _, err := e.st.DB().Exec(`UPDATE proposals SET payload = replace(payload, 'alice', 'mallory') WHERE id = ?`, p.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Hour) // long past the settle time: absence is believed
	r := &remote{}
	restart(t, e, r, func(g *approval.Gate) {
		got, _ := g.Get(ctx, p.ID)
		if r.calls != 0 {
			t.Fatalf("a payload the owner did not approve was executed on retry: %v", r.sent)
		}
		if got.State != approval.StateFailed {
			t.Errorf("state %s, want failed", got.State)
		}
	})
}

// An executor that cannot look an earlier attempt up (ErrNoLookup) must
// not have it retried blindly: the interrupted proposal fails, the owner
// is told, and nothing runs again.
func TestOutboxInterruptedWithoutLookupFailsNotRetried(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("hello"))
	e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	claimWithoutRunning(t, e, p)
	r := &remote{findErr: fmt.Errorf("plugin x cannot be asked: %w", approval.ErrNoLookup)}
	e.clock.Add(time.Hour)
	restart(t, e, r, func(g *approval.Gate) {
		got, _ := g.Get(ctx, p.ID)
		if r.calls != 0 {
			t.Fatalf("%d attempts after an interruption that cannot be checked", r.calls)
		}
		if got.State != approval.StateFailed || !strings.Contains(got.Error, "cannot be checked") {
			t.Errorf("state %s (%q), want failed saying it cannot be checked", got.State, got.Error)
		}
	})
	if _, err := e.st.NotificationByKey(ctx, "proposal-failed:"+p.ID); err != nil {
		t.Errorf("owner not told: %v", err)
	}
}

// slowRemote accepts a send only as its attempt times out, and the
// lookup does not show it yet (Gmail indexes accepted mail with a delay).
type slowRemote struct {
	mu      sync.Mutex
	calls   int
	started chan struct{}
}

func (r *slowRemote) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	r.started <- struct{}{}
	<-ctx.Done()
	return "", ctx.Err()
}

func (r *slowRemote) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	return "", false, nil
}

// The settle time runs from when a timed-out attempt ended, not from when
// it began: an attempt that ran for longer than the settle time may have
// landed at its very end, and "not found" right after it is not believed.
func TestOutboxSettleCountsFromTheEndOfATimedOutAttempt(t *testing.T) {
	e := newEnv(t)
	r := &slowRemote{started: make(chan struct{}, 4)}
	ex := &fakeExecutors{byKind: map[approval.Kind]approval.Executor{approval.KindReply: r}}
	g, err := approval.NewGate(approval.GateOptions{Store: e.st, Executors: ex, Notifier: e.queue, Now: e.clock.Now,
		OutboxInterval: time.Hour, ExecuteTimeout: 100 * time.Millisecond, FindSettle: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, _ := g.Propose(ctx, reply("hello"))
	g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	done := make(chan error)
	go func() { done <- g.RunOutbox(ctx) }()
	<-r.started
	e.clock.Add(3 * time.Minute) // the attempt takes longer than the settle time
	deadline := time.Now().Add(10 * time.Second)
	for !hasAudit(t, g, p.ID, "outcome-unknown") {
		if time.Now().After(deadline) {
			t.Fatal("the timed-out attempt was not recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	testutil.WaitPass(t, "outbox", g.WaitPass) // a pass right after the timeout
	cancel()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls != 1 {
		t.Errorf("%d attempts: retried right after a timed-out attempt, before its absence could settle", r.calls)
	}
}
