package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
)

var searchSpec = router.ToolSpec{
	Name:        "search",
	Description: "search the owner's memory",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`),
}

// A full tool round trip through each SDK: what the model saw (system
// prompt, the assistant's tool calls, the tool results, the tool schema)
// and what came back.
func TestToolRoundTripMapsMessages(t *testing.T) {
	for _, kind := range kinds {
		for _, stream := range []bool{false, true} {
			t.Run(kind+map[bool]string{false: "/chat", true: "/stream"}[stream], func(t *testing.T) {
				b := newBackend(t, kind)
				h := newHarness(t, b.defaultCfg())
				b.script(llm.Turn{Text: "Let me search.", ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "search", Arguments: `{"query":"budget"}`}}, InputTokens: 100, OutputTokens: 20})
				b.script(llm.Turn{Text: "The budget review is on Friday [1].", InputTokens: 150, OutputTokens: 12})

				req := userReq(router.TaskChat, "When is the budget review?")
				req.Tools = []router.ToolSpec{searchSpec}
				req.MaxTokens = 500
				do := func(req router.Request) *router.Response {
					t.Helper()
					var resp *router.Response
					var err error
					var c collect
					if stream {
						resp, err = h.r.Stream(context.Background(), req, c.onDelta)
					} else {
						resp, err = h.r.Chat(context.Background(), req)
					}
					if err != nil {
						t.Fatal(err)
					}
					if stream && c.text.String() != resp.Content {
						t.Errorf("streamed %q, response %q", c.text.String(), resp.Content)
					}
					return resp
				}
				first := do(req)
				if first.StopReason != "tool_calls" || len(first.ToolCalls) != 1 || first.Content != "Let me search." {
					t.Fatalf("first answer %+v", first)
				}
				tc := first.ToolCalls[0]
				if tc.ID != "call_a" || tc.Name != "search" || string(tc.Arguments) != `{"query":"budget"}` || tc.CheckArguments() != nil {
					t.Errorf("tool call %+v", tc)
				}
				if first.Usage.InputTokens != 100 || first.Usage.OutputTokens != 20 || first.Provider != "default" {
					t.Errorf("usage %+v provider %q", first.Usage, first.Provider)
				}

				req.Messages = append(req.Messages,
					router.Message{Role: router.RoleAssistant, Content: first.Content, ToolCalls: first.ToolCalls},
					router.Message{Role: router.RoleTool, ToolCallID: tc.ID, Name: "search", Content: "[1] Budget review, Friday 10:00"},
				)
				second := do(req)
				if second.Content != "The budget review is on Friday [1]." || second.StopReason != "stop" {
					t.Errorf("second answer %+v", second)
				}

				reqs := b.requests()
				if len(reqs) != 2 {
					t.Fatalf("%d requests", len(reqs))
				}
				for _, r := range reqs {
					if r.Invalid != "" {
						t.Fatalf("the API would refuse the request: %s", r.Invalid)
					}
				}
				r := reqs[1]
				if r.System != "You are omnibrain." || r.Model != kind+"-model" || r.Stream != stream || r.MaxTokens != 500 {
					t.Errorf("request %+v", r)
				}
				if len(r.Tools) != 1 || r.Tools[0].Name != "search" || r.Tools[0].Description != searchSpec.Description {
					t.Fatalf("tools %+v", r.Tools)
				}
				var schema map[string]any
				json.Unmarshal(r.Tools[0].Parameters, &schema)
				if schema["type"] != "object" || schema["additionalProperties"] != false || schema["required"].([]any)[0] != "query" {
					t.Errorf("schema sent as %s", r.Tools[0].Parameters)
				}
				var roles []string
				for _, m := range r.Messages {
					roles = append(roles, m.Role)
				}
				wantRoles := "user,assistant,tool"
				if kind == "openai" {
					wantRoles = "system," + wantRoles
				}
				if strings.Join(roles, ",") != wantRoles {
					t.Errorf("roles %v, want %s", roles, wantRoles)
				}
				last := r.Messages[len(r.Messages)-1]
				asst := r.Messages[len(r.Messages)-2]
				if last.ToolCallID != "call_a" || last.Content != "[1] Budget review, Friday 10:00" || asst.ToolCalls[0].Arguments != `{"query":"budget"}` || asst.Content != "Let me search." {
					t.Errorf("tool turn sent as %+v / %+v", asst, last)
				}
			})
		}
	}
}

// Anthropic needs alternating turns: several tool results and a following
// user message travel in one user turn, with is_error kept.
func TestAnthropicMergesToolResultsIntoOneUserTurn(t *testing.T) {
	b := newBackend(t, "anthropic")
	h := newHarness(t, b.defaultCfg())
	b.script(llm.Turn{Text: "ok"})
	req := userReq(router.TaskChat, "both please")
	req.Messages = append(req.Messages,
		router.Message{Role: router.RoleAssistant, ToolCalls: []router.ToolCall{
			{ID: "t1", Name: "search", Arguments: json.RawMessage(`{"query":"a"}`)},
			{ID: "t2", Name: "search", Arguments: json.RawMessage(`{"query":`)}, // malformed, as the model sent it
		}},
		router.Message{Role: router.RoleTool, ToolCallID: "t1", Content: "found a"},
		router.Message{Role: router.RoleTool, ToolCallID: "t2", Content: "arguments are not valid JSON", IsError: true},
		router.Message{Role: router.RoleUser, Content: "and?"},
	)
	if _, err := h.r.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := b.requests()[0]
	if r.Invalid != "" {
		t.Fatalf("refused: %s", r.Invalid)
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 || body.Messages[2].Role != "user" || len(body.Messages[2].Content) != 3 {
		t.Fatalf("turns %s", r.Body)
	}
	if !strings.Contains(string(body.Messages[2].Content[1]), `"is_error":true`) || !strings.Contains(string(body.Messages[1].Content[1]), `"input":{}`) {
		t.Errorf("tool turn %s", r.Body)
	}
}

// 429 with Retry-After: the router waits exactly what the provider asked,
// then succeeds; both attempts are recorded.
func TestRetry429HonoursRetryAfter(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t, kind)
			h := newHarness(t, b.defaultCfg())
			b.script(llm.Turn{Status: 429, RetryAfter: "2"}, llm.Turn{Text: "hello"})
			resp, err := h.r.Chat(context.Background(), userReq(router.TaskChat, "hi"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != "hello" {
				t.Errorf("content %q", resp.Content)
			}
			if got := h.slept(); len(got) != 1 || got[0] != 2*time.Second {
				t.Errorf("slept %v, want [2s]", got)
			}
			calls := h.calls(t)
			if len(calls) != 2 || calls[0].Status != 429 || calls[0].Attempt != 1 || calls[0].Error == "" || calls[1].Attempt != 2 || calls[1].Error != "" {
				t.Errorf("recorded %+v", calls)
			}
		})
	}
}

// 500s are retried with jittered exponential backoff, then the typed
// error says who failed how.
func TestRetry500BacksOffThenReportsTypedError(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t, kind)
			h := newHarness(t, b.defaultCfg())
			b.script(llm.Turn{Status: 500}, llm.Turn{Status: 500}, llm.Turn{Status: 500})
			_, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "hi"))
			var pe *router.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("want a *ProviderError, got %v", err)
			}
			if pe.Provider != "default" || pe.Status != 500 || !pe.Retryable || pe.Model != kind+"-model" {
				t.Errorf("error %+v", pe)
			}
			slept := h.slept()
			if len(slept) != 2 {
				t.Fatalf("slept %v, want two backoffs", slept)
			}
			// ±50% jitter around 500ms, then around 1s.
			if slept[0] < 250*time.Millisecond || slept[0] > 750*time.Millisecond || slept[1] < 500*time.Millisecond || slept[1] > 1500*time.Millisecond {
				t.Errorf("backoffs %v outside the jittered exponential bounds", slept)
			}
			if len(b.requests()) != 3 || b.pending() != 0 {
				t.Errorf("%d requests", len(b.requests()))
			}
			if c, _ := h.health.Get(router.HealthName); c.State != health.Degraded || c.Counters["failures"] != 3 || c.Counters["retries"] != 2 {
				t.Errorf("health %+v", c)
			}
		})
	}
}

// A client error is not retried at the same provider.
func TestClientErrorIsNotRetried(t *testing.T) {
	b := newBackend(t, "openai")
	h := newHarness(t, b.defaultCfg())
	b.script(llm.Turn{Status: 401})
	_, err := h.r.Chat(context.Background(), userReq(router.TaskChat, "hi"))
	var pe *router.ProviderError
	if !errors.As(err, &pe) || pe.Status != 401 || pe.Retryable || pe.Type != "invalid_api_key" {
		t.Fatalf("got %v", err)
	}
	if len(b.requests()) != 1 || len(h.slept()) != 0 {
		t.Errorf("retried a 401: %d requests", len(b.requests()))
	}
}

// A 429 that says the account's quota is exhausted is not retried (waiting
// does not cure it); the router moves on at once.
func TestExhaustedQuotaIsNotRetried(t *testing.T) {
	b := newBackend(t, "openai")
	h := newHarness(t, b.defaultCfg())
	b.script(llm.Turn{Status: 429, ErrorType: "insufficient_quota"})
	_, err := h.r.Chat(context.Background(), userReq(router.TaskChat, "hi"))
	var pe *router.ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || pe.Retryable || pe.Type != "insufficient_quota" {
		t.Fatalf("got %v", err)
	}
	if len(b.requests()) != 1 || len(h.slept()) != 0 {
		t.Errorf("retried an exhausted quota: %d requests, slept %v", len(b.requests()), h.slept())
	}
}

// A stream cut midway: the deltas already passed on are voided by a Reset,
// the retry streams the answer again, and the consumer ends with it once.
func TestStreamCutMidwayResetsAndRetries(t *testing.T) {
	const answer = "The budget review moved to Friday at ten."
	for _, kind := range kinds {
		for _, fault := range []llm.Turn{
			{Text: answer, CutAfter: 6},                              // connection dropped
			{Text: answer, CutAfter: 6, StreamError: "server_error"}, // in-stream error event
		} {
			name := kind + "/dropped"
			if fault.StreamError != "" {
				name = kind + "/error-event"
				if kind == "anthropic" {
					fault.StreamError = "overloaded_error"
				}
			}
			t.Run(name, func(t *testing.T) {
				b := newBackend(t, kind)
				h := newHarness(t, b.defaultCfg())
				b.script(fault, llm.Turn{Text: answer})
				var c collect
				resp, err := h.r.Stream(context.Background(), userReq(router.TaskChat, "when?"), c.onDelta)
				if err != nil {
					t.Fatal(err)
				}
				if c.resets != 1 {
					t.Errorf("%d resets, want 1", c.resets)
				}
				if c.text.String() != answer || resp.Content != answer {
					t.Errorf("consumer has %q, response %q; want the answer once", c.text.String(), resp.Content)
				}
				calls := h.calls(t)
				if len(calls) != 2 || calls[0].Error == "" || !calls[0].Stream {
					t.Errorf("recorded %+v", calls)
				}
			})
		}
	}
}

// A stream that never completes fails with ErrStreamInterrupted after the
// retries, and the consumer was told to drop what it got.
func TestStreamCutEveryTimeFailsTyped(t *testing.T) {
	b := newBackend(t, "openai")
	h := newHarness(t, b.defaultCfg())
	for range 3 {
		b.script(llm.Turn{Text: "partial answer", CutAfter: 3})
	}
	var c collect
	_, err := h.r.Stream(context.Background(), userReq(router.TaskChat, "hi"), c.onDelta)
	if !errors.Is(err, router.ErrStreamInterrupted) {
		t.Fatalf("want ErrStreamInterrupted, got %v", err)
	}
	if c.resets != 3 || c.text.Len() != 0 {
		t.Errorf("resets %d, leftover %q", c.resets, c.text.String())
	}
}

// Malformed tool-call JSON is the model's mistake, not the provider's: it
// is passed on once, unretried, for the agent to report back to the model.
func TestMalformedToolCallArgumentsArePassedOn(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		stream bool
	}{{"openai", false}, {"openai", true}, {"anthropic", true}} {
		t.Run(tc.kind, func(t *testing.T) {
			b := newBackend(t, tc.kind)
			h := newHarness(t, b.defaultCfg())
			b.script(llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"query": "budg`}}})
			var resp *router.Response
			var err error
			if tc.stream {
				resp, err = h.r.Stream(context.Background(), userReq(router.TaskChat, "hi"), func(router.Delta) {})
			} else {
				resp, err = h.r.Chat(context.Background(), userReq(router.TaskChat, "hi"))
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != `{"query": "budg` {
				t.Fatalf("tool calls %+v", resp.ToolCalls)
			}
			aerr := resp.ToolCalls[0].CheckArguments()
			var ae *router.ArgumentsError
			if !errors.Is(aerr, router.ErrMalformedArguments) || !errors.As(aerr, &ae) || ae.Tool != "search" {
				t.Errorf("CheckArguments = %v", aerr)
			}
			if len(b.requests()) != 1 {
				t.Errorf("%d requests: a model mistake must not be retried", len(b.requests()))
			}
		})
	}
}

// A provider that hangs is given up on after the timeout and retried.
func TestHangingProviderTimesOut(t *testing.T) {
	b := newBackend(t, "anthropic")
	cfg := b.defaultCfg()
	cfg.Timeout = 150 * time.Millisecond
	h := newHarness(t, cfg)
	b.script(llm.Turn{Hang: true}, llm.Turn{Text: "here"})
	resp, err := h.r.Chat(context.Background(), userReq(router.TaskChat, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "here" {
		t.Errorf("content %q", resp.Content)
	}
	if calls := h.calls(t); len(calls) != 2 || !strings.Contains(calls[0].Error, "no complete answer within 150ms") {
		t.Errorf("recorded %+v", calls)
	}
}

// A stream that keeps coming may take longer than the timeout (a slow
// local model writing a long answer); one that goes silent for the
// timeout is given up on and retried.
func TestStreamTimeoutIsForSilence(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t, kind)
			cfg := b.defaultCfg()
			cfg.Timeout = 300 * time.Millisecond
			h := newHarness(t, cfg)
			slow := llm.Turn{Text: "a long answer, written slowly by a small model on a laptop", ChunkSize: 4, EventDelay: 40 * time.Millisecond}
			b.script(slow, llm.Turn{Text: "stalls midway", CutAfter: 4, Hang: true}, llm.Turn{Text: "here"})
			var c collect
			resp, err := h.r.Stream(context.Background(), userReq(router.TaskChat, "tell me"), c.onDelta)
			if err != nil || resp.Content != slow.Text || c.resets != 0 {
				t.Fatalf("slow stream: %q, %v, %d resets; want it whole, once", resp.Content, err, c.resets)
			}
			if n := len(b.requests()); n != 1 {
				t.Errorf("%d requests for one slow answer", n)
			}
			c = collect{}
			resp, err = h.r.Stream(context.Background(), userReq(router.TaskChat, "again"), c.onDelta)
			if err != nil || resp.Content != "here" || c.resets != 1 {
				t.Fatalf("silent stream: %q, %v, %d resets; want the retry's answer after one reset", resp.Content, err, c.resets)
			}
		})
	}
}

// The first provider is down (connection refused): the router goes to the
// second at once, without waiting out retries on a dead endpoint.
func TestFailoverToSecondProviderWhenFirstIsDown(t *testing.T) {
	second := newBackend(t, "anthropic")
	cfg := config.LLM{
		Provider: "openai", BaseURL: "http://" + closedAddr(t) + "/v1", Model: "gpt-down",
		Providers: []config.Provider{second.provider("backup")},
		Routes:    map[string]config.Route{"chat": {Providers: []string{"default", "backup"}}},
	}
	h := newHarness(t, cfg)
	second.script(llm.Turn{Text: "from the backup"})
	var c collect
	resp, err := h.r.Stream(context.Background(), userReq(router.TaskChat, "hi"), c.onDelta)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "backup" || resp.Content != "from the backup" || c.text.String() != "from the backup" {
		t.Errorf("answer %+v, streamed %q", resp, c.text.String())
	}
	if len(h.slept()) != 0 {
		t.Errorf("waited %v on a refused connection", h.slept())
	}
	calls := h.calls(t)
	if len(calls) != 2 || calls[0].Provider != "default" || !strings.Contains(calls[0].Error, "refused") || calls[1].Provider != "backup" || calls[1].Error != "" {
		t.Errorf("recorded %+v", calls)
	}
}

// Retries exhausted on 5xx, or a Retry-After longer than the router waits:
// the next provider answers.
func TestFailoverAfterRetriesOrLongRetryAfter(t *testing.T) {
	for name, faults := range map[string][]llm.Turn{
		"5xx":              {{Status: 503}, {Status: 502}, {Status: 500}},
		"long retry-after": {{Status: 429, RetryAfter: "3600"}},
	} {
		t.Run(name, func(t *testing.T) {
			first, second := newBackend(t, "openai"), newBackend(t, "openai")
			cfg := config.LLM{
				Providers: []config.Provider{first.provider("a"), second.provider("b")},
				Routes:    map[string]config.Route{"draft": {Providers: []string{"a", "b"}}},
			}
			h := newHarness(t, cfg)
			first.script(faults...)
			second.script(llm.Turn{Text: "drafted"})
			resp, err := h.r.Chat(context.Background(), userReq(router.TaskDraft, "draft a reply"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Provider != "b" || resp.Model != "b-model" {
				t.Errorf("answered by %s (%s)", resp.Provider, resp.Model)
			}
			if first.pending() != 0 {
				t.Errorf("first provider left %d turns", first.pending())
			}
			for _, d := range h.slept() {
				if d > 30*time.Second {
					t.Errorf("waited %v", d)
				}
			}
		})
	}
}

// Every provider failing: one error that still unwraps to each cause.
func TestAllProvidersFailing(t *testing.T) {
	a, b := newBackend(t, "openai"), newBackend(t, "anthropic")
	cfg := config.LLM{
		Providers: []config.Provider{a.provider("a"), b.provider("b")},
		Routes:    map[string]config.Route{"analysis": {Providers: []string{"a", "b"}}},
	}
	h := newHarness(t, cfg, func(o *router.Options) { o.Retry.Attempts = 1 })
	a.script(llm.Turn{Status: 400, ErrorMessage: "context too long"})
	b.script(llm.Turn{Status: 529})
	_, err := h.r.Chat(context.Background(), userReq(router.TaskAnalysis, "hi"))
	var pe *router.ProviderError
	if !errors.As(err, &pe) || pe.Provider != "a" || pe.Message != "context too long" {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "llm provider b") || !strings.Contains(err.Error(), "overloaded_error") {
		t.Errorf("error does not name the second failure: %v", err)
	}
}

// The caller cancelling during a backoff stops at once.
func TestCancelDuringBackoff(t *testing.T) {
	b := newBackend(t, "openai")
	ctx, cancel := context.WithCancel(context.Background())
	h := newHarness(t, b.defaultCfg(), func(o *router.Options) {
		o.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	})
	b.script(llm.Turn{Status: 503})
	_, err := h.r.Chat(ctx, userReq(router.TaskChat, "hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if len(b.requests()) != 1 {
		t.Errorf("%d requests after cancel", len(b.requests()))
	}
}

// Every call lands in llm_calls with its cost from the price table.
func TestCallsRecordedWithCost(t *testing.T) {
	b := newBackend(t, "openai")
	cfg := b.defaultCfg()
	cfg.Prices = map[string]config.Price{"openai-model": {InputPerMTok: 2.5, OutputPerMTok: 10}}
	h := newHarness(t, cfg)
	b.script(llm.Turn{Text: "a", InputTokens: 1000, OutputTokens: 500}, llm.Turn{Text: "b", InputTokens: 2000, OutputTokens: 100})
	resp, err := h.r.Chat(context.Background(), router.Request{Task: router.TaskBriefing, Messages: []router.Message{{Role: router.RoleUser, Content: "brief"}}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(resp.Usage.CostUSD-0.0075) > 1e-12 {
		t.Errorf("cost %v, want 0.0075", resp.Usage.CostUSD)
	}
	req := userReq(router.TaskChat, "hi")
	req.Interactive = true
	if _, err := h.r.Stream(context.Background(), req, func(router.Delta) {}); err != nil {
		t.Fatal(err)
	}
	calls := h.calls(t)
	if len(calls) != 2 {
		t.Fatalf("recorded %+v", calls)
	}
	c := calls[0]
	if c.Task != "briefing" || c.Provider != "default" || c.Model != "openai-model" || c.InputTokens != 1000 || c.OutputTokens != 500 || math.Abs(c.CostUSD-0.0075) > 1e-12 || c.Interactive || c.Stream || c.Day != "2025-06-02" {
		t.Errorf("first call %+v", c)
	}
	c = calls[1]
	if c.Task != "chat" || !c.Interactive || !c.Stream || c.InputTokens != 2000 || math.Abs(c.CostUSD-0.006) > 1e-12 {
		t.Errorf("second call %+v", c)
	}
	spent, _ := h.st.LLMSpend(context.Background(), "2025-06-02")
	if math.Abs(spent-0.0135) > 1e-12 {
		t.Errorf("spend %v", spent)
	}
}

// Whatever a model repeats of the data delimiters never reaches the
// owner: not in a whole answer, not in a streamed one, whatever the cuts
// between its pieces.
func TestModelOutputLosesTheDataDelimiters(t *testing.T) {
	answer := "Here is a short summary:\n- " + untrusted.Open + ` source="briefing">>>` + "\n- Alice wrote about Q3.\n" + untrusted.Close + ">>>\nThat is all."
	const want = "Here is a short summary:\n- Alice wrote about Q3.\nThat is all."
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t, kind)
			h := newHarness(t, b.defaultCfg())
			b.script(llm.Turn{Text: answer}, llm.Turn{Text: answer})
			resp, err := h.r.Chat(context.Background(), userReq(router.TaskChat, "brief me"))
			if err != nil || resp.Content != want {
				t.Fatalf("chat: %q, %v", resp.Content, err)
			}
			var c collect
			resp, err = h.r.Stream(context.Background(), userReq(router.TaskChat, "brief me"), c.onDelta)
			if err != nil || resp.Content != want || strings.Contains(c.text.String(), "UNTRUSTED") || !strings.Contains(c.text.String(), "Alice wrote about Q3.") {
				t.Fatalf("stream: consumer %q, response %q, %v", c.text.String(), resp.Content, err)
			}
		})
	}
}
