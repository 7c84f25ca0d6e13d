// Package agent is omnibrain's ReAct agent: a loop that asks a model what
// to do, runs the tools it asks for (in parallel, validated, with
// timeouts), feeds the results back marked as data when they carry outside
// text, and stops on an answer or on one of its safety limits. Outgoing
// tools only create proposals for the approval gate. Runs are checkpointed
// to SQLite and resume after a restart. Chat is built on it.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/planner"
	"github.com/omnibrain/omnibrain/router"
)

// Model is the model call the agent makes; *router.Router provides it.
// onDelta receives streamed text; the Response holds the whole answer.
type Model interface {
	Stream(ctx context.Context, req router.Request, onDelta func(router.Delta)) (*router.Response, error)
}

// Proposer hands drafts to the approval gate; *approval.Gate provides it.
type Proposer interface {
	Propose(ctx context.Context, d approval.Draft) (*approval.Proposal, error)
}

// ProfileSource supplies what the agent knows about the owner right now.
type ProfileSource interface {
	Profile(ctx context.Context) (*Profile, error)
}

// MemorySource gives the prompt what omnibrain remembers about the owner:
// the facts relevant to query, the pinned ones and the owner's standing
// instructions, already bounded; "" when there is nothing.
type MemorySource interface {
	PromptMemory(ctx context.Context, query string) string
}

// Options configure an Agent. Model and Tools are required.
type Options struct {
	Model Model
	Tools *Registry
	// MoreTools, if set, is asked at the start of every run for tools
	// that come and go while the agent lives (plugins the owner adds).
	MoreTools   func() []*Tool
	Proposer    Proposer      // nil: outgoing tools answer that proposals are unavailable
	Checkpoints Checkpoints   // nil: runs are not saved
	Profile     ProfileSource // nil: no profile in the prompt
	Memory      MemorySource  // nil: no memory about the owner in the prompt
	// JobTools builds a background job's own tools (its proposal tool) for
	// a task, at its start and again when it resumes.
	JobTools func(ctx context.Context, t Task) ([]*Tool, error)
	Log      *slog.Logger
	Now      func() time.Time
	Location *time.Location // the owner's timezone, for times shown to the model

	Limits Limits
	// TaskIterations caps the model calls of runs on a route (from
	// llm.routes.<task>.max_iterations); absent: Limits.MaxIterations.
	TaskIterations map[router.Task]int
	Deadline       time.Duration // per run, default 10 minutes
	ContextTokens  int           // prompt budget, default 24000
	ProfileTokens  int           // profile budget inside the prompt, default 600
	// Summarize asks the model (task reflection) to summarise turns that
	// no longer fit, instead of only noting that they were left out.
	Summarize bool
	// RetryDelay is the pause after a failed model call before the next
	// attempt (the router already retried it); default 1s.
	RetryDelay time.Duration
}

// Agent runs tasks. It is safe for concurrent use; each run has its own state.
type Agent struct {
	opts Options
	log  *slog.Logger
}

// New returns an agent.
func New(opts Options) (*Agent, error) {
	if opts.Model == nil {
		return nil, errors.New("agent: no model")
	}
	if opts.Tools == nil {
		return nil, errors.New("agent: no tools")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.Deadline <= 0 {
		opts.Deadline = 10 * time.Minute
	}
	if opts.ContextTokens <= 0 {
		opts.ContextTokens = 24000
	}
	if opts.ProfileTokens <= 0 {
		opts.ProfileTokens = 600
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = time.Second
	}
	return &Agent{opts: opts, log: opts.Log}, nil
}

// Task is what a run should do.
type Task struct {
	Objective string      `json:"objective"`
	Route     router.Task `json:"route"` // default chat
	// History is earlier conversation (chat), oldest first, without a
	// system message.
	History []router.Message `json:"history,omitempty"`
	// Items are already retrieved items shown with the task, numbered
	// [1], [2], … for citation.
	Items []Cited `json:"items,omitempty"`
	// Instructions are extra system-prompt text from our own code (never
	// outside text).
	Instructions string `json:"instructions,omitempty"`
	// Plan: "" none, "auto" the template matching the objective, or a
	// template name.
	Plan       string `json:"plan,omitempty"`
	RefinePlan bool   `json:"refine_plan,omitempty"`
	// Chains are reasoning-graph chains to start with, besides the plan's.
	Chains        []ChainRef    `json:"chains,omitempty"`
	MaxIterations int           `json:"max_iterations,omitempty"` // 0: the agent's limit
	Deadline      time.Duration `json:"deadline,omitempty"`       // 0: the agent's deadline
	Interactive   bool          `json:"interactive,omitempty"`    // the owner is waiting (chat)
	// NoTools answers without offering tools (a general chat question):
	// the tool definitions are most of a small prompt's tokens.
	NoTools bool   `json:"no_tools,omitempty"`
	Session string `json:"session,omitempty"`
	Origin  string `json:"origin,omitempty"` // proposals' origin; default agent

	// Background runs (see background.go). Kind and Subject name the job
	// ("draft_reply", "item:42") and make the run's id, so one job has one
	// run.
	Kind    string `json:"kind,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Tools, when set, is the subset of the agent's tools offered; the
	// job's own tools (Options.JobTools) are added.
	Tools []string `json:"tools,omitempty"`
	// Prefetch are tool calls the run makes itself before it first asks
	// the model: the context a job always needs costs no model turn.
	Prefetch []router.ToolCall `json:"prefetch,omitempty"`
	// MaxTokens stops the run once its model calls used this many tokens
	// (input and output); 0: no cap.
	MaxTokens int `json:"max_tokens,omitempty"`
	// FinishOn are tools whose proposal completes the job: the run ends
	// when one succeeds, without another model turn.
	FinishOn []string `json:"finish_on,omitempty"`
	// MaxOutput bounds each model answer (tokens); 0: the provider's default.
	MaxOutput int `json:"max_output,omitempty"`
	// NoProfile leaves the owner's profile out of the prompt.
	NoProfile bool `json:"no_profile,omitempty"`
}

// ChainRef names a chain instance for the reasoning graph.
type ChainRef struct {
	Name    string `json:"name"`
	Subject string `json:"subject,omitempty"`
}

// runState is everything a run needs to continue; it is what a checkpoint saves.
type runState struct {
	ID           string           `json:"id"`
	Task         Task             `json:"task"`
	Messages     []router.Message `json:"messages"` // without the system message
	Pinned       int              `json:"pinned"`   // index of the task message in Messages
	Plan         *planner.Plan    `json:"plan,omitempty"`
	Graph        *graph.Graph     `json:"graph,omitempty"`
	Iteration    int              `json:"iteration"`
	ToolCalls    int              `json:"tool_calls"`
	Calls        map[string]int   `json:"calls"`
	Breaker      breaker          `json:"breaker"`
	BlockedTurns int              `json:"blocked_turns,omitempty"`
	Cites        []Cited          `json:"cites,omitempty"`
	Proposals    []ProposalRef    `json:"proposals,omitempty"`
	Usage        router.Usage     `json:"usage"`
	Summary      summaryState     `json:"summary"`
	Started      time.Time        `json:"started"`
	LastText     string           `json:"last_text,omitempty"`
	StopDetail   string           `json:"stop_detail,omitempty"` // the error behind an early stop
	JobDone      bool             `json:"job_done,omitempty"`    // a FinishOn tool proposed

	profile string               // rendered once per process; not saved
	prov    *approval.Provenance // rebuilt from the state when the loop starts; not saved
	memory  string               // likewise
}

// cite numbers an item for citation, reusing its number if already shown.
func (st *runState) cite(c Cited) int {
	for i, x := range st.Cites {
		if (c.ItemID != 0 && x.ItemID == c.ItemID) || (c.ItemID == 0 && x.Source == c.Source && x.ExternalID == c.ExternalID) {
			return i + 1
		}
	}
	st.Cites = append(st.Cites, c)
	return len(st.Cites)
}

func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "run_" + hex.EncodeToString(b)
}

// Run carries out a task, calling onEvent (if not nil) for every event, in
// order, from the calling goroutine or the run's tool goroutines (never
// two at once). The error is set only when the run could not start; a run
// stopped by a limit returns an Answer that says why.
func (a *Agent) Run(ctx context.Context, task Task, onEvent func(Event)) (*Answer, error) {
	if strings.TrimSpace(task.Objective) == "" {
		return nil, errors.New("agent: empty objective")
	}
	if task.Route == "" {
		task.Route = router.TaskChat
	}
	id := newRunID()
	if task.Kind != "" {
		if task.Subject == "" {
			return nil, errors.New("agent: a background task needs a subject")
		}
		id = RunID(task.Kind, task.Subject)
	}
	st := &runState{ID: id, Task: task, Calls: map[string]int{}, Started: a.opts.Now(), Graph: &graph.Graph{}}
	st.Messages = append(st.Messages, task.History...)
	msg := task.Objective
	if len(task.Items) > 0 {
		msg += "\n\n" + st.renderItems(a.opts.Location, "retrieved", task.Items)
	}
	st.Pinned = len(st.Messages)
	st.Messages = append(st.Messages, router.Message{Role: router.RoleUser, Content: msg})
	e := a.emitter(st, onEvent)

	if task.Plan != "" {
		st.Plan = a.plan(ctx, task)
		e(Event{Type: EventPlan, Plan: st.Plan})
		for _, c := range st.Plan.Chains {
			if _, err := st.Graph.AddChain(c, ""); err != nil {
				a.log.Warn("plan names an unknown chain", "chain", c, "err", err)
			}
		}
	}
	for _, c := range task.Chains {
		if _, err := st.Graph.AddChain(c.Name, c.Subject); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	if len(task.Prefetch) > 0 {
		if err := a.prefetch(ctx, st, e); err != nil {
			return nil, err
		}
	}
	return a.loop(ctx, st, e)
}

func (a *Agent) plan(ctx context.Context, task Task) *planner.Plan {
	var p *planner.Plan
	if task.Plan == "auto" {
		p = planner.ForObjective(task.Objective)
	} else if tp, ok := planner.FromTemplate(task.Plan, task.Objective); ok {
		p = tp
	} else {
		a.log.Warn("unknown plan template; using the objective's", "template", task.Plan)
		p = planner.ForObjective(task.Objective)
	}
	if task.RefinePlan {
		refined, err := planner.Refine(ctx, completer{a.opts.Model, task.Route}, p, a.opts.Tools.Names())
		if err != nil {
			a.log.Info("plan refinement not used; keeping the template", "err", err)
		}
		p = refined
	}
	return p
}

// completer adapts the streaming Model to planner.Completer. The plan
// carries the run's objective: within keeps it to the run's privacy.
type completer struct {
	m      Model
	within router.Task
}

func (c completer) Complete(ctx context.Context, req router.Request) (*router.Response, error) {
	req.Within = c.within
	return c.m.Stream(ctx, req, nil)
}

// emitter serialises events and stamps them with the run id.
func (a *Agent) emitter(st *runState, onEvent func(Event)) func(Event) {
	var mu sync.Mutex
	return func(ev Event) {
		if onEvent == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		ev.RunID = st.ID
		if ev.Iteration == 0 {
			ev.Iteration = st.Iteration
		}
		onEvent(ev)
	}
}

// loop is the ReAct loop: call the model, run its tool calls, repeat.
func (a *Agent) loop(parent context.Context, st *runState, emit func(Event)) (*Answer, error) {
	lim := a.opts.Limits
	if n := a.opts.TaskIterations[st.Task.Route]; n > 0 {
		lim.MaxIterations = n
	}
	if st.Task.MaxIterations > 0 {
		lim.MaxIterations = st.Task.MaxIterations
	}
	deadline := a.opts.Deadline
	if st.Task.Deadline > 0 {
		deadline = st.Task.Deadline
	}
	// The deadline counts from the run's start; a run resumed after its
	// deadline passed while the daemon was down gets a fresh one.
	remaining := deadline - a.opts.Now().Sub(st.Started)
	if remaining <= 0 {
		remaining = deadline
	}
	ctx, cancel := context.WithTimeout(parent, remaining)
	defer cancel()
	if !st.Task.NoProfile {
		st.profile = a.profile(ctx)
	}
	if a.opts.Memory != nil {
		st.memory = a.opts.Memory.PromptMemory(ctx, st.Task.Objective)
	}
	st.recordProvenance()
	tools, err := a.runTools(ctx, st)
	if err != nil {
		return nil, err
	}
	win := contextWindow{Budget: a.opts.ContextTokens, KeepRecent: 2}
	if a.opts.Summarize {
		win.Summarize = a.summarizer(ctx, st)
	}

	// A run stopped between its model's answer and the tools it asked
	// for (the answer is saved first when it proposes) runs those calls
	// now: the gate answers a repeated proposal with the one it has.
	if calls := st.unanswered(); len(calls) > 0 {
		if done, ans, err := a.afterCalls(ctx, st, tools, calls, lim, emit); done {
			return ans, err
		}
	}
	for {
		if st.Iteration >= lim.MaxIterations {
			return a.finish(ctx, st, emit, StopMaxIterations)
		}
		if st.Task.MaxTokens > 0 && st.Usage.InputTokens+st.Usage.OutputTokens >= st.Task.MaxTokens {
			st.StopDetail = fmt.Sprintf("%d tokens used of the run's %d", st.Usage.InputTokens+st.Usage.OutputTokens, st.Task.MaxTokens)
			return a.finish(ctx, st, emit, StopTokens)
		}
		if stop, ok := ctxStop(ctx, parent); ok {
			return a.finish(ctx, st, emit, stop)
		}
		st.Iteration++
		msgs := append([]router.Message{{Role: router.RoleSystem, Content: a.systemPrompt(st)}}, st.Messages...)
		msgs = win.fit(msgs, st.Pinned+1, &st.Summary)
		req := router.Request{Task: st.Task.Route, Messages: msgs, Interactive: st.Task.Interactive, MaxTokens: st.Task.MaxOutput}
		if !st.Task.NoTools {
			req.Tools = tools.Specs()
		}
		resp, err := a.opts.Model.Stream(ctx, req, func(d router.Delta) {
			switch {
			case d.Reset: // the router retries: what streamed so far is void
				emit(Event{Type: EventText, Reset: true})
			case d.Text != "":
				emit(Event{Type: EventText, Text: d.Text})
			}
		})
		if err != nil {
			if stop, ok := ctxStop(ctx, parent); ok {
				return a.finish(ctx, st, emit, stop)
			}
			if stop, ok := terminal(err); ok {
				st.StopDetail = err.Error()
				return a.finish(ctx, st, emit, stop)
			}
			emit(Event{Type: EventError, Text: "model: " + err.Error()})
			if st.Breaker.record(err, lim.MaxSameErrors) {
				st.StopDetail = err.Error()
				a.log.Warn("circuit breaker tripped", "run", st.ID, "err", err)
				return a.finish(ctx, st, emit, StopCircuitBreaker)
			}
			select {
			case <-time.After(a.opts.RetryDelay):
			case <-ctx.Done():
			}
			continue
		}
		st.Breaker.reset()
		st.Usage.InputTokens += resp.Usage.InputTokens
		st.Usage.OutputTokens += resp.Usage.OutputTokens
		st.Usage.CostUSD += resp.Usage.CostUSD
		u := resp.Usage
		emit(Event{Type: EventUsage, Usage: &u})

		st.Messages = append(st.Messages, router.Message{Role: router.RoleAssistant, Content: resp.Content, ToolCalls: storableCalls(resp.ToolCalls)})
		if strings.TrimSpace(resp.Content) != "" {
			st.LastText = resp.Content
		}
		if len(resp.ToolCalls) == 0 {
			return a.finish(ctx, st, emit, StopDone)
		}
		if tools.anyOutgoing(resp.ToolCalls) && a.opts.Checkpoints != nil {
			// Saved before it proposes: resumed, the run makes the same
			// proposal (which the gate keeps as one), not a new draft.
			a.save(ctx, st, nil, RunRunning)
		}
		if done, ans, err := a.afterCalls(ctx, st, tools, resp.ToolCalls, lim, emit); done {
			return ans, err
		}
	}
}

// afterCalls runs a turn's tool calls and checkpoints; done says the run
// ended (a cap, a loop, or the job's proposal).
func (a *Agent) afterCalls(ctx context.Context, st *runState, tools *Registry, calls []router.ToolCall, lim Limits, emit func(Event)) (bool, *Answer, error) {
	proposed, capped := a.runCalls(ctx, st, tools, calls, emit)
	if (proposed || st.Iteration%lim.CheckpointEvery == 0) && a.opts.Checkpoints != nil {
		a.save(ctx, st, nil, RunRunning)
	}
	switch {
	case capped:
		ans, err := a.finish(ctx, st, emit, StopToolCap)
		return true, ans, err
	case st.BlockedTurns >= lim.MaxBlockedTurns:
		ans, err := a.finish(ctx, st, emit, StopLoop)
		return true, ans, err
	case st.jobDone():
		ans, err := a.finish(ctx, st, emit, StopDone)
		return true, ans, err
	}
	return false, nil, nil
}

// ctxStop maps a done context to the stop reason: the caller's cancel or
// the run's own deadline.
func ctxStop(ctx, parent context.Context) (Stop, bool) {
	if ctx.Err() == nil {
		return "", false
	}
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return StopCanceled, true
	}
	return StopDeadline, true
}

// finish builds the answer, saves the run and emits done.
func (a *Agent) finish(ctx context.Context, st *runState, emit func(Event), stop Stop) (*Answer, error) {
	text := ""
	switch {
	case stop == StopDone && st.jobDone():
		text = st.LastText
		for _, p := range st.Proposals {
			text = strings.TrimSpace(text + fmt.Sprintf("\nProposed %s (%s): %s", p.ID, p.Kind, p.Title))
		}
	case stop == StopDone:
		text = st.Messages[len(st.Messages)-1].Content
	default:
		text = stopMessage(stop, st.Iteration)
		if st.StopDetail != "" && stop != StopNoModel {
			text += " (" + st.StopDetail + ")"
		}
		if st.LastText != "" {
			text += "\n\n" + st.LastText
		}
		if len(st.Proposals) > 0 {
			text += fmt.Sprintf("\n\n%d proposal(s) are waiting for your approval.", len(st.Proposals))
		}
	}
	ans := &Answer{
		RunID: st.ID, SessionID: st.Task.Session, Text: text, Citations: citations(text, st.Cites),
		Proposals: st.Proposals, Stop: stop, Iterations: st.Iteration, ToolCalls: st.ToolCalls, Usage: st.Usage,
		Retrieval: len(st.Cites) > 0,
	}
	if stop == StopCircuitBreaker || stop == StopModelError {
		ans.ModelError = st.StopDetail
	}
	if a.opts.Checkpoints != nil {
		// A canceled background run (the daemon stopping) stays resumable;
		// a canceled chat run lost its caller and is abandoned; any other
		// end is final. A canceled context must not prevent the save.
		switch {
		case stop == StopCanceled && !st.Task.Interactive:
			a.save(context.WithoutCancel(ctx), st, nil, RunRunning)
		case stop == StopCanceled:
			a.save(context.WithoutCancel(ctx), st, ans, RunAbandoned)
		default:
			a.save(context.WithoutCancel(ctx), st, ans, RunDone)
		}
	}
	emit(Event{Type: EventDone, Answer: ans})
	return ans, nil
}

// runTools is the registry for one run: the agent's tools and the added
// ones (MoreTools) — or the task's subset of them —, the job's own, and
// the run's own (finish_phase while a plan has phases left to finish,
// record_finding with a graph).
func (a *Agent) runTools(ctx context.Context, st *runState) (*Registry, error) {
	base := a.opts.Tools
	if len(st.Task.Tools) > 0 {
		base = a.opts.Tools.Only(st.Task.Tools...)
	}
	var extra []*Tool
	if a.opts.MoreTools != nil {
		for _, t := range a.opts.MoreTools() {
			// An added tool never replaces one of the agent's own.
			if _, dup := a.opts.Tools.Get(t.Name); dup {
				a.log.Warn("an added tool has the name of a standard tool; left out", "tool", t.Name)
				continue
			}
			if len(st.Task.Tools) == 0 || slices.Contains(st.Task.Tools, t.Name) {
				extra = append(extra, t)
			}
		}
	}
	if st.Task.Kind != "" && a.opts.JobTools != nil {
		jt, err := a.opts.JobTools(ctx, st.Task)
		if err != nil {
			return nil, fmt.Errorf("agent: %s tools: %w", st.Task.Kind, err)
		}
		extra = append(extra, jt...)
	}
	if st.Plan != nil && len(st.Plan.Phases)-st.Plan.Current > 1 {
		extra = append(extra, finishPhaseTool)
	}
	if len(st.Graph.Nodes) > 0 {
		extra = append(extra, recordFindingTool)
	}
	return base.With(extra...), nil
}

func (a *Agent) summarizer(ctx context.Context, st *runState) Summarizer {
	return func(dropped []router.Message, previous string) (string, error) {
		var b strings.Builder
		if previous != "" {
			fmt.Fprintf(&b, "Earlier summary: %s\n\n", previous)
		}
		for _, m := range dropped {
			content := m.Content
			if len(content) > 2000 {
				content = content[:2000] + "…"
			}
			fmt.Fprintf(&b, "%s: %s\n", m.Role, content)
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "  (called %s %s)\n", c.Name, c.Arguments)
			}
		}
		resp, err := a.opts.Model.Stream(ctx, router.Request{
			// The turns are the run's data: they keep to its route's privacy.
			Task: router.TaskReflection, Within: st.Task.Route, Interactive: st.Task.Interactive, MaxTokens: 300,
			Messages: []router.Message{
				{Role: router.RoleSystem, Content: "Summarise the agent's earlier steps in at most five sentences: what was looked up, what was found (with [n] citation numbers), what was proposed. " + untrusted.Rule},
				{Role: router.RoleUser, Content: b.String()},
			},
		}, nil)
		if err != nil {
			return "", err
		}
		st.Usage.InputTokens += resp.Usage.InputTokens
		st.Usage.OutputTokens += resp.Usage.OutputTokens
		st.Usage.CostUSD += resp.Usage.CostUSD
		return resp.Content, nil
	}
}

// storableCalls is the assistant turn as kept in the conversation: a call
// whose arguments are not a JSON object keeps "{}" there (its tool result
// quotes what the model sent), so the history can be saved and sent back
// to any provider.
func storableCalls(calls []router.ToolCall) []router.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]router.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = c
		if c.CheckArguments() != nil {
			out[i].Arguments = json.RawMessage("{}")
		}
	}
	return out
}

// marshalArgs is for events: the model's arguments as a string, bounded.
func marshalArgs(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}
