package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/router"
)

// pricedCfg: $10 per million input tokens, a $0.01 daily budget; one call
// of 1,000 input tokens spends it.
func pricedCfg(b backend) config.LLM {
	cfg := b.defaultCfg()
	cfg.Prices = map[string]config.Price{cfg.Model: {InputPerMTok: 10}}
	cfg.DailyBudgetUSD = 0.01
	return cfg
}

// Once the day's budget is spent, background work fails fast with
// ErrBudgetExceeded (the provider never sees it) and the owner is told
// once; interactive chat still works.
func TestBudgetPausesBackgroundWorkButNotChat(t *testing.T) {
	b := newBackend(t, "openai")
	h := newHarness(t, pricedCfg(b))
	b.script(llm.Turn{Text: "triaged", InputTokens: 1000})
	if _, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "mail 1")); err != nil {
		t.Fatal(err)
	}

	for i := range 3 {
		_, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "mail 2"))
		if !errors.Is(err, router.ErrBudgetExceeded) {
			t.Fatalf("background call %d after the budget: %v", i, err)
		}
		if !strings.Contains(err.Error(), "$0.01 of $0.01") || !strings.Contains(err.Error(), "Europe/Berlin") {
			t.Errorf("error does not say what was spent where: %v", err)
		}
	}
	if n := len(b.requests()); n != 1 {
		t.Errorf("the provider saw %d requests; paused calls must not reach it", n)
	}
	notes := h.notifications()
	if len(notes) != 1 || notes[0].Key != "llm-budget:2025-06-02" || notes[0].Level != notify.Important || !strings.Contains(notes[0].Text, "chat still works") {
		t.Fatalf("notifications %+v, want one budget message", notes)
	}
	if c, _ := h.health.Get(router.HealthName); c.State != health.Degraded || !strings.Contains(c.LastError, "budget") {
		t.Errorf("health %+v", c)
	}

	b.script(llm.Turn{Text: "chat answer"})
	chat := userReq(router.TaskChat, "hi")
	chat.Interactive = true
	resp, err := h.r.Stream(context.Background(), chat, func(router.Delta) {})
	if err != nil || resp.Content != "chat answer" {
		t.Fatalf("interactive call past the budget: %v %+v", err, resp)
	}
	if len(h.notifications()) != 1 {
		t.Errorf("told the owner again: %+v", h.notifications())
	}
}

// The budget day ends at the owner's midnight, not UTC's.
func TestBudgetResetsAtOwnersMidnight(t *testing.T) {
	b := newBackend(t, "anthropic")
	h := newHarness(t, pricedCfg(b))
	h.clock.Set(time.Date(2025, 6, 2, 23, 50, 0, 0, berlin)) // 21:50 UTC
	b.script(llm.Turn{Text: "x", InputTokens: 1000})
	if _, err := h.r.Chat(context.Background(), userReq(router.TaskBriefing, "brief")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Chat(context.Background(), userReq(router.TaskBriefing, "brief")); !errors.Is(err, router.ErrBudgetExceeded) {
		t.Fatalf("before midnight: %v", err)
	}
	h.clock.Set(time.Date(2025, 6, 3, 0, 5, 0, 0, berlin)) // still June 2 in UTC
	b.script(llm.Turn{Text: "y", InputTokens: 10})
	if _, err := h.r.Chat(context.Background(), userReq(router.TaskBriefing, "brief")); err != nil {
		t.Fatalf("after the owner's midnight: %v", err)
	}
	calls := h.calls(t)
	if calls[0].Day != "2025-06-02" || calls[len(calls)-1].Day != "2025-06-03" {
		t.Errorf("days %s, %s", calls[0].Day, calls[len(calls)-1].Day)
	}
}

// A free (unpriced) model is not paused: the budget is about money. With a
// paid and a free provider on the route, background work falls to the free
// one once the budget is spent.
func TestBudgetSkipsToFreeProvider(t *testing.T) {
	paid, free := newBackend(t, "openai"), newBackend(t, "openai")
	cfg := config.LLM{
		Providers:      []config.Provider{paid.provider("cloud"), free.provider("local")},
		Routes:         map[string]config.Route{"triage": {Providers: []string{"cloud", "local"}}},
		Prices:         map[string]config.Price{"cloud-model": {InputPerMTok: 10, OutputPerMTok: 30}},
		DailyBudgetUSD: 0.01,
	}
	h := newHarness(t, cfg)
	paid.script(llm.Turn{Text: "paid", InputTokens: 1000})
	free.script(llm.Turn{Text: "free"})
	for _, want := range []string{"cloud", "local"} {
		resp, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "mail"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Provider != want {
			t.Errorf("answered by %s, want %s", resp.Provider, want)
		}
	}
	if len(h.notifications()) != 1 {
		t.Errorf("owner not told that paid work is paused: %+v", h.notifications())
	}
}

// The hard limit stops chat too, and says so.
func TestHardLimitStopsInteractiveCalls(t *testing.T) {
	b := newBackend(t, "openai")
	cfg := pricedCfg(b)
	cfg.HardLimitUSD = 0.02
	h := newHarness(t, cfg)
	b.script(llm.Turn{Text: "a", InputTokens: 1000}, llm.Turn{Text: "b", InputTokens: 1000})
	chat := userReq(router.TaskChat, "hi")
	chat.Interactive = true
	for range 2 {
		if _, err := h.r.Chat(context.Background(), chat); err != nil {
			t.Fatal(err)
		}
	}
	_, err := h.r.Chat(context.Background(), chat)
	if !errors.Is(err, router.ErrBudgetExceeded) || !strings.Contains(err.Error(), "hard limit") || !strings.Contains(err.Error(), "llm.hard_limit_usd") {
		t.Fatalf("past the hard limit: %v", err)
	}
	notes := h.notifications()
	if len(notes) != 1 || notes[0].Key != "llm-hard-limit:2025-06-02" || notes[0].Level != notify.Critical {
		t.Errorf("notifications %+v", notes)
	}
}

// A failing notifier is retried with the next blocked call, not lost.
func TestBudgetNotificationRetriedWhenQueueFails(t *testing.T) {
	b := newBackend(t, "openai")
	var attempts int
	h := newHarness(t, pricedCfg(b), func(o *router.Options) {
		o.Notifier = notifyFunc(func(context.Context, notify.Message) error {
			attempts++
			if attempts == 1 {
				return errors.New("queue unavailable")
			}
			return nil
		})
	})
	b.script(llm.Turn{Text: "x", InputTokens: 1000})
	h.r.Chat(context.Background(), userReq(router.TaskTriage, "a"))
	for range 3 {
		h.r.Chat(context.Background(), userReq(router.TaskTriage, "b"))
	}
	if attempts != 2 {
		t.Errorf("notify attempts %d, want 2 (one failure, one success, then silence)", attempts)
	}
}

type notifyFunc func(context.Context, notify.Message) error

func (f notifyFunc) Notify(ctx context.Context, m notify.Message) error { return f(ctx, m) }
