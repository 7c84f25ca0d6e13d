package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// FailedKeyPrefix starts the notification key that tells the owner an
// approved proposal failed: the outcome of their own approval.
const FailedKeyPrefix = "proposal-failed:"

// Kick wakes the outbox (after an approval).
func (g *Gate) Kick() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// WaitPass wakes the outbox and returns once it has run a whole pass that
// began after the call: everything approved before it has been executed
// (or has failed), and expiry and answered threads have been swept. It
// is how a caller — a test above all — knows what the outbox did *not*
// do. Without a running outbox it waits until ctx is done.
func (g *Gate) WaitPass(ctx context.Context) error {
	return g.passes.Wait(ctx, g.Kick)
}

// RunOutbox executes approved proposals until ctx is done. Each pass
// first resolves proposals left in executing — by a crash, or by an
// attempt whose outcome could not be known: the executor's Find looks for
// the earlier attempt on the remote side before anything is retried. Each
// pass also sweeps expiry and snoozes and supersedes proposals whose
// thread the owner answered.
func (g *Gate) RunOutbox(ctx context.Context) error {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	for {
		g.passes.Begin()
		// Nothing of this gate is executing between passes: whatever is in
		// executing now is unresolved.
		if ids, err := g.executingIDs(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped: cancellation is no failure
			}
			g.log.Error("outbox: could not list interrupted executions", "err", err)
		} else {
			g.recover(ctx, ids)
		}
		// Threads the owner answered first: an approval waiting out its
		// send delay in such a thread is not sent.
		if _, err := g.SupersedeAnswered(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("superseding answered threads failed", "err", err)
		}
		if err := g.ExecuteApproved(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("outbox pass failed", "err", err)
		}
		if err := g.Sweep(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("proposal sweep failed", "err", err)
		}
		g.passes.End()
		// Wake when the next send delay ends.
		due.Reset(g.untilNextDue(ctx))
		select {
		case <-ctx.Done():
			return nil
		case <-g.kick:
		case <-t.C:
		case <-due.C:
		}
	}
}

func (g *Gate) executingIDs(ctx context.Context) ([]string, error) {
	ps, err := g.records(ctx).list(filter{States: []State{StateExecuting}, Oldest: true})
	if err != nil {
		return nil, fmt.Errorf("approval: outbox: %w", err)
	}
	ids := make([]string, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// recover resolves proposals found in executing: asked on the remote
// side, an attempt that landed is recorded as executed, one that did not
// is run again once its absence has had time to settle, and one that
// cannot be checked yet waits for the next pass.
func (g *Gate) recover(ctx context.Context, ids []string) {
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		p, err := g.Get(ctx, id)
		if err != nil || p.State != StateExecuting {
			continue
		}
		ex, ok := g.executor(p.Kind)
		if !ok {
			continue // wait for the executor to be configured
		}
		fctx, cancel := context.WithTimeout(ctx, g.timeout)
		remoteID, found, err := ex.Find(fctx, p, p.IdempotencyKey)
		cancel()
		switch {
		case errors.Is(err, ErrNoLookup):
			g.finish(ctx, p, "", fmt.Errorf("interrupted, and %w: not retried, so it may or may not have run; check by hand", err), "")
		case err != nil:
			if ctx.Err() == nil {
				g.log.Warn("could not check an interrupted execution; will ask again", "proposal", id, "err", err)
			}
		case found:
			g.finish(ctx, p, remoteID, nil, "found on the remote side after an interrupted attempt")
		case g.attemptAge(ctx, p) < g.settle:
			g.log.Info("interrupted execution not found on the remote side yet; looking again before any retry", "proposal", id)
		default:
			g.log.Info("interrupted execution did not reach the remote side; executing it now", "proposal", id)
			g.run(ctx, p, ex, "retry after an interrupted attempt: no earlier attempt found")
		}
	}
}

// attemptAge is how long ago p's latest execution attempt began or, if it
// ended without an outcome (a timeout), ended — it may have landed at its
// very end —, from the audit log (else from the approval); zero when the
// log cannot be read, so nothing is retried blindly.
func (g *Gate) attemptAge(ctx context.Context, p *Proposal) time.Duration {
	entries, err := g.Audit(ctx, p.ID, 0)
	if err != nil {
		g.log.Warn("could not read when an execution began", "proposal", p.ID, "err", err)
		return 0
	}
	began := p.Decided
	for i := len(entries) - 1; i >= 0; i-- {
		if a := entries[i].Action; a == "executing" || a == "outcome-unknown" {
			began = entries[i].Time
			break
		}
	}
	return g.now().Sub(began)
}

// untilNextDue is how long until the earliest send delay of an approved
// proposal ends (the outbox interval if none is waiting).
func (g *Gate) untilNextDue(ctx context.Context) time.Duration {
	ps, err := g.records(ctx).list(filter{States: []State{StateApproved}, Oldest: true})
	if err != nil {
		return g.interval
	}
	wait := g.interval
	for _, p := range ps {
		wait = min(wait, max(p.ExecuteAfter.Sub(g.now()), time.Millisecond))
	}
	return wait
}

// ExecuteApproved executes, oldest first, every approved proposal whose
// send delay is over.
func (g *Gate) ExecuteApproved(ctx context.Context) error {
	ps, err := g.records(ctx).list(filter{States: []State{StateApproved}, DueBy: g.now().UTC(), Oldest: true})
	if err != nil {
		return fmt.Errorf("approval: outbox: %w", err)
	}
	for _, p := range ps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		g.executeOne(ctx, p)
	}
	return nil
}

// executeOne claims an approved proposal (approved → executing, by
// compare-and-set, with the attempt and its idempotency key recorded) and
// runs it.
func (g *Gate) executeOne(ctx context.Context, p *Proposal) {
	if g.recheck(ctx, p) {
		return
	}
	ex, ok := g.executor(p.Kind)
	if !ok {
		g.claimAndFail(ctx, p, fmt.Sprintf("nothing can execute a %s proposal (is the account connected? see omnibrain status)", p.Kind))
		return
	}
	key := IdempotencyKey(p.ID, p.PayloadHash)
	claimed, err := g.claim(ctx, p, key, "")
	if err != nil {
		g.log.Error("could not start execution", "proposal", p.ID, "err", err)
		return
	}
	if !claimed {
		return // someone else took it
	}
	p.State, p.IdempotencyKey = StateExecuting, key
	g.changed(p)
	g.run(ctx, p, ex, "")
}

func (g *Gate) claim(ctx context.Context, p *Proposal, key, detail string) (bool, error) {
	var ok bool
	err := g.st.Tx(ctx, func(tx *store.Tx) error {
		r := inTx(tx)
		var err error
		ok, err = r.transition(change{ID: p.ID, From: []State{StateApproved}, PayloadHash: p.PayloadHash,
			To: StateExecuting, IdempotencyKey: key, CountAttempt: true})
		if err != nil || !ok {
			return err
		}
		return r.audit(AuditEntry{Actor: actorSystem, Action: "executing", ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: "key " + key + detail})
	})
	return ok, err
}

func (g *Gate) claimAndFail(ctx context.Context, p *Proposal, reason string) {
	ok, err := g.claim(ctx, p, IdempotencyKey(p.ID, p.PayloadHash), " (not started: "+reason+")")
	if err != nil || !ok {
		return
	}
	g.finish(ctx, p, "", errors.New(reason), "")
}

// run performs one attempt of an executing proposal. An error fails it
// for good and tells the owner: a send that may have half-happened is
// never blindly retried. An attempt whose outcome is not known (shutdown,
// timeout, a lost answer that could not be looked up) stays executing
// for Find to resolve on a later pass.
func (g *Gate) run(ctx context.Context, p *Proposal, ex Executor, note string) {
	if HashProposal(p.Payload, p.Warnings) != p.PayloadHash {
		// The stored bytes are not what the owner approved: never send
		// them, on the first attempt or on a retry after a crash.
		g.finish(ctx, p, "", errors.New("the stored payload does not match its approved hash; not executed"), "")
		return
	}
	switch ok, err := g.ownerApproved(ctx, p); {
	case err != nil:
		g.log.Error("could not read the approval of a proposal; not executing it now", "proposal", p.ID, "err", err)
		return // still executing: the next pass looks again
	case !ok:
		g.finish(context.WithoutCancel(ctx), p, "", ErrNotApprovedByOwner, "")
		return
	}
	if note != "" {
		g.auditOnly(ctx, AuditEntry{Actor: actorSystem, Action: "executing", ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: note})
	}
	ectx, cancel := context.WithTimeout(ctx, g.timeout)
	remoteID, err := ex.Execute(ectx, p, p.IdempotencyKey)
	timedOut := err != nil && ectx.Err() != nil
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		g.log.Warn("execution interrupted by shutdown; it will be checked on the next start", "proposal", p.ID, "err", err)
		return
	case timedOut || errors.Is(err, ErrOutcomeUnknown):
		g.log.Warn("execution outcome unknown; it will be looked up before anything is retried", "proposal", p.ID, "err", err)
		g.auditOnly(ctx, AuditEntry{Actor: actorSystem, Action: "outcome-unknown", ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: err.Error()})
		return
	}
	// Record the outcome even if shutdown began meanwhile: an unrecorded
	// success would cost a remote lookup on the next start.
	g.finish(context.WithoutCancel(ctx), p, remoteID, err, "")
}

// ErrNotApprovedByOwner fails a proposal that is marked approved but
// whose approval the gate never recorded.
var ErrNotApprovedByOwner = errors.New("it is marked approved, but you never approved this payload (the audit log has no approval of it): something other than omnibrain's gate changed its database, so it was not executed")

// ownerApproved reports whether the owner's latest decision about p in
// the audit log — written in the same transaction as the decision — is
// the approval of exactly p's payload. A proposal set to approved by
// anything else (a process writing the database) has none.
func (g *Gate) ownerApproved(ctx context.Context, p *Proposal) (bool, error) {
	entries, err := g.Audit(ctx, p.ID, 0)
	if err != nil {
		return false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !ownerActor(e.Actor) || e.Action == "refused" {
			continue
		}
		return e.Action == "approved" && e.PayloadHash == p.PayloadHash, nil
	}
	return false, nil
}

// finish records the outcome of an execution: executing → executed | failed.
func (g *Gate) finish(ctx context.Context, p *Proposal, remoteID string, execErr error, detail string) {
	to, action := StateExecuted, "executed"
	var errText *string
	if execErr != nil {
		to, action = StateFailed, "failed"
		s := execErr.Error()
		errText, detail = &s, s
	} else if detail == "" {
		detail = "remote id " + remoteID
	}
	var after *Proposal
	err := g.st.Tx(ctx, func(tx *store.Tx) error {
		r := inTx(tx)
		ok, err := r.transition(change{ID: p.ID, From: []State{StateExecuting}, PayloadHash: p.PayloadHash,
			To: to, RemoteID: remoteID, Error: errText})
		if err != nil || !ok {
			return err
		}
		if err := r.audit(AuditEntry{Actor: actorSystem, Action: action, ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: detail}); err != nil {
			return err
		}
		after, err = r.get(p.ID)
		return err
	})
	if err != nil {
		g.log.Error("could not record an execution outcome", "proposal", p.ID, "outcome", action, "err", err)
		return
	}
	if after == nil {
		return
	}
	if execErr != nil {
		g.log.Warn("proposal failed", "proposal", p.ID, "err", execErr)
		if g.notifier != nil {
			msg := notify.Message{Level: notify.Important, Key: FailedKeyPrefix + p.ID, ItemID: p.ItemID,
				Text: fmt.Sprintf("Could not do “%s” (proposal %s): %s. It was not retried.", p.Title, p.ID, execErr)}
			// The failure is recorded: the owner must hear of it even if
			// shutdown began meanwhile, and before anyone is told of the
			// change.
			if err := g.notifier.Notify(context.WithoutCancel(ctx), msg); err != nil {
				g.log.Error("could not tell the owner about a failed proposal", "proposal", p.ID, "err", err)
			}
		}
	}
	g.changed(after)
}

func (g *Gate) executor(k Kind) (Executor, bool) {
	if g.execs == nil {
		return nil, false
	}
	return g.execs.Executor(k)
}
