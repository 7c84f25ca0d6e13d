package api

import (
	"context"
	"net/http"
	"sort"
	"strconv"
)

// UsageReporter reports model usage; the daemon reads it from llm_calls.
type UsageReporter interface {
	// Usage returns the calls of the last days days (today included, in
	// the owner's timezone) as Rows; the API adds the totals.
	Usage(ctx context.Context, days int) (*UsageReport, error)
}

// UsageReport is the answer of GET /api/v1/usage: model spend by day, task
// and model.
type UsageReport struct {
	Days         int     `json:"days"`
	From         string  `json:"from"` // first day, YYYY-MM-DD in the owner's timezone
	To           string  `json:"to"`   // today
	Timezone     string  `json:"timezone"`
	BudgetUSD    float64 `json:"daily_budget_usd"` // 0: no budget
	HardLimitUSD float64 `json:"hard_limit_usd"`   // 0: none
	TodayUSD     float64 `json:"today_usd"`

	Total   UsageTotal   `json:"total"`
	ByDay   []UsageTotal `json:"by_day"`   // newest first; Key is the day
	ByTask  []UsageTotal `json:"by_task"`  // costliest first; Key is the task
	ByModel []UsageTotal `json:"by_model"` // costliest first; Key is provider/model
	Rows    []UsageRow   `json:"rows"`     // one per day, task, provider and model
}

// UsageRow totals one day's calls for one task, provider and model.
type UsageRow struct {
	Day          string  `json:"day"`
	Task         string  `json:"task"`
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Calls        int     `json:"calls"`  // attempts, failed ones included
	Errors       int     `json:"errors"` // failed attempts
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	LatencyMS    int64   `json:"latency_ms"` // summed
}

// UsageTotal sums rows that share a key.
type UsageTotal struct {
	Key          string  `json:"key,omitempty"`
	Calls        int     `json:"calls"`
	Errors       int     `json:"errors"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func (t *UsageTotal) add(r UsageRow) {
	t.Calls += r.Calls
	t.Errors += r.Errors
	t.InputTokens += r.InputTokens
	t.OutputTokens += r.OutputTokens
	t.CostUSD += r.CostUSD
}

// summarize fills the totals from the rows.
func (rep *UsageReport) summarize() {
	rep.Total = UsageTotal{}
	rep.TodayUSD = 0
	group := func(key func(UsageRow) string) []UsageTotal {
		idx := map[string]int{}
		out := []UsageTotal{} // [] in JSON, not null, when nothing was spent
		for _, r := range rep.Rows {
			k := key(r)
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, UsageTotal{Key: k})
			}
			out[i].add(r)
		}
		return out
	}
	for _, r := range rep.Rows {
		rep.Total.add(r)
		if r.Day == rep.To {
			rep.TodayUSD += r.CostUSD
		}
	}
	rep.ByDay = group(func(r UsageRow) string { return r.Day })
	sort.SliceStable(rep.ByDay, func(i, j int) bool { return rep.ByDay[i].Key > rep.ByDay[j].Key })
	costly := func(ts []UsageTotal) {
		sort.SliceStable(ts, func(i, j int) bool {
			if ts[i].CostUSD != ts[j].CostUSD {
				return ts[i].CostUSD > ts[j].CostUSD
			}
			if ts[i].Calls != ts[j].Calls {
				return ts[i].Calls > ts[j].Calls
			}
			return ts[i].Key < ts[j].Key
		})
	}
	rep.ByTask = group(func(r UsageRow) string { return r.Task })
	costly(rep.ByTask)
	rep.ByModel = group(func(r UsageRow) string { return r.Provider + "/" + r.Model })
	costly(rep.ByModel)
	if rep.Rows == nil {
		rep.Rows = []UsageRow{}
	}
}

// handleUsage serves GET /api/v1/usage?days=N (default 7, at most 366).
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	if s.b.Usage == nil {
		notConfigured(w, "usage")
		return
	}
	days := 7
	if v := r.URL.Query().Get("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 366 {
			s.fail(w, r, BadRequest("days must be a number from 1 to 366"))
			return
		}
		days = n
	}
	rep, err := s.b.Usage.Usage(r.Context(), days)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep.summarize()
	writeJSON(w, http.StatusOK, rep)
}

// Usage returns model spend over the last days days (0: the server's
// default of 7).
func (c *Client) Usage(ctx context.Context, days int) (*UsageReport, error) {
	path := "/api/v1/usage"
	if days > 0 {
		path += "?days=" + strconv.Itoa(days)
	}
	var rep UsageReport
	return &rep, c.do(ctx, http.MethodGet, path, nil, &rep)
}
