package github

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	fake "github.com/omnibrain/omnibrain/internal/fakes/github"
	"github.com/omnibrain/omnibrain/internal/testutil"
)

// BenchmarkIdlePollCycle measures one pass when nothing changed: every
// request is conditional and answered 304 (notifications by
// If-Modified-Since, the searches and the own pull requests' checks by
// ETag), and nothing is written to the store. "fake" includes the
// in-process fake server's work (it renders each answer to compute the
// ETag, as GitHub does); "client" replays the server's 304s from memory,
// leaving only the collector's own cost. cpu-µs/op is the process's CPU
// per pass (with "fake", the fake server's included).
func BenchmarkIdlePollCycle(b *testing.B) {
	for _, size := range []struct {
		name                  string
		notes, issues, ownPRs int
	}{
		{"empty", 0, 0, 0},
		{"typical", 20, 30, 5},
	} {
		for _, mode := range []string{"fake", "client"} {
			b.Run(size.name+"/"+mode, func(b *testing.B) {
				h := newHarness(b, fake.Options{CoreLimit: 1 << 30, SearchLimit: 1 << 30})
				for i := range size.notes {
					h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: i + 1, Title: fmt.Sprintf("n%d", i), Reason: "mention"})
				}
				for i := range size.issues {
					h.fake.AddIssue(fake.Issue{Repo: "acme/web", Title: fmt.Sprintf("i%d", i), Author: "bob", Assignees: []string{"owner"}, Mentions: []string{"owner"}})
				}
				for i := range size.ownPRs {
					sha := fmt.Sprintf("%040d", i)
					h.fake.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: fmt.Sprintf("pr%d", i), Author: "owner", HeadSHA: sha})
					h.fake.SetCheckRuns(sha, fake.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
				}
				rt := &replay304{next: h.fake.Client().Transport, on: mode == "client"}
				client, err := NewClient(h.fake.URL(), "ghp_test", &http.Client{Transport: rt})
				if err != nil {
					b.Fatal(err)
				}
				h.col, err = New(Options{Client: client, Store: h.store, Now: h.clk.Now, Sleep: h.sleep.Sleep})
				if err != nil {
					b.Fatal(err)
				}
				h.collect(b)
				h.clk.Add(2 * time.Minute)
				h.collect(b) // the first 304s, which replay304 remembers
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				cpu := testutil.CPUTime()
				for range b.N {
					h.clk.Add(2 * time.Minute)
					res, err := h.col.Collect(ctx)
					if err != nil || res.Stored != 0 {
						b.Fatalf("idle pass: stored %d, %v", res.Stored, err)
					}
				}
				b.ReportMetric(float64((testutil.CPUTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

// replay304 remembers the 304 answers per URL and, when on, serves them
// again without a round trip.
type replay304 struct {
	next http.RoundTripper
	on   bool
	mu   sync.Mutex
	seen map[string]http.Header
}

func (r *replay304) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.URL.String()
	r.mu.Lock()
	hdr, ok := r.seen[key]
	r.mu.Unlock()
	if ok && r.on {
		return &http.Response{StatusCode: http.StatusNotModified, Status: "304 Not Modified", Header: hdr.Clone(),
			Body: io.NopCloser(strings.NewReader("")), Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusNotModified {
		r.mu.Lock()
		if r.seen == nil {
			r.seen = map[string]http.Header{}
		}
		r.seen[key] = resp.Header.Clone()
		r.mu.Unlock()
	}
	return resp, err
}
