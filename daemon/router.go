package daemon

import (
	"context"
	"net/http"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// noModelHint is what status says when no model is configured.
const noModelHint = "no model configured: set OMNIBRAIN_LLM_PROVIDER (openai, anthropic, ollama) with OMNIBRAIN_LLM_MODEL, or run Ollama on 127.0.0.1:11434"

// openRouter builds the model router (a.llm). A configuration it cannot
// use leaves the daemon running without a model, with the reason in
// status, rather than refusing to start: everything else works without one.
func (a *App) openRouter(ctx context.Context, now func() time.Time, hosted http.RoundTripper) {
	opts := router.Options{
		LLM:      a.cfg.LLM,
		Location: a.cfg.Location,
		Calls:    a.store,
		Notifier: notify.NewQueue(a.store, a.log.With("component", "notify")),
		Health:   a.health,
		Log:      a.log,
		Now:      now,

		Transport: hosted,
	}
	r, err := router.New(ctx, opts)
	switch {
	case err != nil:
		a.log.Error("the model configuration cannot be used; running without a model", "err", err)
		a.health.Set(router.HealthName, health.Down, "configuration: "+err.Error())
		opts.LLM = config.LLM{Provider: "none", Timeout: a.cfg.LLM.Timeout}
		r, _ = router.New(ctx, opts) // no provider: cannot fail
	case !r.Available():
		a.health.Set(router.HealthName, health.Disabled, noModelHint)
	default:
		a.health.Set(router.HealthName, health.OK, r.Describe())
	}
	a.llm = r
}

// usageReport serves GET /api/v1/usage from llm_calls.
type usageReport struct {
	st  *store.Store
	cfg *config.Config
	now func() time.Time
}

func (u usageReport) Usage(ctx context.Context, days int) (*api.UsageReport, error) {
	today := u.now().In(u.cfg.Location)
	from := today.AddDate(0, 0, -(days - 1)).Format(time.DateOnly)
	rows, err := u.st.LLMUsage(ctx, from)
	if err != nil {
		return nil, err
	}
	rep := &api.UsageReport{
		Days: days, From: from, To: today.Format(time.DateOnly), Timezone: u.cfg.TimezoneName(),
		BudgetUSD: u.cfg.LLM.DailyBudgetUSD, HardLimitUSD: u.cfg.LLM.HardLimitUSD,
	}
	for _, r := range rows {
		rep.Rows = append(rep.Rows, api.UsageRow{
			Day: r.Day, Task: r.Task, Provider: r.Provider, Model: r.Model, Calls: r.Calls, Errors: r.Errors,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, LatencyMS: r.Latency.Milliseconds(),
		})
	}
	return rep, nil
}
