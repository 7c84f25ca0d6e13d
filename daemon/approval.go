package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/executor"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/notify"
)

// approvalParts are the approval gate, the notification queue and the
// executor registry: built first, because everything else proposes,
// notifies or registers an executor.
type approvalParts struct {
	gate      *approval.Gate
	queue     *notify.Queue
	executors *executor.Registry
	// policy decides when notifications are pushed; nil is
	// notify.DefaultPolicy. The proactive engine sets its own before
	// openTelegram (setNotifyPolicy).
	policy notify.Policy
}

// openApproval builds the gate, the queue and the registry, and
// supervises the outbox (execution of approved proposals, expiry, snooze,
// superseding answered threads).
func (a *App) openApproval(ctx context.Context) error {
	p := &a.approval
	p.queue = notify.NewQueue(a.store, a.log.With("component", "notify"))
	p.executors = executor.NewRegistry()
	gate, err := approval.NewGate(approval.GateOptions{
		Store: a.store, Executors: p.executors, Notifier: p.queue,
		Expiry: a.cfg.Approval.Expiry, Snooze: a.cfg.Approval.Snooze, SendDelay: a.cfg.Approval.SendDelay,
		Log: a.log.With("component", "approval"), Now: a.store.Now,
	})
	if err != nil {
		return err
	}
	p.gate = gate
	gate.Subscribe(func(pr *approval.Proposal) {
		switch pr.State {
		case approval.StateExecuted:
			a.health.Add("outbox", "executed", 1)
		case approval.StateFailed:
			a.health.Add("outbox", "failed", 1)
		}
	})
	a.components = append(a.components, supervise.Component{Name: "outbox", Run: func(ctx context.Context) error {
		a.health.Success("outbox")
		return gate.RunOutbox(ctx)
	}})
	return nil
}

// registerExecutor makes ex the executor of the kinds it names (the Gmail,
// Calendar, GitHub, standing-rule and plugin wiring calls it).
func (a *App) registerExecutor(ex executor.Executor) error {
	if err := a.approval.executors.Register(ex); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

// setNotifyPolicy replaces the default notification policy (deliver all
// but silent); call it before openTelegram.
func (a *App) setNotifyPolicy(p notify.Policy) { a.approval.policy = p }

// Gate is the approval gate: agents and engines propose through it.
func (a *App) Gate() *approval.Gate { return a.approval.gate }

// Notifier is the durable notification queue.
func (a *App) Notifier() *notify.Queue { return a.approval.queue }

// proposals is the API's proposals backend: the gate itself while the
// daemon runs (its outbox executes approvals); in a CLI process without a
// daemon, an approval is also carried out before the answer.
func (a *App) proposals() proposalsBackend { return proposalsBackend{Gate: a.approval.gate, app: a} }

type proposalsBackend struct {
	*approval.Gate
	app *App
}

// Approve approves. In a CLI process (no daemon answered on the socket) it
// then waits out the send delay and executes, so the command ends with the
// outcome; interrupted during the delay, it undoes the approval. A home
// has one outbox, ever: if a daemon holds the home but did not answer,
// nothing is approved here and the owner is told how to restart it.
func (b proposalsBackend) Approve(ctx context.Context, id, hash string, by approval.Owner) (*approval.Proposal, error) {
	if b.app.daemon {
		return b.Gate.Approve(ctx, id, hash, by)
	}
	if err := daemonUnresponsive(b.app.cfg.Home); err != nil {
		return nil, err
	}
	p, err := b.Gate.Approve(ctx, id, hash, by)
	if err != nil {
		return nil, err
	}
	if wait := p.ExecuteAfter.Sub(b.app.store.Now()); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			if _, err := b.Gate.Undo(context.WithoutCancel(ctx), id, by); err != nil {
				return nil, fmt.Errorf("interrupted during the send delay, and undoing the approval failed: %w", err)
			}
			return nil, fmt.Errorf("interrupted during the send delay: the approval of %s is undone and nothing was sent", id)
		case <-t.C:
		}
	}
	// A daemon that started meanwhile runs its own outbox: leave it to it.
	if daemonUnresponsive(b.app.cfg.Home) != nil {
		return b.Gate.Get(ctx, id)
	}
	if err := b.Gate.ExecuteApproved(ctx); err != nil {
		return nil, err
	}
	return b.Gate.Get(ctx, id)
}

// waitingNotifications serves `omnibrain notifications` from the queue.
type waitingNotifications struct{ q *notify.Queue }

func (w waitingNotifications) Waiting(ctx context.Context, limit int) ([]api.Notification, error) {
	ms, err := w.q.Waiting(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.Notification, 0, len(ms))
	for _, m := range ms {
		out = append(out, api.Notification{ID: m.ID, Level: string(m.Level), Text: m.Text, ProposalID: m.ProposalID,
			ItemID: m.ItemID, Created: m.Created, NotBefore: m.NotBefore})
	}
	return out, nil
}

func (w waitingNotifications) Clear(ctx context.Context, ids []int64) (int, error) {
	n, err := w.q.Clear(ctx, ids)
	return int(n), err
}
