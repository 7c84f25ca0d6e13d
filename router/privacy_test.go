package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/router"
)

// A privacy: local task never goes to a provider off this machine, even
// when that provider comes first on its route; with no loopback provider
// it fails with ErrNoModel instead of leaking.
func TestPrivacyLocalNeverLeavesLoopback(t *testing.T) {
	local := newBackend(t, "openai")
	cloud := config.Provider{Name: "cloud", Type: "anthropic", BaseURL: "https://llm.example.com", APIKey: "k", Model: "claude-x"}
	cfg := config.LLM{
		Provider: "anthropic", BaseURL: "https://api.example.com", APIKey: "k", Model: "claude-y",
		Providers: []config.Provider{cloud, local.provider("local")},
		Routes: map[string]config.Route{
			"triage":   {Providers: []string{"cloud", "local"}, Privacy: "local"},
			"analysis": {Providers: []string{"cloud"}, Privacy: "local"},
			"briefing": {Privacy: "local"}, // the default provider, which is in the cloud
		},
	}
	h := newHarness(t, cfg)
	local.script(llm.Turn{Text: "private triage"})
	resp, err := h.r.Stream(context.Background(), userReq(router.TaskTriage, "secret mail"), func(router.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "local" {
		t.Errorf("answered by %s", resp.Provider)
	}
	for _, task := range []router.Task{router.TaskAnalysis, router.TaskBriefing} {
		_, err := h.r.Chat(context.Background(), userReq(task, "secret mail"))
		if !errors.Is(err, router.ErrNoModel) || !strings.Contains(err.Error(), "privacy: local") {
			t.Errorf("%s: got %v, want ErrNoModel naming the privacy rule", task, err)
		}
	}
	for _, c := range h.calls(t) {
		if c.Provider != "local" {
			t.Errorf("a privacy: local call was attempted at %s", c.Provider)
		}
	}
	if len(local.requests()) != 1 {
		t.Errorf("local provider saw %d requests", len(local.requests()))
	}
}

func TestNoModelConfigured(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  config.LLM
		hint string
	}{
		{"none", config.LLM{Provider: "none"}, "llm.provider is none"},
		{"nothing on loopback", config.LLM{}, "no Ollama answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			if h.r.Available() {
				t.Fatal("available without a provider")
			}
			_, err := h.r.Stream(context.Background(), userReq(router.TaskChat, "hi"), func(router.Delta) {})
			if !errors.Is(err, router.ErrNoModel) || !strings.Contains(err.Error(), tc.hint) || !strings.Contains(err.Error(), "OMNIBRAIN_LLM_PROVIDER") {
				t.Errorf("got %v", err)
			}
			if !strings.Contains(h.r.Describe(), tc.hint) {
				t.Errorf("Describe() = %q", h.r.Describe())
			}
			if len(h.calls(t)) != 0 {
				t.Error("a call was recorded without a provider")
			}
		})
	}
}

// With no provider configured, a local Ollama that answers is used, with
// its first model; it is local, so privacy: local tasks may use it.
func TestDiscoversLocalOllama(t *testing.T) {
	ollama := llm.NewOpenAI(t)
	ollama.SetModels("llama3.2:latest", "qwen2.5:7b")
	cfg := config.LLM{Routes: map[string]config.Route{"triage": {Privacy: "local"}}}
	h := newHarness(t, cfg, func(o *router.Options) { o.OllamaURL = ollama.URL })
	if !h.r.Available() || !strings.Contains(h.r.Describe(), "llama3.2:latest") || !strings.Contains(h.r.Describe(), "local") {
		t.Fatalf("Describe() = %q", h.r.Describe())
	}
	ollama.Script(llm.Turn{Text: "hello from ollama"})
	resp, err := h.r.Chat(context.Background(), userReq(router.TaskTriage, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "hello from ollama" || ollama.Requests()[0].Model != "llama3.2:latest" || ollama.Requests()[0].Header.Get("Authorization") != "" {
		t.Errorf("resp %+v, request %+v", resp, ollama.Requests()[0])
	}

	empty := llm.NewOpenAI(t)
	empty.SetModels()
	h = newHarness(t, config.LLM{}, func(o *router.Options) { o.OllamaURL = empty.URL })
	if h.r.Available() || !strings.Contains(h.r.Describe(), "ollama pull") {
		t.Errorf("Ollama without models: %q", h.r.Describe())
	}
}

func TestConfigurationErrors(t *testing.T) {
	ollama := llm.NewOpenAI(t)
	ollama.SetModels("mistral")
	for _, tc := range []struct {
		name string
		cfg  config.LLM
		want string // "" when New must succeed
	}{
		{"openai without model", config.LLM{Provider: "openai", APIKey: "k"}, "no model configured"},
		{"anthropic without model", config.LLM{Providers: []config.Provider{{Name: "c", Type: "anthropic"}}}, "no model configured"},
		{"unknown type", config.LLM{Providers: []config.Provider{{Name: "x", Type: "gemini", Model: "m"}}}, "unknown type"},
		{"ollama without model finds one", config.LLM{Provider: "ollama", BaseURL: ollama.URL}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := router.New(context.Background(), router.Options{LLM: tc.cfg})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// A call made for a privacy: local task's work under another route (a
// summary of a local chat run's turns, its plan refinement) keeps to
// loopback too, though its own route would go to the cloud.
func TestPrivacyLocalCarriesOverToHelperCalls(t *testing.T) {
	local := newBackend(t, "openai")
	cloud := config.Provider{Name: "cloud", Type: "anthropic", BaseURL: "https://llm.example.com", APIKey: "k", Model: "claude-x"}
	cfg := config.LLM{
		Provider: "anthropic", BaseURL: "https://api.example.com", APIKey: "k", Model: "claude-y",
		Providers: []config.Provider{cloud, local.provider("local")},
		Routes: map[string]config.Route{
			"chat":     {Providers: []string{"local"}, Privacy: "local"},
			"planning": {Providers: []string{"cloud", "local"}},
			// reflection: unrouted, so the default provider, in the cloud
		},
	}
	h := newHarness(t, cfg)
	local.script(llm.Turn{Text: "refined locally"})
	req := userReq(router.TaskPlanning, "the chat's private objective")
	req.Within = router.TaskChat
	resp, err := h.r.Chat(context.Background(), req)
	if err != nil || resp.Provider != "local" {
		t.Fatalf("planning for chat: %+v, %v; want the local provider", resp, err)
	}
	req = userReq(router.TaskReflection, "the chat's private turns")
	req.Within = router.TaskChat
	if _, err := h.r.Chat(context.Background(), req); !errors.Is(err, router.ErrNoModel) || !strings.Contains(err.Error(), "privacy: local") {
		t.Errorf("reflection for chat: got %v, want ErrNoModel naming the privacy rule", err)
	}
	for _, c := range h.calls(t) {
		if c.Provider != "local" {
			t.Errorf("a call carrying privacy: local data was attempted at %s", c.Provider)
		}
	}
}
