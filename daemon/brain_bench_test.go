package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/graph"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Background runs against an instant fake model: what a run costs beyond
// the model (the agent's overhead) and how many replies the daemon's
// drafting runs write per minute when the model takes no time.

// openBrainBench opens the daemon (not running its loops: the benchmark
// starts the runs) with an instant OpenAI fake, and imports n mails that
// ask the owner something, each from one of 20 senders.
func openBrainBench(b *testing.B, n int) (*App, []*store.Item) {
	b.Helper()
	model := fakellm.NewOpenAI(b)
	model.Respond(func(r fakellm.Request) fakellm.Turn {
		if isDraftRun(r) {
			return proposeReplyTurn("Hi,\n\nthanks, I will look at the numbers today.\n\nOwen")
		}
		return fakellm.Turn{Text: "A quiet day: two replies wait for your approval."}
	})
	cfg := config.Default(b.TempDir())
	cfg.Owner = config.Owner{Name: "Owen Owner", Emails: []string{owen}}
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey = "openai", model.URL, "gpt-bench", "sk-bench"
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	app, err := Open(ctx, cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { app.Close() })
	if n == 0 {
		return app, nil
	}
	dir := filepath.Join(b.TempDir(), "mail", "cur")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-time.Duration(n+1) * time.Minute)
	for i := range n {
		from := fmt.Sprintf("Sender %d <sender%d@partner.example>", i%20, i%20)
		raw := rawMessage(from, "Owen Owner <"+owen+">", fmt.Sprintf("Numbers %d", i), fmt.Sprintf("<numbers-%d@partner.example>", i),
			start.Add(time.Duration(i)*time.Minute), fmt.Sprintf("Hi Owen,\n\ncan you confirm the numbers for project %d by Friday?\n\nThanks", i))
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), raw, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	c, stop := api.NewInProcessClient(app.Handler())
	defer stop()
	if _, err := c.Import(ctx, api.ImportRequest{Format: "maildir", Path: filepath.Dir(dir)}, nil); err != nil {
		b.Fatal(err)
	}
	items, err := app.Store().ItemsBetween(ctx, []string{"email"}, start.Add(-time.Minute), time.Now(), n)
	if err != nil || len(items) != n {
		b.Fatalf("%d items imported of %d: %v", len(items), n, err)
	}
	// Triage's part of each mail's chain, so that a reply may be proposed.
	chains := graph.NewChains(app.Store())
	for _, it := range items {
		for _, stage := range []string{graph.Received, graph.Classified} {
			if err := chains.Advance(ctx, graph.Stage{Subject: graph.ItemSubject(it.ID), Chain: graph.Mail, Name: stage}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return app, items
}

// BenchmarkDraftReply is one drafting run per op: the thread, past mail
// to the sender and the calendar looked up, one model turn that proposes
// the reply, the proposal through the gate.
func BenchmarkDraftReply(b *testing.B) {
	app, items := openBrainBench(b, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := app.agent.jobs.DraftReply(ctx, items[i], "asks you something", nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Minutes(), "drafts/min")
}

// BenchmarkBackgroundRun is the smallest background run per op (a
// briefing's narrative: no tools, one model turn), and
// BenchmarkModelCall the same request made straight through the router:
// the difference is what the agent adds to a run (checkpoints, plan,
// prompt, usage).
func BenchmarkBackgroundRun(b *testing.B) {
	app, _ := openBrainBench(b, 0)
	ctx := context.Background()
	text := strings.Repeat("Meeting at 10:00 with Alice about the Q3 budget. ", 20)
	b.ResetTimer()
	for i := range b.N {
		if _, err := app.agent.jobs.Narrative(ctx, "morning", strconv.Itoa(i), text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkModelCall(b *testing.B) {
	app, _ := openBrainBench(b, 0)
	ctx := context.Background()
	text := strings.Repeat("Meeting at 10:00 with Alice about the Q3 budget. ", 20)
	b.ResetTimer()
	for range b.N {
		if _, err := app.llm.Chat(ctx, router.Request{Task: router.TaskBriefing, MaxTokens: 200, Messages: []router.Message{
			{Role: router.RoleSystem, Content: "You write the opening of the owner's morning briefing."},
			{Role: router.RoleUser, Content: text},
		}}); err != nil {
			b.Fatal(err)
		}
	}
}
