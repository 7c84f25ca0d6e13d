package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"

	"github.com/omnibrain/omnibrain/internal/logging"
)

type usageFunc func(ctx context.Context, days int) (*UsageReport, error)

func (f usageFunc) Usage(ctx context.Context, days int) (*UsageReport, error) { return f(ctx, days) }

func TestUsageTotalsByDayTaskAndModel(t *testing.T) {
	var asked []int
	srv := NewServer(logging.Discard(), "", Backends{Usage: usageFunc(func(_ context.Context, days int) (*UsageReport, error) {
		asked = append(asked, days)
		return &UsageReport{Days: days, From: "2025-06-01", To: "2025-06-02", Timezone: "Europe/Berlin", BudgetUSD: 1, Rows: []UsageRow{
			{Day: "2025-06-02", Task: "chat", Provider: "default", Model: "gpt", Calls: 3, Errors: 1, InputTokens: 100, OutputTokens: 10, CostUSD: 0.30},
			{Day: "2025-06-02", Task: "triage", Provider: "local", Model: "llama", Calls: 20, InputTokens: 4000, OutputTokens: 40},
			{Day: "2025-06-01", Task: "chat", Provider: "default", Model: "gpt", Calls: 1, InputTokens: 50, OutputTokens: 5, CostUSD: 0.05},
			{Day: "2025-06-01", Task: "briefing", Provider: "default", Model: "gpt", Calls: 1, CostUSD: 0.20},
		}}, nil
	})})
	c, stop := NewInProcessClient(srv.SocketHandler())
	defer stop()

	rep, err := c.Usage(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if rep.Total.Calls != 25 || rep.Total.Errors != 1 || rep.Total.InputTokens != 4150 || !near(rep.Total.CostUSD, 0.55) || !near(rep.TodayUSD, 0.30) {
		t.Errorf("totals %+v today %v", rep.Total, rep.TodayUSD)
	}
	if len(rep.ByDay) != 2 || rep.ByDay[0].Key != "2025-06-02" || !near(rep.ByDay[1].CostUSD, 0.25) {
		t.Errorf("by day %+v", rep.ByDay)
	}
	if len(rep.ByTask) != 3 || rep.ByTask[0].Key != "chat" || rep.ByTask[0].Calls != 4 || rep.ByTask[1].Key != "briefing" || rep.ByTask[2].Key != "triage" {
		t.Errorf("by task %+v", rep.ByTask)
	}
	if len(rep.ByModel) != 2 || rep.ByModel[0].Key != "default/gpt" || !near(rep.ByModel[0].CostUSD, 0.55) || rep.ByModel[1].Calls != 20 {
		t.Errorf("by model %+v", rep.ByModel)
	}

	if _, err := c.Usage(context.Background(), 0); err != nil || asked[len(asked)-1] != 7 {
		t.Errorf("default days: asked %v, err %v", asked, err)
	}
	for _, bad := range []string{"0", "367", "x"} {
		resp, err := c.send(context.Background(), http.MethodGet, "/api/v1/usage?days="+bad, nil)
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			t.Errorf("days=%s: %v", bad, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

func TestUsageWithoutBackendSaysSo(t *testing.T) {
	c, stop := NewInProcessClient(NewServer(logging.Discard(), "", Backends{}).SocketHandler())
	defer stop()
	_, err := c.Usage(context.Background(), 3)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotImplemented {
		t.Fatalf("got %v", err)
	}
}
