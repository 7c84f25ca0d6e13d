package proactive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/store"
)

// benchItems is how many items the briefing benchmark stores.
const benchItems = 100_000

// bigStore is a store with benchItems items, built once per test binary
// (it takes a while) and removed by TestMain.
var bigStore struct {
	once sync.Once
	dir  string
	st   *store.Store
	now  time.Time
	err  error
}

func closeBigStore() {
	if bigStore.st != nil {
		bigStore.st.Close()
	}
	if bigStore.dir != "" {
		os.RemoveAll(bigStore.dir)
	}
}

// openBigStore returns the store of a busy owner after a year: about
// 88,000 mails (one in six the owner's own, in threads, with their triage
// decisions), 3,000 calendar events and 9,000 GitHub items, generated
// deterministically through the store package.
func openBigStore(b *testing.B) (*store.Store, time.Time) {
	b.Helper()
	bigStore.once.Do(func() {
		bigStore.now = time.Date(2024, 3, 14, 7, 0, 0, 0, houston) // a Thursday morning
		bigStore.dir, bigStore.err = os.MkdirTemp("", "omnibrain-briefing-bench-")
		if bigStore.err != nil {
			return
		}
		now := func() time.Time { return bigStore.now }
		bigStore.st, bigStore.err = store.Open(context.Background(), filepath.Join(bigStore.dir, store.FileName), store.Options{Now: now})
		if bigStore.err == nil {
			bigStore.err = fillBigStore(context.Background(), bigStore.st, bigStore.now)
		}
	})
	if bigStore.err != nil {
		b.Fatal(bigStore.err)
	}
	return bigStore.st, bigStore.now
}

func fillBigStore(ctx context.Context, st *store.Store, end time.Time) error {
	if err := st.AddOwnerAddresses(ctx, "config", ownerAddr); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(6, 100_000))
	start := end.AddDate(-1, 0, 0)
	span := end.Sub(start)
	const events, github = 3_000, 9_000
	mails := benchItems - events - github
	people := make([]string, 2000)
	for i := range people {
		people[i] = fmt.Sprintf("person%04d@example.com", i)
	}
	lists := make([]string, 60)
	for i := range lists {
		lists[i] = fmt.Sprintf("news%02d@lists.example.org", i)
	}
	type thread struct {
		id, subject, with string
		n                 int
	}
	var threads []*thread
	decisions := []string{"ignore", "ignore", "ignore", "notify", "notify", "respond"}
	levels := map[string]string{"ignore": "silent", "notify": "fyi", "respond": "important"}
	batch := 1000
	for first := 0; first < mails; first += batch {
		err := st.Tx(ctx, func(tx *store.Tx) error {
			for i := first; i < min(first+batch, mails); i++ {
				when := start.Add(span / time.Duration(mails) * time.Duration(i))
				var th *thread
				switch r := rng.IntN(10); {
				case r < 4 || len(threads) == 0:
					th = &thread{id: fmt.Sprintf("t%06d", i), subject: fmt.Sprintf("Topic %d", i), with: people[rng.IntN(len(people))]}
					if r == 0 {
						th.with = lists[rng.IntN(len(lists))]
					}
					threads = append(threads, th)
				default:
					th = threads[max(0, len(threads)-1-rng.IntN(min(len(threads), 300)))]
				}
				th.n++
				outbound := th.n > 1 && rng.IntN(3) == 0 && th.with[:4] != "news"
				from, to := th.with, ownerAddr
				if outbound {
					from, to = ownerAddr, th.with
				}
				subject := th.subject
				if th.n > 1 {
					subject = "Re: " + subject
				}
				id := fmt.Sprintf("m%06d@example.com", i)
				it := &store.Item{Source: "gmail", ExternalID: id, Kind: "email", Thread: th.id, Time: when, Title: subject,
					Body: fmt.Sprintf("Message %d about %s. Could you take a look by Friday?", i, th.subject), Sender: from, People: []string{from, to},
					Meta: map[string]any{"message_id": id, "from": from, "to": []string{to}, "labels": []string{"INBOX"}, "outbound": outbound}}
				res, err := tx.UpsertMail(it, store.Mail{MessageID: id, From: store.Address{Email: from}, To: []store.Address{{Email: to}}, Outbound: outbound}, store.UpsertOptions{})
				if err != nil {
					return err
				}
				tr := &store.Triage{ItemID: res.ID, Decision: "ignore", Category: "outbound", Level: "silent", ItemTime: when,
					Factors: []store.Factor{{Name: "base", Points: 40, Detail: "starting point"}}, Reason: "generated"}
				if !outbound {
					tr.Decision = decisions[rng.IntN(len(decisions))]
					tr.Category, tr.Level, tr.Score = "personal", levels[tr.Decision], 30+rng.IntN(60)
					if th.with[:4] == "news" {
						tr.Decision, tr.Category, tr.Level, tr.Score = "ignore", "bulk", "silent", 5
					}
				}
				if err := tx.SaveTriage(tr); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("mails from %d: %w", first, err)
		}
	}
	var items []*store.Item
	for i := range events {
		s := start.Add(span / events * time.Duration(i)).Truncate(time.Hour).Add(time.Duration(8+rng.IntN(9)) * time.Hour)
		with := people[rng.IntN(200)]
		items = append(items, &store.Item{Source: "calendar", ExternalID: fmt.Sprintf("ev%05d", i), Kind: "event", Time: s, Title: fmt.Sprintf("Meeting %d", i),
			People: []string{ownerAddr, with}, Meta: map[string]any{"start": s.Format(time.RFC3339), "end": s.Add(time.Hour).Format(time.RFC3339), "status": "confirmed",
				"attendees": []any{map[string]any{"email": ownerAddr, "self": true, "response_status": "accepted"}, map[string]any{"email": with, "response_status": "accepted"}}}})
	}
	reasons := []string{"review_requested", "mention", "subscribed", "author", "assign", "comment"}
	for i := range github {
		when := start.Add(span / github * time.Duration(i))
		items = append(items, &store.Item{Source: "github", ExternalID: fmt.Sprintf("notif:%d", i), Kind: "notification", Time: when,
			Title: fmt.Sprintf("Pull request %d", i), Meta: map[string]any{"reason": reasons[rng.IntN(len(reasons))], "state": "open",
				"url": fmt.Sprintf("https://github.com/example/repo/pull/%d", i)}})
	}
	for first := 0; first < len(items); first += batch {
		if _, err := st.UpsertItems(ctx, items[first:min(first+batch, len(items))], store.UpsertOptions{}); err != nil {
			return fmt.Errorf("events and GitHub items: %w", err)
		}
	}
	return nil
}

// BenchmarkBriefing100k times making each briefing (gathering its data
// from the store and rendering it, with no model) over 100,000 stored items.
func BenchmarkBriefing100k(b *testing.B) {
	st, now := openBigStore(b)
	e, err := New(Options{Store: st, Owner: config.Owner{Emails: []string{ownerAddr}}, Location: houston, Schedule: config.Default("").Schedule,
		Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, kind := range []string{KindMorning, KindEvening, KindWeekly} {
		b.Run(kind, func(b *testing.B) {
			at := now
			if kind == KindEvening {
				at = now.Add(15 * time.Hour) // 22:00
			}
			e.o.Now = func() time.Time { return at }
			var text string
			for b.Loop() {
				d, err := e.gather(ctx, kind, e.dayKey(kind, at), at, time.Time{}, schedule.Run{Scheduled: at})
				if err != nil {
					b.Fatal(err)
				}
				text = Render(d, houston)
			}
			if len(text) < 200 {
				b.Fatalf("a %s briefing of %d bytes over %d items:\n%s", kind, len(text), benchItems, text)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/briefing")
		})
	}
}
