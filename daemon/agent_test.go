package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/importer"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/planner"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
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
	if comp, _ := app.Health().Get("agent"); comp.State != health.OK || !strings.Contains(comp.Detail, "search results only") {
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
	// Misspelt, no keyword matches: only the hybrid search's vector half
	// (character n-grams) finds it, as `omnibrain search` would.
	ans, err = c.Chat(context.Background(), api.ChatRequest{Message: "Transwestrn advise protst"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ans.Citations, func(c agent.Citation) bool { return strings.Contains(c.Title, "Transwestern Advice Protest") }) {
		t.Fatalf("misspelt question: %+v", ans.Citations)
	}
	// The mailbox is from 2001: asked about "last year", chat says nothing
	// from then matched before it shows what matches at other times.
	ans, err = c.Chat(context.Background(), api.ChatRequest{Message: "Transwestern advice protest last year"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Text, `nothing from "last year"`) || len(ans.Citations) == 0 || !strings.Contains(ans.Citations[0].Title, "Transwestern Advice Protest") {
		t.Fatalf("a period with no matches: %s\n%+v", ans.Text, ans.Citations)
	}
}

// TestChatPlansAClearRequest: a message that asks for planned work runs
// with the template's plan and reasoning chain: the system prompt shows
// the active phase and the frontier, the model's findings and
// finish_phase move them (events on the API), the next prompt follows,
// and the plan and graph are saved with the run. The profile in the
// prompt carries the proactive engine's observations and preferences.
func TestChatPlansAClearRequest(t *testing.T) {
	f := llm.NewOpenAI(t)
	app, c := openLLMApp(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", f.URL, "gpt-test"
		cfg.Owner = config.Owner{Name: "Bill Rapp", Emails: []string{"bill.rapp@enron.com"}}
	})
	importEnron(t, app, "rapp-b")
	ctx := context.Background()
	if _, err := app.Store().UpsertObservation(ctx, &store.Observation{Kind: "answers_fast", Key: "dan@energyattorney.com",
		Summary: "you answer dan@energyattorney.com fast: median 40m over 6 replies", Confidence: 0.9, Suggestion: "their mail is ranked higher"}); err != nil {
		t.Fatal(err)
	}
	if err := app.Store().SetPreference(ctx, store.Preference{Key: "sender:dan@energyattorney.com", Weight: 10, Source: store.PreferenceLearned, Detail: "you answer them within 40m"}); err != nil {
		t.Fatal(err)
	}

	var turn int
	f.Respond(func(r llm.Request) llm.Turn {
		turn++
		switch turn {
		case 1:
			return llm.Turn{ToolCalls: []llm.ToolCall{
				{Name: "search", Arguments: `{"query":"please send comments"}`},
				{Name: "record_finding", Arguments: `{"node":"email","state":"confirmed","evidence":"Dan asks for comments on the CPUC letter"}`},
			}}
		case 2:
			return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "finish_phase", Arguments: `{"reflection":"One mail asks for comments by 10 a.m."}`}}}
		}
		return llm.Turn{Text: "One mail needs you: Dan wants comments on the CPUC letter."}
	})
	var events []agent.Event
	ans, err := c.Chat(ctx, api.ChatRequest{Message: "Triage my inbox: which mails need a reply?"}, func(ev agent.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if ans.Stop != agent.StopDone || ans.Iterations != 3 {
		t.Fatalf("answer = %+v", ans)
	}
	reqs := f.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	first, third := reqs[0].System, reqs[2].System
	for _, want := range []string{
		"Plan for: Triage my inbox", "1. [active] collect: find the mail to triage", "(tools: search)",
		"Reasoning frontier", "- email [unknown]: the mail is identified and read",
		"Recent observations:\n- you answer dan@energyattorney.com fast", "mail from sender:dan@energyattorney.com ranks higher (you answer them within 40m)",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first prompt lacks %q:\n%s", want, first)
		}
	}
	for _, want := range []string{"1. [done] collect — One mail asks for comments by 10 a.m.", "2. [active] classify", "- needs_reply [unknown]"} {
		if !strings.Contains(third, want) {
			t.Errorf("third prompt lacks %q:\n%s", want, third)
		}
	}
	if strings.Contains(third, "- email [unknown]") {
		t.Errorf("the confirmed node is still on the frontier:\n%s", third)
	}
	var tools []string
	for _, tl := range reqs[0].Tools {
		tools = append(tools, tl.Name)
	}
	if got := strings.Join(tools, ","); !strings.Contains(got, "finish_phase") || !strings.Contains(got, "record_finding") {
		t.Errorf("the plan's tools were not offered: %s", got)
	}

	var plan, finding, phase int
	for _, ev := range events {
		switch ev.Type {
		case agent.EventPlan:
			plan++
			if ev.Plan.Template != "email_triage" {
				t.Errorf("plan event %+v", ev.Plan)
			}
		case agent.EventFinding:
			finding++
		case agent.EventPhaseComplete:
			phase++
			if ev.Phase.Name != "collect" || ev.Phase.Reflection != "One mail asks for comments by 10 a.m." {
				t.Errorf("phase event %+v", ev.Phase)
			}
		}
	}
	if plan != 1 || finding != 1 || phase != 1 {
		t.Fatalf("events: %d plan, %d finding, %d phase_complete", plan, finding, phase)
	}

	// The plan and the graph are saved with the run.
	run, err := app.agent.runs.Get(ctx, ans.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Plan  planner.Plan `json:"plan"`
		Graph graph.Graph  `json:"graph"`
	}
	if err := json.Unmarshal(run.State, &saved); err != nil {
		t.Fatal(err)
	}
	if run.Status != "done" || saved.Plan.Template != "email_triage" || saved.Plan.Current != 1 || saved.Plan.Phases[0].Reflection != "One mail asks for comments by 10 a.m." {
		t.Fatalf("saved run %s: plan %+v", run.Status, saved.Plan)
	}
	if n := saved.Graph.Node("email"); n == nil || n.State != graph.Confirmed || len(n.Evidence) != 1 {
		t.Fatalf("saved graph %+v", saved.Graph)
	}

	// A plain question about the same mail gets no plan.
	f.Respond(func(llm.Request) llm.Turn { return llm.Turn{Text: "Dan Douglass."} })
	if _, err := c.Chat(ctx, api.ChatRequest{Message: "Who wrote the CPUC letter?"}, nil); err != nil {
		t.Fatal(err)
	}
	reqs = f.Requests()
	if last := reqs[len(reqs)-1]; strings.Contains(last.System, "Plan for:") || strings.Contains(last.System, "Reasoning frontier") {
		t.Fatalf("a plain question was planned:\n%s", last.System)
	}
}

// TestChatRefinesPlansWithAPlanningRoute: with llm.routes.planning
// configured, a planned message's template is first adapted by that
// route's model; its validated plan is the one the chat model follows.
func TestChatRefinesPlansWithAPlanningRoute(t *testing.T) {
	chatModel, planModel := llm.NewOpenAI(t), llm.NewAnthropic(t)
	app, c := openLLMApp(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", chatModel.URL, "gpt-test"
		cfg.LLM.Providers = []config.Provider{{Name: "planner", Type: "anthropic", BaseURL: planModel.URL, APIKey: "key", Model: "claude-test"}}
		cfg.LLM.Routes = map[string]config.Route{"planning": {Providers: []string{"planner"}}}
	})
	importEnron(t, app, "rapp-b")
	planModel.Script(llm.Turn{Text: `{"phases":[{"name":"find_cpuc","goal":"find the mail about the CPUC letter","steps":[{"description":"search for it","tool_hints":["search"]}]},{"name":"report","goal":"say who needs an answer"}]}`})
	chatModel.Script(llm.Turn{Text: "Dan needs an answer."})
	ans, err := c.Chat(context.Background(), api.ChatRequest{Message: "Triage my inbox: which mails need a reply?"}, nil)
	if err != nil || ans.Stop != agent.StopDone {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	if reqs := planModel.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].System, "You plan work") || !strings.Contains(reqs[0].Messages[0].Content, `"name":"collect"`) {
		t.Fatalf("planning requests %+v", reqs)
	}
	sys := chatModel.Requests()[0].System
	if !strings.Contains(sys, "1. [active] find_cpuc: find the mail about the CPUC letter") || strings.Contains(sys, "[active] collect") {
		t.Fatalf("the chat model did not get the refined plan:\n%s", sys)
	}
}

// TestRestartResumesBackgroundRuns: a background run the daemon stopped
// mid-way is continued from its checkpoint when the daemon runs again,
// without repeating its tool calls; an interrupted chat run (nobody waits
// for it any more) is abandoned, not resumed.
func TestRestartResumesBackgroundRuns(t *testing.T) {
	testutil.SharedData(t, "mail/enron/maildir/rapp-b") // skip before opening what the test closes by hand
	f := llm.NewOpenAI(t)
	cfg := config.Default(t.TempDir())
	cfg.Location = time.UTC
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", f.URL, "gpt-test"
	now := func() time.Time { return time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC) }
	app, err := Open(context.Background(), cfg, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	importEnron(t, app, "rapp-b")

	// The daemon stops while the model thinks about the second step.
	ctx, stop := context.WithCancel(context.Background())
	f.Respond(func(r llm.Request) llm.Turn {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				stop()
				return llm.Turn{Hang: true}
			}
		}
		return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"query":"Transwestern advice protest"}`}}}
	})
	bg, err := app.Agent().Run(ctx, agent.Task{Objective: "Summarise the Transwestern protest", Route: router.TaskAnalysis}, nil)
	if err != nil || bg.Stop != agent.StopCanceled {
		t.Fatalf("background run: %+v, %v", bg, err)
	}
	chatCtx, stopChat := context.WithCancel(context.Background())
	f.Respond(func(r llm.Request) llm.Turn {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				stopChat()
				return llm.Turn{Hang: true}
			}
		}
		return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"query":"CPUC letter"}`}}}
	})
	interactive, err := app.Agent().Run(chatCtx, agent.Task{Objective: "What about the CPUC letter?", Interactive: true}, nil)
	if err != nil || interactive.Stop != agent.StopCanceled {
		t.Fatalf("chat run: %+v, %v", interactive, err)
	}
	// The chat's caller went away: the run is abandoned at once, not left
	// "running" until the next restart.
	if r, err := app.agent.runs.Get(context.Background(), interactive.RunID); err != nil || r.Status != agent.RunAbandoned {
		t.Fatalf("canceled chat run: %+v, %v", r, err)
	}
	if r, err := app.agent.runs.Get(context.Background(), bg.RunID); err != nil || r.Status != agent.RunRunning {
		t.Fatalf("canceled background run: %+v, %v", r, err)
	}
	app.Close()
	searches := len(f.Requests())

	f.Respond(func(r llm.Request) llm.Turn {
		var tools int
		for _, m := range r.Messages {
			if m.Role == "tool" && strings.Contains(m.Content, "Transwestern") {
				tools++
			}
		}
		if tools != 1 {
			return llm.Turn{Text: fmt.Sprintf("I lost my place (%d search results)", tools)}
		}
		return llm.Turn{Text: "The protest was filed with the CPUC letter [1]."}
	})
	app, err = Open(context.Background(), cfg, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := app.agent.runs.Get(context.Background(), bg.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == "done" {
			var ans agent.Answer
			if err := json.Unmarshal(r.Answer, &ans); err != nil {
				t.Fatal(err)
			}
			if ans.Stop != agent.StopDone || ans.Text != "The protest was filed with the CPUC letter [1]." || len(ans.Citations) != 1 {
				t.Fatalf("resumed answer %+v", ans)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background run was not resumed: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(f.Requests()) - searches; n != 1 {
		t.Fatalf("%d model requests after the restart, want the one that finishes the run", n)
	}
	r, err := app.agent.runs.Get(context.Background(), interactive.RunID)
	if err != nil || r.Status != agent.RunAbandoned {
		t.Fatalf("interrupted chat run: %+v, %v", r, err)
	}
}
