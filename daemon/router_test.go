package daemon

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/router"
)

func openLLMApp(t *testing.T, edit func(*config.Config)) (*App, *api.Client) {
	t.Helper()
	cfg := config.Default(t.TempDir())
	cfg.Location = time.UTC
	// Keep the Ollama probe off any real Ollama on this machine.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LLM.BaseURL = "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	edit(cfg)
	now := func() time.Time { return time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC) }
	app, err := Open(context.Background(), cfg, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	c, stop := api.NewInProcessClient(app.Handler())
	t.Cleanup(stop)
	return app, c
}

// A configured provider: status shows it, calls are recorded and the
// usage API reports them with their cost.
func TestRouterWiredWithUsage(t *testing.T) {
	f := llm.NewOpenAI(t)
	app, c := openLLMApp(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", f.URL, "gpt-test"
		cfg.LLM.Prices = map[string]config.Price{"gpt-test": {InputPerMTok: 1, OutputPerMTok: 2}}
		cfg.LLM.DailyBudgetUSD = 5
	})
	comp, _ := app.Health().Get(router.HealthName)
	if comp.State != health.OK || !strings.Contains(comp.Detail, "gpt-test") {
		t.Errorf("health %+v", comp)
	}
	f.Script(llm.Turn{Text: "hi", InputTokens: 1_000_000, OutputTokens: 500_000})
	if _, err := app.llm.Chat(context.Background(), router.Request{Task: router.TaskTriage, Messages: []router.Message{{Role: router.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Usage(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != "2025-05-27" || rep.To != "2025-06-02" || rep.BudgetUSD != 5 || len(rep.Rows) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if math.Abs(rep.TodayUSD-2) > 1e-9 || rep.ByTask[0].Key != "triage" || rep.ByModel[0].Key != "default/gpt-test" {
		t.Errorf("report %+v", rep)
	}
	st, err := c.Status(context.Background())
	if err != nil || !st.Configured["llm"] {
		t.Errorf("status says llm not configured: %v %+v", err, st.Configured)
	}
}

func TestRouterWithoutModelOrWithBadConfig(t *testing.T) {
	app, _ := openLLMApp(t, func(*config.Config) {})
	comp, _ := app.Health().Get(router.HealthName)
	if comp.State != health.Disabled || !strings.Contains(comp.Detail, "OMNIBRAIN_LLM_PROVIDER") || !strings.Contains(comp.Detail, "Ollama") {
		t.Errorf("no model: health %+v", comp)
	}

	app, _ = openLLMApp(t, func(cfg *config.Config) { cfg.LLM.Provider = "anthropic" }) // no model
	comp, _ = app.Health().Get(router.HealthName)
	if comp.State != health.Down || !strings.Contains(comp.Detail, "no model configured") {
		t.Errorf("bad config: health %+v", comp)
	}
	_, err := app.llm.Chat(context.Background(), router.Request{Task: router.TaskChat, Messages: []router.Message{{Role: router.RoleUser, Content: "x"}}})
	if !errors.Is(err, router.ErrNoModel) {
		t.Errorf("bad config: call gives %v, want ErrNoModel", err)
	}
}

// TestBudgetPausesBackgroundWorkNotChat: in the daemon, once the day's
// budget is spent, background model work (a triage call, an agent run
// that is not interactive) stops without reaching the provider, the owner
// is told once through the notification queue, and chat through the API
// still gets the model's answer.
func TestBudgetPausesBackgroundWorkNotChat(t *testing.T) {
	f := llm.NewOpenAI(t)
	app, c := openLLMApp(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", f.URL, "gpt-test"
		cfg.LLM.Prices = map[string]config.Price{"gpt-test": {InputPerMTok: 10}}
		cfg.LLM.DailyBudgetUSD = 0.01
	})
	ctx := context.Background()
	triage := router.Request{Task: router.TaskTriage, Messages: []router.Message{{Role: router.RoleUser, Content: "a mail"}}}
	f.Script(llm.Turn{Text: "ignore", InputTokens: 1000}) // $0.01: the whole budget
	if _, err := app.llm.Chat(ctx, triage); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := app.llm.Chat(ctx, triage); !errors.Is(err, router.ErrBudgetExceeded) {
			t.Fatalf("background call past the budget: %v", err)
		}
	}
	ans, err := app.Agent().Run(ctx, agent.Task{Objective: "Summarise this week's mail", Route: router.TaskAnalysis}, nil)
	if err != nil || ans.Stop != agent.StopBudget || !strings.Contains(ans.Text, "budget is spent") {
		t.Fatalf("background agent run past the budget: %+v, %v", ans, err)
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("the provider saw %d requests; paused work must not reach it", n)
	}
	note, err := app.Store().NotificationByKey(ctx, "llm-budget:2025-06-02")
	if err != nil || !strings.Contains(note.Text, "chat still works") {
		t.Fatalf("owner not told: %+v, %v", note, err)
	}
	counts, err := app.Store().CountNotifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	if total != 1 {
		t.Fatalf("notifications %v, want the one budget message", counts)
	}

	f.Script(llm.Turn{Text: "Hello Bill!"})
	chat, err := c.Chat(ctx, api.ChatRequest{Message: "hello"}, nil)
	if err != nil || chat.Text != "Hello Bill!" || chat.NoModel {
		t.Fatalf("chat past the budget: %+v, %v", chat, err)
	}
	rep, err := c.Usage(ctx, 1)
	if err != nil || rep.TodayUSD < rep.BudgetUSD || rep.BudgetUSD != 0.01 {
		t.Fatalf("usage %+v, %v", rep, err)
	}
}
