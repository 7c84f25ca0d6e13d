package graph_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/store"
)

func openChains(t *testing.T) *graph.Chains {
	t.Helper()
	now := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{Now: func() time.Time {
		now = now.Add(time.Second)
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return graph.NewChains(st)
}

// A mail's chain advances stage by stage; skipping one, or taking both
// alternatives, is refused and leaves the chain as it was.
func TestLifecycleGates(t *testing.T) {
	ctx := context.Background()
	c := openChains(t)
	mail := graph.ItemSubject(42)
	advance := func(stage string, evidence ...int64) error {
		return c.Advance(ctx, graph.Stage{Subject: mail, Chain: graph.Mail, Name: stage, Evidence: evidence})
	}
	if err := advance(graph.ReplyDrafted); !errors.Is(err, graph.ErrOutOfOrder) {
		t.Fatalf("a reply drafted before anything else: %v", err)
	}
	for _, s := range []string{graph.Received, graph.Classified} {
		if err := advance(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := advance(graph.ReplyDrafted); !errors.Is(err, graph.ErrOutOfOrder) || !strings.Contains(err.Error(), "before it is context gathered") {
		t.Fatalf("a reply drafted without context: %v", err)
	}
	if err := advance(graph.ContextGathered, 7, 9); err != nil {
		t.Fatal(err)
	}
	if err := advance(graph.ContextGathered, 1); err != nil {
		t.Fatalf("recording a stage again: %v", err)
	}
	if err := advance(graph.ReplyDrafted); err != nil {
		t.Fatal(err)
	}
	if err := advance(graph.NoReplyNeeded); !errors.Is(err, graph.ErrOutOfOrder) {
		t.Fatalf("both alternatives: %v", err)
	}
	stages, err := c.Of(ctx, mail)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stages {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "received,classified,context_gathered,reply_drafted" {
		t.Fatalf("chain %s", got)
	}
	if ev := stages[2].Evidence; len(ev) != 2 || ev[0] != 7 || ev[1] != 9 {
		t.Errorf("the first record's evidence was not kept: %v", ev)
	}
	if ok, _ := c.Has(ctx, mail, graph.ContextGathered); !ok {
		t.Error("Has misses a recorded stage")
	}
	if ok, _ := c.Has(ctx, graph.ItemSubject(43), graph.Received); ok {
		t.Error("Has finds a stage of another subject")
	}
	text := graph.Render(stages, time.UTC)
	if !strings.HasPrefix(text, "received → classified → context gathered → reply drafted\n") || !strings.Contains(text, "items 7, 9") {
		t.Errorf("rendered:\n%s", text)
	}
	if err := c.Advance(ctx, graph.Stage{Subject: mail, Chain: "mail", Name: "sent"}); err == nil {
		t.Error("an unknown stage was recorded")
	}
}

// A chain reads in the order its stages were reached, whatever their
// times say: a GitHub item is reported at its own time, which a skewed
// server clock can put after the analysis made here.
func TestChainOrderIsTheOrderReached(t *testing.T) {
	ctx := context.Background()
	c := openChains(t)
	pr := graph.ItemSubject(7)
	later := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC) // an hour ahead of the store's clock
	for _, s := range []graph.Stage{
		{Subject: pr, Chain: graph.Issue, Name: graph.Reported, At: later},
		{Subject: pr, Chain: graph.Issue, Name: graph.Analysed},
		{Subject: pr, Chain: graph.Issue, Name: graph.CommentProposed},
	} {
		if err := c.Advance(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	stages, err := c.Of(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.SplitN(graph.Render(stages, time.UTC), "\n", 2)[0]; got != "reported → analysed → comment proposed" {
		t.Errorf("chain %q", got)
	}
	if !stages[0].At.Equal(later) {
		t.Errorf("reported at %v, want the item's own time %v", stages[0].At, later)
	}
}
