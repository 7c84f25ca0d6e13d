package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/omnibrain/omnibrain/router"
)

// Background runs are the proactive engine's work done by the agent: a
// reply drafted for a mail, a meeting prepared, a briefing's narrative.
// Their Task names a job Kind and Subject (one run per job and subject:
// the run's id is made of them), the subset of tools fit for the job,
// the context to look up before the model is first asked (Prefetch), a
// token cap, and the tools whose proposal completes the job (FinishOn).
// The agent knows nothing of who asks for them or why.

// RunID is the id of the background run of a job about a subject.
func RunID(kind, subject string) string { return kind + ":" + subject }

// prefetch runs the task's Prefetch calls as the run's first turn, as if
// the model had asked for them, so their results are in the conversation
// (numbered for citation, marked as data), then reports the items gathered
// (EventContext), completes the plan's first phase, and checkpoints.
func (a *Agent) prefetch(ctx context.Context, st *runState, emit func(Event)) error {
	tools := a.opts.Tools
	if st.Task.Kind != "" && a.opts.JobTools != nil {
		jt, err := a.opts.JobTools(ctx, st.Task)
		if err != nil {
			return fmt.Errorf("agent: %s tools: %w", st.Task.Kind, err)
		}
		tools = tools.With(jt...)
	}
	calls := make([]router.ToolCall, len(st.Task.Prefetch))
	names := make([]string, 0, len(calls))
	for i, c := range st.Task.Prefetch {
		c.ID = fmt.Sprintf("prefetch_%d", i+1)
		calls[i] = c
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	st.Messages = append(st.Messages, router.Message{Role: router.RoleAssistant, ToolCalls: calls})
	a.runCalls(ctx, st, tools, calls, emit)
	emit(Event{Type: EventContext, Items: citations(allCited(len(st.Cites)), st.Cites)})
	if st.Plan != nil && st.Plan.Active() != nil {
		reflection := fmt.Sprintf("%d item(s) gathered with %s", len(st.Cites), strings.Join(names, ", "))
		if ph := st.Plan.Advance(reflection); ph != nil {
			emit(Event{Type: EventPhaseComplete, Phase: ph})
		}
	}
	if a.opts.Checkpoints != nil {
		a.save(ctx, st, nil, RunRunning)
	}
	return nil
}

// allCited is a citation text naming items 1..n.
func allCited(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "[%d]", i)
	}
	return b.String()
}

// unanswered returns the tool calls of the conversation's last turn when
// none of them was answered: the run stopped after saving the model's
// answer and before running what it asked for.
func (st *runState) unanswered() []router.ToolCall {
	if len(st.Messages) == 0 {
		return nil
	}
	last := st.Messages[len(st.Messages)-1]
	if last.Role != router.RoleAssistant || len(last.ToolCalls) == 0 {
		return nil
	}
	return last.ToolCalls
}

// jobDone reports whether a tool that completes the job has proposed.
func (st *runState) jobDone() bool { return st.JobDone }

// Only returns a registry of the named tools that r has.
func (r *Registry) Only(names ...string) *Registry {
	out := &Registry{tools: map[string]*Tool{}}
	for _, n := range names {
		if t, ok := r.tools[n]; ok {
			out.tools[n] = t
		}
	}
	return out
}

// anyOutgoing reports whether a turn asks for an outgoing tool.
func (r *Registry) anyOutgoing(calls []router.ToolCall) bool {
	return slices.ContainsFunc(calls, func(c router.ToolCall) bool {
		t, ok := r.tools[c.Name]
		return ok && t.Effect == Outgoing
	})
}
