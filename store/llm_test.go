package store

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestLLMCallsSpendAndUsage(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Date(2025, 3, 10, 23, 30, 0, 0, time.UTC)
	calls := []LLMCall{
		{Time: at, Day: "2025-03-11", Task: "chat", Provider: "default", Model: "gpt-x", InputTokens: 1000, OutputTokens: 200, CostUSD: 0.25, Latency: 800 * time.Millisecond, Interactive: true, Stream: true},
		{Time: at, Day: "2025-03-11", Task: "chat", Provider: "default", Model: "gpt-x", CostUSD: 0, Attempt: 2, Status: 429, Error: "rate limited"},
		{Time: at, Day: "2025-03-11", Task: "triage", Provider: "local", Model: "llama", InputTokens: 50, OutputTokens: 5},
		{Time: at.Add(-24 * time.Hour), Day: "2025-03-10", Task: "chat", Provider: "default", Model: "gpt-x", InputTokens: 10, OutputTokens: 10, CostUSD: 1.5},
		{Time: at.Add(-72 * time.Hour), Day: "2025-03-08", Task: "briefing", Provider: "default", Model: "gpt-x", CostUSD: 9},
	}
	for _, c := range calls {
		if err := s.RecordLLMCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordLLMCall(ctx, LLMCall{Task: "chat"}); err == nil {
		t.Error("a call without time and day was stored")
	}

	for day, want := range map[string]float64{"2025-03-11": 0.25, "2025-03-10": 1.5, "2025-03-09": 0} {
		got, err := s.LLMSpend(ctx, day)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("spend on %s = %v, want %v", day, got, want)
		}
	}

	rows, err := s.LLMUsage(ctx, "2025-03-10")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("usage rows = %+v", rows)
	}
	chat := rows[0]
	if chat.Day != "2025-03-11" || chat.Task != "chat" || chat.Calls != 2 || chat.Errors != 1 || chat.InputTokens != 1000 || chat.OutputTokens != 200 || chat.CostUSD != 0.25 || chat.Latency != 800*time.Millisecond {
		t.Errorf("first row = %+v", chat)
	}
	if rows[1].Task != "triage" || rows[1].Provider != "local" || rows[2].Day != "2025-03-10" {
		t.Errorf("order = %+v", rows)
	}

	var attempt, status, interactive int
	var errText string
	if err := s.DB().QueryRow(`SELECT attempt, status, interactive, error FROM llm_calls WHERE status = 429`).Scan(&attempt, &status, &interactive, &errText); err != nil {
		t.Fatal(err)
	}
	if attempt != 2 || status != 429 || interactive != 0 || errText != "rate limited" {
		t.Errorf("failed attempt stored as attempt=%d status=%d interactive=%d error=%q", attempt, status, interactive, errText)
	}
}
