package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/importer"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
)

// importEnron imports one real Enron mailbox through the real importer.
func importEnron(t *testing.T, app *App, box string) {
	t.Helper()
	dir := testutil.SharedData(t, "mail/enron/maildir")
	im := importer.New(importer.Options{Store: app.Store()})
	sum, err := im.Import(context.Background(), "maildir", filepath.Join(dir, box), nil)
	if err != nil || sum.Added == 0 {
		t.Fatalf("import: %+v, %v", sum, err)
	}
}

var protestRef = regexp.MustCompile(`\[(\d+)\][^\n]*from bill\.rapp@enron\.com · FW: Transwestern Advice Protest`)

// TestChatAnswersAboutImportedMailbox: the daemon's chat, over an
// imported Enron mailbox, with a scripted model behind the real router:
// the model searches, and the answer cites the right message by its
// Message-ID. Then a model that tries to send mail only leaves a pending
// proposal.
func TestChatAnswersAboutImportedMailbox(t *testing.T) {
	f := llm.NewOpenAI(t)
	app, c := openLLMApp(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", f.URL, "gpt-test"
		cfg.Owner = config.Owner{Name: "Bill Rapp", Emails: []string{"bill.rapp@enron.com"}}
	})
	importEnron(t, app, "rapp-b")
	if comp, _ := app.Health().Get("agent"); comp.State != health.OK {
		t.Fatalf("agent health = %+v", comp)
	}

	f.Respond(func(r llm.Request) llm.Turn {
		last := r.Messages[len(r.Messages)-1]
		if last.Role != "tool" {
			return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"query":"Transwestern advice protest CPUC letter"}`}}}
		}
		m := protestRef.FindStringSubmatch(last.Content)
		if m == nil {
			return llm.Turn{Text: "I could not find it."}
		}
		return llm.Turn{Text: "You forwarded Dan Douglass's revised draft of the CPUC letter and asked for comments by 10 a.m. [" + m[1] + "]."}
	})
	var events []agent.EventType
	ans, err := c.Chat(context.Background(), api.ChatRequest{Message: "What did I send around about the Transwestern advice protest?"}, func(ev agent.Event) {
		events = append(events, ev.Type)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Citations) != 1 || ans.Citations[0].ID != "263129.1075861198445.JavaMail.evans@thyme" || ans.Citations[0].Source != "maildir" {
		t.Fatalf("answer %q cites %+v", ans.Text, ans.Citations)
	}
	if !strings.Contains(strings.Join(evNames(events), ","), "tool_start,tool_end") || events[len(events)-1] != agent.EventDone {
		t.Fatalf("events = %v", events)
	}
	// the system prompt carried the owner's profile
	if sys := f.Requests()[0].System; !strings.Contains(sys, "Owner: Bill Rapp <bill.rapp@enron.com>") || !strings.Contains(sys, "Frequent contacts:") {
		t.Fatalf("system prompt lacks the profile:\n%s", sys)
	}

	f.Respond(func(r llm.Request) llm.Turn {
		if r.Messages[len(r.Messages)-1].Role != "tool" {
			return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "send_email", Arguments: `{"to":["dan@energyattorney.com"],"subject":"OK","body":"Approved, file it."}`}}}
		}
		return llm.Turn{Text: "Sent!"}
	})
	ans, err = c.Chat(context.Background(), api.ChatRequest{Message: "Tell Dan the letter is fine", Session: ans.SessionID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := app.Gate().List(context.Background(), approval.ListOptions{})
	if err != nil || len(ps) != 1 || ps[0].State != approval.StatePending || ps[0].Origin != "agent" || len(ans.Proposals) != 1 {
		t.Fatalf("proposals = %+v, %v; answer %+v", ps, err, ans)
	}
}

func evNames(ts []agent.EventType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// TestChatWithoutModelAnswersFromSearch: no model configured and no
// Ollama: chat through the API still answers, from the imported mail.
func TestChatWithoutModelAnswersFromSearch(t *testing.T) {
	app, c := openLLMApp(t, func(*config.Config) {})
	importEnron(t, app, "rapp-b")
	if comp, _ := app.Health().Get("agent"); comp.State != health.Degraded || !strings.Contains(comp.Detail, "search results only") {
		t.Fatalf("agent health = %+v", comp)
	}
	ans, err := c.Chat(context.Background(), api.ChatRequest{Message: "Transwestern advice protest"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ans.NoModel || len(ans.Citations) == 0 || !strings.Contains(ans.Text, "No language model is configured") {
		t.Fatalf("answer = %+v", ans)
	}
	if !strings.Contains(ans.Citations[0].Title, "Transwestern Advice Protest") {
		t.Fatalf("best result = %+v", ans.Citations[0])
	}
}

// TestPluginsJoinTheAgent: a read-only plugin tool is offered to the
// model next to the standard tools; a broken manifest degrades health
// without stopping the daemon or the good plugin.
func TestPluginsJoinTheAgent(t *testing.T) {
	f := llm.NewOpenAI(t)
	script := []byte("#!/bin/sh\ncat >/dev/null\necho '{\"output\":\"sunny\"}'\n")
	sum := sha256.Sum256(script)
	app, _ := openLLMApp(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", f.URL, "gpt-test"
		broken := filepath.Join(cfg.Home, "plugins", "broken")
		os.MkdirAll(broken, 0o700)
		os.WriteFile(filepath.Join(broken, "plugin.yaml"), []byte("name: broken\n"), 0o600)
		good := filepath.Join(cfg.Home, "plugins", "weather")
		os.MkdirAll(good, 0o700)
		os.WriteFile(filepath.Join(good, "run.sh"), script, 0o700)
		os.WriteFile(filepath.Join(good, "plugin.yaml"), []byte("name: weather\ncommand: run.sh\nsha256: "+hex.EncodeToString(sum[:])+
			"\ntools:\n  - name: today\n    description: today's weather\n    read_only: true\n"), 0o600)
	})
	comp, _ := app.Health().Get("plugins")
	if comp.State != health.Degraded || !strings.Contains(comp.LastError, "broken") {
		t.Fatalf("plugins health = %+v", comp)
	}
	f.Script(llm.Turn{ToolCalls: []llm.ToolCall{{Name: "weather_today", Arguments: `{}`}}}, llm.Turn{Text: "It is sunny."})
	ans, err := app.Chat().Chat(context.Background(), "", "what's the weather like, according to my weather plugin?", nil)
	if err != nil || ans.Text != "It is sunny." {
		t.Fatalf("answer = %+v, %v", ans, err)
	}
	var names []string
	for _, tl := range f.Requests()[0].Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "weather_today") || !strings.Contains(got, "reply_email") {
		t.Fatalf("tools = %v", names)
	}
	res := f.Requests()[1].Messages[len(f.Requests()[1].Messages)-1].Content
	if !strings.Contains(res, "sunny") || !strings.Contains(res, "UNTRUSTED DATA") {
		t.Fatalf("plugin output reached the model as %q", res)
	}
}
