package router_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/router"
)

func TestPriceFor(t *testing.T) {
	configured := map[string]config.Price{"gpt-4o": {InputPerMTok: 1, OutputPerMTok: 2}}
	for _, tc := range []struct {
		kind, url, model string
		want             config.Price
		source           router.PriceSource
	}{
		{"openai", "", "gpt-4o", config.Price{InputPerMTok: 1, OutputPerMTok: 2}, router.PriceConfigured},
		{"openai", "", "gpt-4o-mini-2024-07-18", config.Price{InputPerMTok: 0.15, OutputPerMTok: 0.60}, router.PriceBuiltin},
		// llm.prices keys on the exact name; the table matches the family.
		{"openai", "", "gpt-4o-2024-08-06", config.Price{InputPerMTok: 2.5, OutputPerMTok: 10}, router.PriceBuiltin},
		{"anthropic", "", "claude-sonnet-4-5-20250929", config.Price{InputPerMTok: 3, OutputPerMTok: 15}, router.PriceBuiltin},
		{"anthropic", "", "claude-opus-4-5", config.Price{InputPerMTok: 5, OutputPerMTok: 25}, router.PriceBuiltin},
		{"openai", "https://openrouter.ai/api/v1", "deepseek/deepseek-chat", config.Price{InputPerMTok: 0.28, OutputPerMTok: 0.42}, router.PriceBuiltin},
		{"openai", "https://generativelanguage.googleapis.com/v1beta/openai", "models/gemini-2.5-flash", config.Price{InputPerMTok: 0.30, OutputPerMTok: 2.50}, router.PriceBuiltin},
		{"openai", "http://127.0.0.1:8080/v1", "gpt-4o-mini", config.Price{}, router.PriceLocal},
		{"ollama", "", "llama3.2", config.Price{}, router.PriceLocal},
		{"openai", "https://llm.example.com/v1", "house-model-7b", config.Price{InputPerMTok: 15, OutputPerMTok: 75}, router.PriceUnknown},
		{"openai", "", "gpt-5o-turbo-x", config.Price{InputPerMTok: 15, OutputPerMTok: 75}, router.PriceUnknown},
	} {
		got, src := router.PriceFor(configured, tc.kind, tc.url, tc.model)
		if src != tc.source || math.Abs(got.InputPerMTok-tc.want.InputPerMTok) > 1e-9 || math.Abs(got.OutputPerMTok-tc.want.OutputPerMTok) > 1e-9 {
			t.Errorf("%s %s %s: %+v (%s), want %+v (%s)", tc.kind, tc.url, tc.model, got, src, tc.want, tc.source)
		}
	}
}

// A hosted model nobody priced still counts: known ones at the table's
// price, unknown ones at the most expensive known rate, so a daily budget
// set with no price table stops background work.
func TestHostedModelsArePricedWithoutConfiguration(t *testing.T) {
	for _, tc := range []struct {
		model string
		cost  float64 // of 1,000 input and 1,000 output tokens
	}{
		{"gpt-4o-mini", (1000*0.15 + 1000*0.60) / 1e6},
		{"acme-large", (1000*15 + 1000*75.0) / 1e6},
	} {
		t.Run(tc.model, func(t *testing.T) {
			f := llm.NewOpenAI(t)
			cfg := config.LLM{Provider: "openai", BaseURL: "https://api.hosted.example/v1", APIKey: "sk-test", Model: tc.model, DailyBudgetUSD: 0.05}
			h := newHarness(t, cfg, func(o *router.Options) { o.Transport = f.HostedTransport() })
			if !strings.Contains(h.r.Describe(), "no known price") != (tc.model == "gpt-4o-mini") {
				t.Errorf("describe: %s", h.r.Describe())
			}
			f.Script(llm.Turn{Text: "ok", InputTokens: 1000, OutputTokens: 1000})
			resp, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "x"))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(resp.Usage.CostUSD-tc.cost) > 1e-9 {
				t.Fatalf("cost %v, want %v", resp.Usage.CostUSD, tc.cost)
			}
			if err := h.r.Ready(context.Background(), router.TaskDraft); tc.cost < 0.05 && err != nil {
				t.Fatalf("ready under budget: %v", err)
			}
			if tc.cost >= 0.05 {
				// $0.09 spent of $0.05: background work is paused.
				if err := h.r.Ready(context.Background(), router.TaskDraft); !errors.Is(err, router.ErrBudgetExceeded) {
					t.Fatalf("ready past the budget: %v", err)
				}
				if _, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "y")); !errors.Is(err, router.ErrBudgetExceeded) {
					t.Fatalf("a call past the budget: %v", err)
				}
				if n := len(h.notifications()); n != 1 {
					t.Errorf("told the owner %d times", n)
				}
			}
		})
	}
}

// Ready says what a call would find: no model at all is ErrNoModel.
func TestReadyWithoutModel(t *testing.T) {
	h := newHarness(t, config.LLM{Provider: "none"})
	if err := h.r.Ready(context.Background(), router.TaskBriefing); !errors.Is(err, router.ErrNoModel) {
		t.Fatalf("ready: %v", err)
	}
}
