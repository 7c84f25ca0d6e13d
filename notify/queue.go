package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/internal/passes"
	"github.com/omnibrain/omnibrain/store"
)

// Queue is the durable notification queue: Notify stores a message (once
// per Key) and wakes the dispatcher that delivers it. It is safe for
// concurrent use.
type Queue struct {
	st     *store.Store
	log    *slog.Logger
	wake   chan struct{}
	passes passes.Tracker // the dispatcher's passes, for WaitPass
}

// NewQueue returns the queue kept in st.
func NewQueue(st *store.Store, log *slog.Logger) *Queue {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Queue{st: st, log: log, wake: make(chan struct{}, 1)}
}

// ValidLevel reports whether l is one of the four levels.
func ValidLevel(l Level) bool {
	switch l {
	case Silent, FYI, Important, Critical:
		return true
	}
	return false
}

// Notify queues m for the owner. A message whose Key was queued before is
// dropped (and that is not an error): the owner hears a thing once.
func (q *Queue) Notify(ctx context.Context, m Message) error {
	if !ValidLevel(m.Level) {
		return fmt.Errorf("notify: level %q: want silent, fyi, important or critical", m.Level)
	}
	if strings.TrimSpace(m.Text) == "" && m.ProposalID == "" {
		return errors.New("notify: a message needs text or a proposal")
	}
	n := &store.Notification{Key: m.Key, Level: string(m.Level), Text: m.Text, ProposalID: m.ProposalID, ItemID: m.ItemID}
	added, err := q.st.EnqueueNotification(ctx, n)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if !added {
		q.log.Debug("notification already queued once; dropped", "key", m.Key)
		return nil
	}
	// With no channel (no Telegram yet) or one down for long, the queue
	// must not grow without end: the oldest give way, and say so.
	dropped, err := q.st.CapWaitingNotifications(ctx, MaxWaiting, fmt.Sprintf("more than %d notifications waited: the oldest were dropped", MaxWaiting))
	if err != nil {
		q.log.Warn("could not cap the notification queue", "err", err)
	} else if dropped > 0 {
		q.log.Warn("notification queue full: the oldest waiting notifications were dropped (omnibrain notifications reads what waits)", "dropped", dropped, "max", MaxWaiting)
	}
	q.Wake()
	return nil
}

// MaxWaiting is how many notifications may wait for delivery; past it the
// oldest are dropped (critical ones last), each marked with the reason.
const MaxWaiting = 200

// Waiting returns the notifications waiting for delivery, oldest first.
func (q *Queue) Waiting(ctx context.Context, limit int) ([]Queued, error) {
	rows, err := q.st.Notifications(ctx, store.NotificationQueued, limit)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	out := make([]Queued, 0, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		out = append(out, fromRow(rows[i]))
	}
	return out, nil
}

// Clear marks waiting notifications read by the owner (every one when ids
// is empty), so they are not delivered any more, and returns how many.
func (q *Queue) Clear(ctx context.Context, ids []int64) (int64, error) {
	n, err := q.st.MarkNotificationsRead(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("notify: %w", err)
	}
	return n, nil
}

// Wake tells the dispatcher to look at the queue now.
func (q *Queue) Wake() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// WaitPass wakes the dispatcher and returns once it has made a whole pass
// that began after the call: everything due before it has been delivered,
// held or deferred. It is how a caller — a test above all — knows what
// was *not* delivered. Without a running dispatcher it waits until ctx is
// done.
func (q *Queue) WaitPass(ctx context.Context) error {
	return q.passes.Wait(ctx, q.Wake)
}

// Queued is a notification waiting for delivery.
type Queued struct {
	ID int64
	Message
	Created   time.Time
	NotBefore time.Time // deferred until then (quiet hours, a rate limit); zero if due
	Attempts  int
}

func fromRow(n *store.Notification) Queued {
	return Queued{ID: n.ID, Message: Message{Level: Level(n.Level), Key: n.Key, Text: n.Text, ProposalID: n.ProposalID, ItemID: n.ItemID},
		Created: n.Created, NotBefore: n.NotBefore, Attempts: n.Attempts}
}

// Held returns messages recorded but not pushed (silent ones, and those a
// policy kept for a briefing), newest first.
func (q *Queue) Held(ctx context.Context, limit int) ([]Queued, error) {
	rows, err := q.st.Notifications(ctx, store.NotificationHeld, limit)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	out := make([]Queued, 0, len(rows))
	for _, r := range rows {
		out = append(out, fromRow(r))
	}
	return out, nil
}

// Counts returns how many notifications are in each state (queued,
// delivered, held, failed).
func (q *Queue) Counts(ctx context.Context) (map[string]int64, error) {
	return q.st.CountNotifications(ctx)
}

const metaQuietUntil = "notify.quiet_until"

// SetQuiet holds every non-critical push until until (zero: quiet off).
// The owner sets it with /quiet. Ending or shortening it releases what
// the old quiet time was holding.
func (q *Queue) SetQuiet(ctx context.Context, until time.Time) error {
	old, err := q.QuietUntil(ctx)
	if err != nil {
		old = time.Time{} // an unreadable value is replaced below
	}
	v := ""
	if !until.IsZero() {
		v = until.UTC().Format(time.RFC3339)
	}
	now := q.st.Now()
	err = q.st.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.SetMeta(metaQuietUntil, v); err != nil {
			return err
		}
		end := until
		if end.Before(now) {
			end = now
		}
		if !old.After(end) {
			return nil
		}
		n, err := tx.ReleaseNotifications(end, old)
		if n > 0 {
			q.log.Info("quiet time shortened; held notifications released", "count", n)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("notify: set quiet: %w", err)
	}
	q.Wake()
	return nil
}

// QuietUntil returns the end of the owner's quiet time (zero if none).
func (q *Queue) QuietUntil(ctx context.Context) (time.Time, error) {
	v, err := q.st.Meta(ctx, metaQuietUntil)
	if err != nil || v == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("notify: quiet until %q: %w", v, err)
	}
	return t, nil
}
