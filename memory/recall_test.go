package memory

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

// recall counts questions whose evidence is among the first k facts.
type recall struct{ at5, at10, n int }

func (r *recall) add(ranked []*Fact, evidence map[int64]bool) {
	r.n++
	for i, f := range ranked {
		if i == 10 {
			break
		}
		if evidence[f.ID] {
			if i < 5 {
				r.at5++
			}
			r.at10++
			return
		}
	}
}

func (r recall) pct(hits int) float64 { return 100 * float64(hits) / float64(r.n) }

// Fact recall on LoCoMo: the facts are the observations LoCoMo wrote for
// each conversation (about 170 to 340 a conversation), the questions are
// its answerable questions, and a question is answered when a fact drawn
// from one of its evidence turns ranks among the first 5 (or 10). Ranking
// by word overlap fused with chromem-go similarity must recall at least
// as many as word overlap alone.
func TestFactRecallLoCoMo(t *testing.T) {
	raw, err := os.ReadFile(testutil.SharedData(t, "locomo/locomo-dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		Observation map[string]map[string][][]json.RawMessage `json:"observation"`
		QA          []struct {
			Question string   `json:"question"`
			Evidence []string `json:"evidence"`
			Category int      `json:"category"`
		} `json:"qa"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	// An observation is [text, turn] or [text, [turn, …]].
	parse := func(o []json.RawMessage) (text string, turns []string) {
		if len(o) != 2 || json.Unmarshal(o[0], &text) != nil {
			t.Fatalf("observation %s", o)
		}
		var one string
		if json.Unmarshal(o[1], &one) == nil {
			return text, []string{one}
		}
		if err := json.Unmarshal(o[1], &turns); err != nil {
			t.Fatalf("observation %s: %v", o, err)
		}
		return text, turns
	}
	ctx := context.Background()
	var words, fused recall
	for _, c := range convs {
		type obs struct {
			text  string
			turns []string
		}
		var all []obs
		for _, speakers := range c.Observation {
			for _, list := range speakers {
				for _, o := range list {
					text, turns := parse(o)
					all = append(all, obs{text, turns})
				}
			}
		}
		// Map order is random: ids by text keep the run repeatable.
		sort.Slice(all, func(i, j int) bool {
			return all[i].text+strings.Join(all[i].turns, ",") < all[j].text+strings.Join(all[j].turns, ",")
		})
		facts := make([]*Fact, len(all))
		byTurn := map[string][]int64{}
		for i, o := range all {
			facts[i] = &Fact{ID: int64(i + 1), Text: o.text, State: Active}
			for _, turn := range o.turns {
				byTurn[turn] = append(byTurn[turn], facts[i].ID)
			}
		}
		idx, err := newFactIndex(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.sync(ctx, facts); err != nil {
			t.Fatal(err)
		}
		for _, qa := range c.QA {
			if qa.Category == 5 { // adversarial: no answer in the conversation
				continue
			}
			evidence := map[int64]bool{}
			for _, turn := range qa.Evidence {
				for _, id := range byTurn[turn] {
					evidence[id] = true
				}
			}
			if len(evidence) == 0 {
				continue
			}
			similar, err := idx.rank(ctx, qa.Question)
			if err != nil {
				t.Fatal(err)
			}
			words.add(Relevant(facts, qa.Question, 10), evidence)
			fused.add(relevant(facts, qa.Question, similar, 10), evidence)
		}
	}
	if words.n < 100 {
		t.Fatalf("only %d questions with evidence among the facts", words.n)
	}
	t.Logf("%d questions: words R@5 %.1f%% R@10 %.1f%%; words+chromem-go R@5 %.1f%% R@10 %.1f%%",
		words.n, words.pct(words.at5), words.pct(words.at10), fused.pct(fused.at5), fused.pct(fused.at10))
	if fused.at5 < words.at5 || fused.at10 < words.at10 {
		t.Errorf("fused ranking recalls less than word overlap: R@5 %d < %d or R@10 %d < %d of %d",
			fused.at5, words.at5, fused.at10, words.at10, words.n)
	}
}
