package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LLMCall is one model call attempt, as the router records it.
type LLMCall struct {
	ID           int64
	Time         time.Time // when the attempt started
	Day          string    // YYYY-MM-DD in the owner's timezone
	Task         string
	Provider     string
	Model        string
	InputTokens  int
	OutputTokens int
	CostUSD      float64
	Latency      time.Duration
	Interactive  bool
	Stream       bool
	Attempt      int    // 1 for the first try at this provider
	Status       int    // HTTP status of a failed attempt
	Error        string // empty when the attempt succeeded
}

// RecordLLMCall stores one call attempt.
func (s *Store) RecordLLMCall(ctx context.Context, c LLMCall) error {
	if c.Day == "" || c.Time.IsZero() {
		return errors.New("store: record llm call: time and day are required")
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO llm_calls
		(time, day, task, provider, model, input_tokens, output_tokens, cost_usd, latency_ms, interactive, stream, attempt, status, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		Millis(c.Time), c.Day, c.Task, c.Provider, c.Model, c.InputTokens, c.OutputTokens, c.CostUSD,
		c.Latency.Milliseconds(), c.Interactive, c.Stream, max(c.Attempt, 1), c.Status, c.Error)
	if err != nil {
		return fmt.Errorf("store: record llm call: %w", err)
	}
	return nil
}

// LLMSpend is the cost of every call recorded on day (YYYY-MM-DD, owner's
// timezone).
func (s *Store) LLMSpend(ctx context.Context, day string) (float64, error) {
	var total float64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(cost_usd), 0) FROM llm_calls WHERE day = ?`, day).Scan(&total)
	if err != nil {
		return 0, fmt.Errorf("store: llm spend: %w", err)
	}
	return total, nil
}

// LLMUsageRow totals the calls of one day, task, provider and model.
type LLMUsageRow struct {
	Day          string
	Task         string
	Provider     string
	Model        string
	Calls        int // attempts, failed ones included
	Errors       int // failed attempts
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	Latency      time.Duration // summed over the calls
}

// LLMUsage totals the calls recorded from fromDay (YYYY-MM-DD) on, newest
// day first, then by cost.
func (s *Store) LLMUsage(ctx context.Context, fromDay string) ([]LLMUsageRow, error) {
	out, err := Collect(ctx, s.db, func(row Scanner) (r LLMUsageRow, err error) {
		var latency int64
		err = row.Scan(&r.Day, &r.Task, &r.Provider, &r.Model, &r.Calls, &r.Errors, &r.InputTokens, &r.OutputTokens, &r.CostUSD, &latency)
		r.Latency = time.Duration(latency) * time.Millisecond
		return r, err
	}, `SELECT day, task, provider, model, COUNT(*), SUM(error != ''),
			SUM(input_tokens), SUM(output_tokens), SUM(cost_usd), SUM(latency_ms)
		FROM llm_calls WHERE day >= ?
		GROUP BY day, task, provider, model
		ORDER BY day DESC, SUM(cost_usd) DESC, task, provider, model`, fromDay)
	if err != nil {
		return nil, fmt.Errorf("store: llm usage: %w", err)
	}
	return out, nil
}
