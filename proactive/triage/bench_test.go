package triage

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

// benchMail is the SpamAssassin ham and spam of easy-ham-1 and spam-1
// (3,000 messages delivered to one mailbox), parsed once for the benchmarks.
var benchMail struct {
	once  sync.Once
	items []*store.Item
	mails []store.Mail
	err   error
}

func loadBenchMail(b *testing.B) ([]*store.Item, []store.Mail) {
	b.Helper()
	root := testutil.SharedData(b, "mail/spamassassin/data")
	benchMail.once.Do(func() {
		for _, set := range []string{"easy-ham-1", "spam-1"} {
			entries, err := os.ReadDir(filepath.Join(root, set))
			if err != nil {
				benchMail.err = err
				return
			}
			for _, e := range entries {
				raw, err := os.ReadFile(filepath.Join(root, set, e.Name()))
				if err != nil {
					benchMail.err = err
					return
				}
				msg, err := mailparse.Parse(raw)
				if err != nil {
					continue
				}
				it, m := msg.Item(mailparse.ItemOptions{Source: "maildir", ExternalID: set + "/" + e.Name()})
				benchMail.items = append(benchMail.items, it)
				benchMail.mails = append(benchMail.mails, m)
			}
		}
	})
	if benchMail.err != nil {
		b.Fatal(benchMail.err)
	}
	return benchMail.items, benchMail.mails
}

// BenchmarkTriageHeuristic is triage's throughput with no model, in mails
// per second (wall and CPU time): "score" is the scoring alone (text signals, deadlines,
// categories) on mail already read; "pass" is the whole path a collected
// mail takes: its event read from the log, the sender's and thread's
// history looked up, the decision scored, stored and the event
// acknowledged.
func BenchmarkTriageHeuristic(b *testing.B) {
	items, mails := loadBenchMail(b)
	b.Run("score", func(b *testing.B) {
		ms := make([]Mail, len(items))
		for i, it := range items {
			ms[i] = MailFromItem(it)
		}
		c := Context{Owner: spamAssassinOwner, Location: houston}
		n := 0
		before := cpuTime()
		for b.Loop() {
			Score(ms[n%len(ms)], c)
			n++
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "mails/s")
		b.ReportMetric(float64(n)/(cpuTime()-before).Seconds(), "mails/cpu-s")
	})
	b.Run("pass", func(b *testing.B) {
		ctx := context.Background()
		triaged := 0
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			st, err := store.Open(ctx, filepath.Join(b.TempDir(), store.FileName), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.AddOwnerAddresses(ctx, "config", spamAssassinOwner...); err != nil {
				b.Fatal(err)
			}
			err = st.Tx(ctx, func(tx *store.Tx) error {
				for j, it := range items {
					if _, err := tx.UpsertMail(it, mails[j], store.UpsertOptions{Event: true}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			// Decided now, as a live mailbox's mail is: nothing is stale.
			last := items[len(items)-1].Time
			tr, err := New(Options{Store: st, Owner: spamAssassinOwner, Location: houston, Now: func() time.Time { return last }, StaleAfter: 100 * 365 * 24 * time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			before := cpuTime()
			b.StartTimer()
			s, err := tr.Pass(ctx)
			b.StopTimer()
			cpu += cpuTime() - before
			if err != nil {
				b.Fatal(err)
			}
			if s.Triaged != len(items) {
				b.Fatalf("triaged %d of %d", s.Triaged, len(items))
			}
			triaged += s.Triaged
			st.Close()
		}
		b.ReportMetric(float64(triaged)/b.Elapsed().Seconds(), "mails/s")
		b.ReportMetric(float64(triaged)/cpu.Seconds(), "mails/cpu-s")
	})
}

// cpuTime is the CPU time the process has used: a machine shared with
// other work disturbs it less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
