package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/store"
)

// Sender pushes one notification to the owner (the Telegram bot).
type Sender interface {
	Send(ctx context.Context, m Queued) error
}

// RetryAfterError is a sender's "not now, try again after". With
// RateLimit (Telegram's 429 retry_after) nothing is sent before After has
// passed; otherwise (no owner paired yet, the chat not opened) a wake-up
// — a new message, a pairing — ends the wait early.
type RetryAfterError struct {
	After     time.Duration
	Err       error
	RateLimit bool
}

func (e *RetryAfterError) Error() string { return fmt.Sprintf("retry after %v: %v", e.After, e.Err) }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// PermanentError is a notification the channel refuses for good (it will
// not get better by retrying); it is kept as failed with the reason.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Action is a policy's verdict on one notification.
type Action int

const (
	Deliver Action = iota // push now
	Defer                 // ask again at Until (quiet hours, budget)
	Hold                  // record, never push (silent; batched into a briefing)
)

// Decision is what a Policy decides.
type Decision struct {
	Action Action
	Until  time.Time // for Defer
	Reason string
	// Asked marks an answer to something the owner just did (a chat
	// message, a button): not even the owner's /quiet holds it.
	Asked bool
}

// Policy decides when (and whether) a notification is pushed. The
// proactive engine provides the real one (quiet hours, daily budget,
// batching); DefaultPolicy delivers everything but silent messages.
type Policy interface {
	Decide(ctx context.Context, m Queued, now time.Time) Decision
}

// DefaultPolicy pushes every message except silent ones, which it holds.
type DefaultPolicy struct{}

// Decide implements Policy.
func (DefaultPolicy) Decide(_ context.Context, m Queued, _ time.Time) Decision {
	if m.Level == Silent {
		return Decision{Action: Hold, Reason: "silent"}
	}
	return Decision{Action: Deliver}
}

// DispatcherOptions are the dispatcher's dependencies.
type DispatcherOptions struct {
	Queue  *Queue
	Store  *store.Store
	Sender Sender
	Policy Policy // DefaultPolicy when nil
	Log    *slog.Logger
	Now    func() time.Time
	// Health, if set, hears about the channel under HealthName: OK after a
	// delivery, degraded while it is unreachable.
	Health     *health.Registry
	HealthName string
	// MaxBackoff caps the wait between attempts while the channel is
	// unreachable (default 1 minute).
	MaxBackoff time.Duration
}

// Dispatcher delivers queued notifications in order, each exactly once:
// a notification is marked delivered only after the sender succeeded, and
// while the channel is unreachable everything waits in the queue.
type Dispatcher struct {
	o DispatcherOptions
	// pausedUntil honours a rate limit across passes; only the goroutine
	// running the passes touches it.
	pausedUntil time.Time
}

// NewDispatcher returns a dispatcher.
func NewDispatcher(o DispatcherOptions) (*Dispatcher, error) {
	if o.Queue == nil || o.Store == nil || o.Sender == nil {
		return nil, errors.New("notify: dispatcher needs a queue, a store and a sender")
	}
	if o.Policy == nil {
		o.Policy = DefaultPolicy{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	return &Dispatcher{o: o}, nil
}

// idleWait is the longest the dispatcher sleeps without being woken: a
// policy's answer may change with the clock.
const idleWait = time.Minute

// Run delivers until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) error {
	if n, err := d.o.Store.RequeueSending(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("notify: %w", err)
	} else if n > 0 {
		d.o.Log.Warn("notifications interrupted mid-send are queued again; the owner may see them twice", "count", n)
	}
	unreachable := retry.Policy{Initial: time.Second, Max: d.o.MaxBackoff}.Backoff()
	for {
		d.o.Queue.passes.Begin()
		wait, err := d.Pass(ctx)
		d.o.Queue.passes.End()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			var ra *RetryAfterError
			if errors.As(err, &ra) {
				wait = ra.After
				unreachable.Reset()
			} else {
				wait = unreachable.NextBackOff()
			}
		default:
			unreachable.Reset()
		}
		var ra *RetryAfterError
		patient := err != nil && !(errors.As(err, &ra) && !ra.RateLimit)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-d.o.Queue.wake:
			if patient {
				// Neither an unreachable channel nor a rate limit is
				// retried sooner because more messages arrive.
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil
				case <-timer.C:
				}
			}
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Pass delivers what is due now. It returns how long to wait before the
// next pass, or the error that stopped it (the channel is unreachable or
// rate-limited; the message stays queued).
func (d *Dispatcher) Pass(ctx context.Context) (time.Duration, error) {
	if wait := d.pausedUntil.Sub(d.o.Now()); wait > 0 {
		return wait, nil
	}
	for {
		now := d.o.Now()
		due, err := d.o.Store.DueNotifications(ctx, now, 100)
		if err != nil {
			return 0, err
		}
		quiet, err := d.o.Queue.QuietUntil(ctx)
		if err != nil {
			return 0, err
		}
		for _, row := range due {
			if err := d.one(ctx, fromRow(row), now, quiet); err != nil {
				return 0, err
			}
		}
		if len(due) < 100 {
			break
		}
	}
	next, err := d.o.Store.NextNotificationTime(ctx, d.o.Now())
	if err != nil {
		return 0, err
	}
	wait := idleWait
	if !next.IsZero() {
		wait = min(max(next.Sub(d.o.Now()), 0), idleWait)
	}
	return wait, nil
}

func (d *Dispatcher) one(ctx context.Context, m Queued, now, quiet time.Time) error {
	dec := d.o.Policy.Decide(ctx, m, now)
	if m.Level != Critical && now.Before(quiet) && dec.Action == Deliver && !dec.Asked {
		dec = Decision{Action: Defer, Until: quiet, Reason: "the owner asked for quiet"}
	}
	switch dec.Action {
	case Hold:
		return d.update(ctx, m.ID, store.NotificationUpdate{State: store.NotificationHeld, Error: dec.Reason})
	case Defer:
		if dec.Until.After(now) {
			return d.update(ctx, m.ID, store.NotificationUpdate{State: store.NotificationQueued, NotBefore: dec.Until})
		}
	}
	// Claim it first: /briefing may answer with a briefing the queue also
	// holds, and only one of the two may show it.
	claimed, err := d.o.Store.ClaimNotification(ctx, m.ID)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if !claimed {
		return nil
	}
	err = d.o.Sender.Send(ctx, m)
	var perm *PermanentError
	var ra *RetryAfterError
	switch {
	case err == nil:
		if d.o.Health != nil {
			d.o.Health.Success(d.o.HealthName)
			d.o.Health.Add(d.o.HealthName, "notifications_delivered", 1)
		}
		// Recorded even if shutdown began meanwhile: an unrecorded delivery
		// would be sent again after the restart.
		return d.update(context.WithoutCancel(ctx), m.ID, store.NotificationUpdate{From: store.NotificationSending, State: store.NotificationDelivered, CountAttempt: true})
	case errors.As(err, &perm):
		d.o.Log.Error("notification refused by the channel; kept as failed", "id", m.ID, "key", m.Key, "err", err)
		if d.o.Health != nil {
			d.o.Health.Add(d.o.HealthName, "notifications_failed", 1)
		}
		return d.update(ctx, m.ID, store.NotificationUpdate{From: store.NotificationSending, State: store.NotificationFailed, Error: err.Error(), CountAttempt: true})
	case errors.As(err, &ra):
		d.degrade(err)
		if ra.RateLimit {
			d.pausedUntil = now.Add(ra.After)
		}
		d.update(ctx, m.ID, store.NotificationUpdate{From: store.NotificationSending, State: store.NotificationQueued, Error: err.Error(), CountAttempt: true})
		return err
	default:
		if ctx.Err() == nil {
			d.degrade(err)
		}
		// Back to the queue even when stopping, so it is not left claimed.
		d.update(context.WithoutCancel(ctx), m.ID, store.NotificationUpdate{From: store.NotificationSending, State: store.NotificationQueued, Error: err.Error(), CountAttempt: true})
		return fmt.Errorf("notify: deliver %d: %w", m.ID, err)
	}
}

func (d *Dispatcher) update(ctx context.Context, id int64, u store.NotificationUpdate) error {
	if err := d.o.Store.UpdateNotification(ctx, id, u); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

func (d *Dispatcher) degrade(err error) {
	d.o.Log.Warn("notifications wait: the channel is unreachable", "err", err)
	if d.o.Health != nil {
		d.o.Health.Degrade(d.o.HealthName, err)
	}
}
