package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/search"
)

// timedModel measures the time spent inside the model call (router, SDK,
// HTTP and the fake), so the agent's own overhead can be reported apart.
type timedModel struct {
	m      Model
	inside atomic.Int64
	calls  atomic.Int64
}

func (t *timedModel) Stream(ctx context.Context, req router.Request, onDelta func(router.Delta)) (*router.Response, error) {
	start := time.Now()
	resp, err := t.m.Stream(ctx, req, onDelta)
	t.inside.Add(int64(time.Since(start)))
	t.calls.Add(1)
	return resp, err
}

// BenchmarkIteration is one ReAct iteration with an instant model: the
// fake answers at once, through the real router and SDK. Each op is a run
// of 10 iterations (9 tool turns, then an answer). agent-ns/iter excludes
// the model call (router, SDK, HTTP, fake); total-ns/iter includes it.
// tool=echo is an instant tool, so agent-ns/iter is the loop's own
// overhead; tool=search runs a real FTS search over a 57-item mailbox.
func BenchmarkIteration(b *testing.B) {
	for _, tool := range []string{"echo", "search"} {
		for _, cp := range []bool{false, true} {
			b.Run(fmt.Sprintf("tool=%s/checkpoint=%t", tool, cp), func(b *testing.B) {
				echo, _ := NewTool("echo", "echoes", Read, 0, func(_ context.Context, a echoArgs) (Result, error) {
					return Result{Text: a.Query}, nil
				})
				h := newHarness(b, harnessOpts{extra: []*Tool{echo}})
				loadDojo(b, h.st, "")
				if !cp {
					h.agent.opts.Checkpoints = nil
				}
				tm := &timedModel{m: h.router}
				h.agent.opts.Model = tm
				var n atomic.Int64
				h.model.respond(func(r llm.Request) llm.Turn {
					if len(r.Messages) >= 20 {
						return llm.Turn{Text: "Lily invited you to a party [1].", ChunkSize: 64}
					}
					return llm.Turn{ToolCalls: []llm.ToolCall{call(tool, fmt.Sprintf(`{"query":"party %d"}`, n.Add(1)))}}
				})
				b.ResetTimer()
				start := time.Now()
				iters := 0
				for range b.N {
					ans, err := h.agent.Run(context.Background(), Task{Objective: "What did Lily write?"}, func(Event) {})
					if err != nil || ans.Stop != StopDone {
						b.Fatalf("%+v %v", ans, err)
					}
					iters += ans.Iterations
				}
				total := time.Since(start)
				b.ReportMetric(float64(total-time.Duration(tm.inside.Load()))/float64(iters), "agent-ns/iter")
				b.ReportMetric(float64(total)/float64(iters), "total-ns/iter")
			})
		}
	}
}

// typicalProfile is a working day's profile.
func typicalProfile() *Profile {
	p := &Profile{Owner: "Emma Johnson", Emails: []string{"emma.johnson@bluesparrowtech.com"}, Location: time.UTC, Now: clock}
	for i := range 3 {
		p.Pending = append(p.Pending, ProfileProposal{ID: fmt.Sprintf("p%d", i), Kind: "reply", Title: "Reply to David Smith: Re: Project Update for the Phoenix launch"})
	}
	for i := range 5 {
		p.Today = append(p.Today, ProfileEvent{Start: clock.Add(time.Duration(i) * time.Hour), End: clock.Add(time.Duration(i)*time.Hour + 45*time.Minute), Title: "Phoenix project sync with the design team", Location: "Conference Room B"})
	}
	for i := range 8 {
		p.TopContacts = append(p.TopContacts, ProfileContact{Name: "Sarah Baker", Address: fmt.Sprintf("sarah.baker%d@gmail.com", i), Messages: 40 - i})
	}
	p.Observations = []string{"Mail from David Smith usually gets a reply within 2 hours", "Three unanswered mails about the Phoenix project since Monday", "Weekly team sync moved twice this month", "Invoices from TechServices arrive on the 1st", "Friday afternoons are kept free"}
	p.Preferences = []string{"Short replies, signed 'Emma'", "No meetings before 9:00", "Decline vendor pitches politely"}
	return p
}

// BenchmarkSystemPrompt reports the tokens of the system prompt for a
// typical profile and of the tool definitions sent with every call.
func BenchmarkSystemPrompt(b *testing.B) {
	tools, err := StandardTools(ToolDeps{Search: nopSearch{}, Items: openStore(b)})
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(Options{Model: &timedModel{}, Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	st := &runState{Task: Task{Objective: "x"}, profile: typicalProfile().Render(a.opts.ProfileTokens)}
	specs, _ := json.Marshal(tools.Specs())
	var prompt string
	b.ResetTimer()
	for range b.N {
		st.profile = typicalProfile().Render(a.opts.ProfileTokens)
		prompt = a.systemPrompt(st)
	}
	b.ReportMetric(float64(EstimateTokens(prompt)), "prompt-tokens")
	b.ReportMetric(float64(EstimateTokens(st.profile)), "profile-tokens")
	b.ReportMetric(float64(EstimateTokens(string(specs))), "tools-tokens")
}

// staticProfile serves one profile, as the daemon's builder would.
type staticProfile struct{ p *Profile }

func (s staticProfile) Profile(context.Context) (*Profile, error) { return s.p, nil }

// BenchmarkChatTurn is one chat turn through the real router, with a
// typical profile in the prompt: a data question (retrieves 6 items,
// offers the tools, answers in one call), a planned request (the same,
// plus the plan, the frontier and the run's own tools) and a general one
// (no retrieval, no tools). It reports the tokens of the prompt the model
// was sent (the agent's estimate) and of the answer.
func BenchmarkChatTurn(b *testing.B) {
	for _, tt := range []struct{ name, question string }{
		{"data", "What did Lily write about the birthday party?"},
		{"planned", "Triage my inbox: which mails need a reply?"},
		{"general", "What is a monad?"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := newHarness(b, harnessOpts{agent: func(o *Options) { o.Profile = staticProfile{typicalProfile()} }})
			loadDojo(b, h.st, "")
			h.model.respond(func(llm.Request) llm.Turn {
				return llm.Turn{Text: "Lily is planning a birthday party for John next weekend at 6 PM [1].", ChunkSize: 64}
			})
			c, err := NewChat(ChatOptions{Agent: h.agent, Search: search.New(h.st, nil, nil), Sessions: h.st, Now: h.agent.opts.Now})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var out int
			for range b.N {
				ans, err := c.Chat(context.Background(), "", tt.question, nil)
				if err != nil || ans.Stop != StopDone {
					b.Fatalf("%+v %v", ans, err)
				}
				out += ans.Usage.OutputTokens
			}
			b.StopTimer()
			req := h.model.requests()[0]
			est := EstimateTokens(req.System)
			for _, m := range req.Messages {
				if m.Role != "system" {
					est += 4 + EstimateTokens(m.Content)
				}
			}
			specs, _ := json.Marshal(req.Tools)
			if len(req.Tools) > 0 {
				est += EstimateTokens(string(specs))
			}
			b.ReportMetric(float64(est), "prompt-tokens/turn")
			b.ReportMetric(float64(out)/float64(b.N), "output-tokens/turn")
		})
	}
}
