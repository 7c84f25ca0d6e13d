package telegram_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/notify"
)

// BenchmarkPressToComment measures the time from the owner's press of ✅
// Send (the update queued at the fake Telegram) to the comment request at
// the fake GitHub: long poll, decision, outbox, executor.
func BenchmarkPressToComment(b *testing.B) {
	h := start(b, setup{ownerID: owner.ID})
	var total time.Duration
	for i := 0; i < b.N; i++ {
		p := h.propose(fmt.Sprint("comment ", i))
		m := h.shown(p)
		before := len(h.gh.Created())
		t0 := time.Now()
		h.tg.Press(owner, owner.ID, m.ID, data(m, "Send"))
		// Poll the GitHub fake itself: waiting on Telegram's change signal
		// would measure up to the next Bot API call instead.
		deadline := t0.Add(time.Minute)
		for len(h.gh.Created()) == before {
			if time.Now().After(deadline) {
				b.Fatal("the comment never arrived")
			}
			time.Sleep(100 * time.Microsecond)
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/press")
}

// BenchmarkOutageDelivery1000 queues 1,000 notifications while Telegram
// is unreachable and measures the time from its return until all are
// delivered, in order, once.
func BenchmarkOutageDelivery1000(b *testing.B) {
	const n = 1000
	h := start(b, setup{ownerID: owner.ID})
	h.tg.WaitUntil(5*time.Second, func() bool { return len(h.tg.Commands()) > 0 })
	ctx := context.Background()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		h.tg.SetDown(true)
		before := h.tg.CountSent(owner.ID)
		for j := 0; j < n; j++ {
			if err := h.queue.Notify(ctx, notify.Message{Level: notify.Important, Key: fmt.Sprint(i, "-", j), Text: fmt.Sprint("note ", j)}); err != nil {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		h.tg.SetDown(false)
		if !h.tg.WaitUntil(2*time.Minute, func() bool { return h.tg.CountSent(owner.ID)-before >= n }) {
			b.Fatalf("only %d of %d delivered", h.tg.CountSent(owner.ID)-before, n)
		}
		total += time.Since(t0)
		sent := h.tg.SentTo(owner.ID)[before:]
		for j, m := range sent {
			if m.Text != fmt.Sprint("note ", j) {
				b.Fatalf("message %d is %q", j, m.Text)
			}
		}
		if len(sent) != n {
			b.Fatalf("%d delivered, want %d", len(sent), n)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/1000")
}
