package daemon

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

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
