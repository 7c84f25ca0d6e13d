package search

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

func TestIsQuestion(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"What did Caroline research?", true},
		{"why did melanie choose the adoption agency", true},
		{"Did Jon and Gina both participate in dance competitions", true},
		{"adoption agency", false},
		{"capital allocation last week", false},
		{"agency?", true},
		{"", false},
	} {
		if got := isQuestion(tc.q); got != tc.want {
			t.Errorf("isQuestion(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestQuestionFocus(t *testing.T) {
	for in, want := range map[string]string{
		"What kind of art does Caroline make?":  "What art does Caroline make?",
		"which TYPES of pottery have they made": "which pottery have they made",
		"What sort of music?":                   "What music?",
		"kind words from Rick":                  "kind words from Rick",
		"what is the type of contract":          "what is the type of contract",
	} {
		if got := questionFocus(in); got != want {
			t.Errorf("questionFocus(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMostlyAsks(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Wow, that agency looks great! What made you pick it?", true},
		{"Wow! Did you see that band?", true},
		{"Can you send me the Q3 numbers by Friday?", true},
		{"I chose them 'cause they help LGBTQ+ folks with adoption. Their inclusivity and support really spoke to me.", false},
		// An answer that ends by asking back is still an answer.
		{"Yeah, I'm really lucky to have them. They've been there through everything, I've known these friends for 4 years, since I moved from my home country. Who supports you, Mel?", false},
		{"No question here", false},
		{"", false},
	} {
		if got := mostlyAsks(tc.text); got != tc.want {
			t.Errorf("mostlyAsks(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestPreferAnswers(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	msg := func(id, thread string, min int, body string) *store.Item {
		return &store.Item{Source: "chat", ExternalID: id, Kind: "message", Thread: thread, Time: at.Add(time.Duration(min) * time.Minute), Body: body}
	}
	if _, err := st.UpsertItems(ctx, []*store.Item{
		msg("ask", "t1", 0, "Wow! Did you see that band?"),
		msg("reply", "t1", 1, "Yes! Summer Sounds played pop songs all night."),
		msg("other", "t2", 0, "The band was loud."),
		msg("last", "t2", 1, "What band was it?"), // asks, and nothing answers it
	}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*store.Item{}
	for _, name := range []string{"ask", "reply", "other", "last"} {
		it, err := st.ItemByExternalID(ctx, "chat", name)
		if err != nil {
			t.Fatal(err)
		}
		byName[name] = it
	}
	s := New(st, nil, nil)
	for _, tc := range []struct {
		query string
		want  map[string]float64
	}{
		// Keywords: nothing changes.
		{"band summer", map[string]float64{"ask": 1.2, "reply": 0.5, "other": 1.0, "last": -1.5}},
		// A question: the reply takes its question's score, the
		// messages that only ask fall (a bm25-like negative score too).
		{"Which band did she see?", map[string]float64{"ask": 0.84, "reply": 1.2, "other": 1.0, "last": -1.5 / 0.7}},
	} {
		var cands []*candidate
		for _, name := range []string{"ask", "reply", "other", "last"} {
			score := map[string]float64{"ask": 1.2, "reply": 0.5, "other": 1.0, "last": -1.5}[name]
			cands = append(cands, &candidate{id: byName[name].ID, score: score, item: byName[name]})
		}
		if _, err := s.preferAnswers(ctx, &plan{q: Query{Text: tc.query}, where: "1"}, cands); err != nil {
			t.Fatal(err)
		}
		for _, c := range cands {
			if want := tc.want[c.item.ExternalID]; math.Abs(c.score-want) > 1e-9 {
				t.Errorf("%q: %s scored %v, want %v", tc.query, c.item.ExternalID, c.score, want)
			}
		}
	}
}

// TestPreferAnswersAddsTheReply: a reply that was no candidate joins as
// found like its question, unless the search's filters leave it out.
func TestPreferAnswersAddsTheReply(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	if _, err := st.UpsertItems(ctx, []*store.Item{
		{Source: "chat", ExternalID: "ask", Kind: "message", Thread: "t1", Time: at, Body: "Which band did you see?"},
		{Source: "chat", ExternalID: "reply", Kind: "message", Thread: "t1", Time: at.Add(24 * time.Hour), Body: "Summer Sounds, a pop group."},
	}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	ask, err := st.ItemByExternalID(ctx, "chat", "ask")
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, nil, nil)
	for _, tc := range []struct {
		name      string
		where     string
		args      []any
		wantReply bool
	}{
		{"no filter", "1", nil, true},
		{"a period without the reply", "i.time < ?", []any{at.Add(time.Hour).UnixMilli()}, false},
	} {
		cands := []*candidate{{id: ask.ID, score: 0.03, ftsRank: 2, vecRank: 5, item: ask}}
		got, err := s.preferAnswers(ctx, &plan{q: Query{Text: "What band did she see?"}, where: tc.where, args: tc.args}, cands)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.wantReply {
			if len(got) != 1 {
				t.Errorf("%s: %d candidates, want only the question", tc.name, len(got))
			}
			continue
		}
		if len(got) != 2 || got[1].item.ExternalID != "reply" {
			t.Fatalf("%s: candidates %v, want the reply added", tc.name, got)
		}
		if r := got[1]; r.score != 0.03 || r.ftsRank != 2 || r.vecRank != 5 {
			t.Errorf("%s: reply score %v ranks %d/%d, want its question's 0.03, 2/5", tc.name, r.score, r.ftsRank, r.vecRank)
		}
		if got[0].score >= got[1].score {
			t.Errorf("%s: question %v not below its reply %v", tc.name, got[0].score, got[1].score)
		}
	}
}

// TestQuestionsFindTheAnswerNotTheQuestion asks LoCoMo questions (as the
// set words them, naming the wrong speaker) whose
// words are those of a turn that asks the same thing: the turn that
// answers must rank above it in hybrid search, as the API serves it.
// Before preferAnswers, each question turn ranked first.
func TestQuestionsFindTheAnswerNotTheQuestion(t *testing.T) {
	raw, err := os.ReadFile(testutil.SharedData(t, "locomo/locomo-dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	var samples []locomoSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		t.Fatal(err)
	}
	items, last := locomoItems(t, samples[0].Conversation) // Caroline and Melanie
	s := newSearchFixture(t, items).s
	search := func(question string) []string {
		t.Helper()
		hits, err := s.Search(context.Background(), Query{Text: question, Limit: 25, Now: last.Add(24 * time.Hour), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		return ids(hits)
	}
	for _, tc := range []struct{ question, answer, asks string }{
		{"Why did Melanie choose the adoption agency?", "D2:12", "D2:11"},            // "What made you pick it?"
		{"What does Melanie's necklace symbolize?", "D4:3", "D4:2"},                  // "Love the necklace, any special meaning to it?"
		{"What is Melanie excited about in her adoption process?", "D2:14", "D2:13"}, // "Anything you're excited for in the adoption process?"
	} {
		got := search(tc.question)
		a, q := slices.Index(got, tc.answer), slices.Index(got, tc.asks)
		if a < 0 || (q >= 0 && q < a) {
			t.Errorf("%q: answer %s at %d, the turn asking %s at %d (0-based; -1 missing): %v", tc.question, tc.answer, a, tc.asks, q, got[:min(5, len(got))])
		}
	}
	// "What kind of art": the frame's "kind" matched "Your kind words
	// mean a lot" (D4:17), the first hit before questionFocus.
	if got := search("What kind of art does Caroline make?"); slices.Contains(got[:min(10, len(got))], "D4:17") {
		t.Errorf("what kind of art: the kind words turn D4:17 is in the top 10: %v", got[:10])
	}
}

// BenchmarkPreferAnswers measures what preferAnswers adds to a search:
// the candidates of a 10-hit search (40) in 8 threads, mail-sized bodies
// (2 KiB), for a question where every candidate asks (each body read,
// the replies looked up) and for keywords (nothing done).
func BenchmarkPreferAnswers(b *testing.B) {
	st := openTest(b)
	ctx := context.Background()
	items := newSynthMail(1).items(40)
	for i, it := range items {
		it.Thread = fmt.Sprint(i % 8)
		it.Body = "Can we talk about this? " + it.Body
		for len(it.Body) < 2048 {
			it.Body += " " + it.Body
		}
	}
	if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		b.Fatal(err)
	}
	stored := make([]*store.Item, len(items))
	for i, it := range items {
		var err error
		if stored[i], err = st.ItemByExternalID(ctx, it.Source, it.ExternalID); err != nil {
			b.Fatal(err)
		}
	}
	s := New(st, nil, nil)
	for _, query := range []string{"What did they decide about the budget?", "budget decision"} {
		b.Run(query, func(b *testing.B) {
			cands := make([]*candidate, len(stored))
			for b.Loop() {
				for i, it := range stored {
					cands[i] = &candidate{id: it.ID, score: 1 / float64(60+i), item: it}
				}
				if _, err := s.preferAnswers(ctx, &plan{q: Query{Text: query}, where: "1"}, cands); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
