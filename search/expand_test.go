package search

import (
	"context"
	"encoding/json"
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

func TestDiscountAsking(t *testing.T) {
	cands := func() []*candidate {
		return []*candidate{
			{id: 1, score: 1.2, item: &store.Item{Body: "Wow! Did you see that band?"}},
			{id: 2, score: 1.0, item: &store.Item{Body: "We saw the band Summer Sounds play pop songs."}},
			{id: 3, score: -1.5, item: &store.Item{Body: "What band was it?"}}, // bm25-like: lower is worse
		}
	}
	for _, tc := range []struct {
		query string
		want  []float64
	}{
		{"band summer", []float64{1.2, 1.0, -1.5}},                    // keywords: nothing changes
		{"Which band did she see?", []float64{0.84, 1.0, -1.5 / 0.7}}, // the items that only ask fall
	} {
		cs := cands()
		discountAsking(cs, tc.query)
		for i, c := range cs {
			if math.Abs(c.score-tc.want[i]) > 1e-9 {
				t.Errorf("%q: candidate %d scored %v, want %v", tc.query, c.id, c.score, tc.want[i])
			}
		}
	}
}

// TestQuestionsFindTheAnswerNotTheQuestion asks LoCoMo questions (as the
// set words them, naming the wrong speaker) whose
// words are those of a turn that asks the same thing: the turn that
// answers must rank above it in hybrid search, as the API serves it.
// Before askingDiscount, each question turn ranked first.
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
	for _, tc := range []struct{ question, answer, asks string }{
		{"Why did Melanie choose the adoption agency?", "D2:12", "D2:11"},            // "What made you pick it?"
		{"What does Melanie's necklace symbolize?", "D4:3", "D4:2"},                  // "Love the necklace, any special meaning to it?"
		{"What is Melanie excited about in her adoption process?", "D2:14", "D2:13"}, // "Anything you're excited for in the adoption process?"
	} {
		hits, err := s.Search(context.Background(), Query{Text: tc.question, Limit: 25, Now: last.Add(24 * time.Hour), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		got := ids(hits)
		a, q := slices.Index(got, tc.answer), slices.Index(got, tc.asks)
		if a < 0 || (q >= 0 && q < a) {
			t.Errorf("%q: answer %s at %d, the turn asking %s at %d (0-based; -1 missing): %v", tc.question, tc.answer, a, tc.asks, q, got[:min(5, len(got))])
		}
	}
}

// BenchmarkDiscountAsking measures what discountAsking adds to a search:
// the candidates of a 10-hit search (40), mail-sized bodies (2 KiB, each
// with a question mark), for a question (every body is read) and for
// keywords (none is).
func BenchmarkDiscountAsking(b *testing.B) {
	items := newSynthMail(1).items(40)
	for _, it := range items {
		it.Body = "Can we talk about this? " + it.Body
		for len(it.Body) < 2048 {
			it.Body += " " + it.Body
		}
	}
	for _, query := range []string{"What did they decide about the budget?", "budget decision"} {
		b.Run(query, func(b *testing.B) {
			cands := make([]*candidate, len(items))
			for b.Loop() {
				for i, it := range items {
					cands[i] = &candidate{id: int64(i), score: 1 / float64(60+i), item: it}
				}
				discountAsking(cands, query)
			}
		})
	}
}
