package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

type locomoQA struct {
	Question string          `json:"question"`
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
	Answer   json.RawMessage `json:"answer"` // sometimes a number
}

type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	QA           []locomoQA                 `json:"qa"`
	Conversation map[string]json.RawMessage `json:"conversation"`
}

// locomoItems turns a conversation into one item per dialog turn, each
// timed at its session's date (turns a second apart, in order).
func locomoItems(t *testing.T, conv map[string]json.RawMessage) ([]*store.Item, time.Time) {
	t.Helper()
	var items []*store.Item
	var last time.Time
	for n := 1; ; n++ {
		raw, ok := conv[fmt.Sprintf("session_%d", n)]
		if !ok {
			break
		}
		var when string
		if err := json.Unmarshal(conv[fmt.Sprintf("session_%d_date_time", n)], &when); err != nil {
			t.Fatalf("session %d date: %v", n, err)
		}
		start, err := time.Parse("3:04 pm on 2 January, 2006", when)
		if err != nil {
			t.Fatalf("session %d date %q: %v", n, when, err)
		}
		var turns []locomoTurn
		if err := json.Unmarshal(raw, &turns); err != nil {
			t.Fatalf("session %d: %v", n, err)
		}
		for i, tr := range turns {
			body := tr.Text
			if tr.BlipCaption != "" {
				body += " [shares " + tr.BlipCaption + "]"
			}
			it := &store.Item{
				Source: "locomo", ExternalID: tr.DiaID, Kind: "message", Thread: fmt.Sprintf("D%d", n),
				Time: start.Add(time.Duration(i) * time.Second), Body: body,
				Sender: strings.ToLower(tr.Speaker), People: []string{tr.Speaker},
			}
			items = append(items, it)
			last = it.Time
		}
	}
	return items, last
}

// evidenceIDs splits evidence strings; a few are malformed ("D8:6; D9:17").
func evidenceIDs(ev []string) []string {
	var out []string
	for _, e := range ev {
		for _, f := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ' ' || r == ',' }) {
			if strings.HasPrefix(f, "D") && strings.Contains(f, ":") {
				out = append(out, f)
			}
		}
	}
	return out
}

var locomoKs = []int{5, 10, 25}

type recallSum struct {
	n   int
	sum [3]float64
}

func (r *recallSum) add(hits []Hit, evidence []string) {
	r.n++
	for ki, k := range locomoKs {
		if len(evidence) == 0 {
			r.sum[ki]++
			continue
		}
		top := map[string]bool{}
		for i := 0; i < len(hits) && i < k; i++ {
			top[hits[i].Item.ExternalID] = true
		}
		found := 0
		for _, e := range evidence {
			if top[e] {
				found++
			}
		}
		r.sum[ki] += float64(found) / float64(len(evidence))
	}
}

func (r recallSum) at(ki int) float64 {
	if r.n == 0 {
		return 0
	}
	return 100 * r.sum[ki] / float64(r.n)
}

// TestLoCoMoRecall imports each LoCoMo conversation into its own store,
// asks every question and measures recall@k of the evidence turns for
// keyword-only, vector-only and hybrid search, as the API serves them: a
// period a question names that holds no match is relaxed (Fallback).
//
// OMNIBRAIN_LOCOMO names another file of the same shape (the full
// locomo10.json, a held-out split) to measure instead of the dev split.
func TestLoCoMoRecall(t *testing.T) {
	path, dev := os.Getenv("OMNIBRAIN_LOCOMO"), false
	if path == "" {
		path, dev = testutil.SharedData(t, "locomo/locomo-dev.json"), true
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var samples []locomoSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		t.Fatal(err)
	}
	modes := []string{ModeFTS, ModeVector, ModeHybrid}
	results := map[string]map[int]*recallSum{}
	for _, m := range modes {
		results[m] = map[int]*recallSum{0: {}}
	}
	ctx := context.Background()
	for _, sample := range samples {
		items, last := locomoItems(t, sample.Conversation)
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), store.FileName), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
			t.Fatal(err)
		}
		vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
		if err := vec.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		for _, qa := range sample.QA {
			ev := evidenceIDs(qa.Evidence)
			for _, m := range modes {
				hits, err := New(vec.st, vec, nil).Search(ctx, Query{Text: qa.Question, Limit: 25, Mode: m, Now: last.Add(24 * time.Hour), Location: time.UTC, Fallback: true})
				if err != nil {
					t.Fatalf("%s %q: %v", m, qa.Question, err)
				}
				if results[m][qa.Category] == nil {
					results[m][qa.Category] = &recallSum{}
				}
				results[m][qa.Category].add(hits, ev)
				results[m][0].add(hits, ev)
			}
		}
		st.Close()
	}

	var cats []int
	for c := range results[ModeHybrid] {
		if c != 0 {
			cats = append(cats, c)
		}
	}
	sort.Ints(cats)
	names := map[int]string{0: "overall", 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
	var b strings.Builder
	fmt.Fprintf(&b, "\nLoCoMo recall@5/10/25 (%%) on %s, %d questions\n%-22s %-20s %-20s %-20s\n", filepath.Base(path), results[ModeHybrid][0].n, "category", "fts", "vector", "hybrid")
	for _, c := range append([]int{0}, cats...) {
		fmt.Fprintf(&b, "%-22s", names[c]+" ("+strconv.Itoa(results[ModeHybrid][c].n)+")")
		for _, m := range modes {
			r := results[m][c]
			fmt.Fprintf(&b, " %5.1f %5.1f %5.1f    ", r.at(0), r.at(1), r.at(2))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "DRAGON (paper, full benchmark): 56.7 66.2 76.7")
	t.Log(b.String())

	// Hybrid must beat keywords alone and be at least as good as the
	// better of the two halves it fuses.
	fts, vec, hyb := results[ModeFTS][0], results[ModeVector][0], results[ModeHybrid][0]
	for ki, k := range locomoKs {
		if hyb.at(ki) <= fts.at(ki) {
			t.Errorf("recall@%d: hybrid %.1f does not beat keywords alone %.1f", k, hyb.at(ki), fts.at(ki))
		}
		if hyb.at(ki) < vec.at(ki) {
			t.Errorf("recall@%d: hybrid %.1f is below vectors alone %.1f", k, hyb.at(ki), vec.at(ki))
		}
	}
	// Floors a few points under today's numbers (hybrid 70.5 79.0 86.5,
	// fts 61.8 70.7 78.0, vector 68.2 75.0 82.4; hybrid multi-hop 28.4
	// 41.0 59.4): a regression in query handling, the embedder, fusion or
	// preferAnswers (expand.go) shows up here. Before issue 16's round 3:
	// hybrid 65.6 78.0 84.9, fts 55.1 64.3 74.0, vector 64.0 74.0 82.2,
	// multi-hop 22.2 37.3 52.7.
	floors := map[string][3]float64{ModeHybrid: {67, 76, 84}, ModeFTS: {58, 67, 74}, ModeVector: {65, 72, 79}}
	multiHop := [3]float64{26, 38, 56} // hybrid
	if !dev {
		return // the floors are the dev split's
	}
	for m, f := range floors {
		for ki, k := range locomoKs {
			if got := results[m][0].at(ki); got < f[ki] {
				t.Errorf("%s recall@%d = %.1f, below the floor %.0f", m, k, got, f[ki])
			}
		}
	}
	for ki, k := range locomoKs {
		if got := results[ModeHybrid][1].at(ki); got < multiHop[ki] {
			t.Errorf("hybrid multi-hop recall@%d = %.1f, below the floor %.0f", k, got, multiHop[ki])
		}
	}
}
