package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
)

// callOutcome is one tool call's result before it is added to the run.
type callOutcome struct {
	call     router.ToolCall
	tool     *Tool
	status   string
	text     string // our own words, or an error for the model
	res      Result
	proposal *ProposalRef
	advance  *string // finish_phase reflection
}

// runCalls runs one turn's tool calls: caps and loop detection first (in
// call order, so they are deterministic), then the allowed calls in
// parallel, then their results, findings and phase changes in call order.
// It reports whether a proposal was made and whether the per-run cap was hit.
func (a *Agent) runCalls(ctx context.Context, st *runState, tools *Registry, calls []router.ToolCall, emit func(Event)) (proposed, capped bool) {
	lim := a.opts.Limits
	outs := make([]*callOutcome, len(calls))
	var run []int
	for i, c := range calls {
		o := &callOutcome{call: c}
		outs[i] = o
		emit(Event{Type: EventToolStart, Tool: &ToolEvent{CallID: c.ID, Name: c.Name, Arguments: marshalArgs(c.Arguments)}})
		t, ok := tools.Get(c.Name)
		switch {
		case i >= lim.MaxCallsPerIter:
			o.status, o.text = StatusRefused, fmt.Sprintf("Refused: at most %d tool calls are run per turn; this one was not run. Ask again next turn if you still need it.", lim.MaxCallsPerIter)
			continue
		case st.ToolCalls >= lim.MaxCallsPerRun:
			o.status, o.text = StatusRefused, fmt.Sprintf("Refused: this task reached its limit of %d tool calls. Answer with what you have.", lim.MaxCallsPerRun)
			capped = true
			continue
		}
		st.ToolCalls++
		if !ok {
			o.status, o.text = StatusError, fmt.Sprintf("Error: there is no tool named %q. Available tools: %s.", c.Name, strings.Join(tools.Names(), ", "))
			continue
		}
		o.tool = t
		if t.Effect == Forbidden {
			o.status, o.text = StatusRefused, fmt.Sprintf("Refused: %s is forbidden and is never run.", c.Name)
			continue
		}
		canon, err := t.validate(c.Arguments)
		key := callKey(c.Name, canon)
		if err != nil {
			key = callKey(c.Name, c.Arguments)
		}
		if n := st.Calls[key]; n >= lim.MaxIdenticalCalls {
			o.status, o.text = StatusBlocked, fmt.Sprintf("Blocked: you already called %s with exactly these arguments %d times; the result will not change. Use the earlier result, try different arguments, or give your answer now.", c.Name, n)
			continue
		}
		st.Calls[key]++
		if err != nil {
			o.status, o.text = StatusInvalid, fmt.Sprintf("Error: %v. You sent: %s\nThe arguments must be a JSON object matching this schema: %s", err, clipRunes(string(c.Arguments), 500), t.schema)
			continue
		}
		o.call.Arguments = canon
		run = append(run, i)
		if t.Status != "" && t.Effect != Outgoing {
			emit(Event{Type: EventToolStatus, Text: t.Status, Tool: &ToolEvent{CallID: c.ID, Name: c.Name}})
		}
	}

	var wg sync.WaitGroup
	tctx := withProvenance(ctx, st)
	for _, i := range run {
		wg.Go(func() { a.execute(tctx, st, outs[i]) })
	}
	wg.Wait()

	blocked := 0
	for _, o := range outs {
		if o.status == StatusBlocked {
			blocked++
		}
		content := a.apply(st, o, emit)
		st.recordResult(o, content)
		ev := &ToolEvent{CallID: o.call.ID, Name: o.call.Name, Status: o.status}
		if o.proposal != nil {
			ev.ProposalID = o.proposal.ID
			proposed = true
			if slices.Contains(st.Task.FinishOn, o.call.Name) {
				st.JobDone = true
			}
		}
		emit(Event{Type: EventToolEnd, Tool: ev})
		failed := o.status != StatusOK && o.status != StatusProposed
		st.Messages = append(st.Messages, router.Message{Role: router.RoleTool, ToolCallID: o.call.ID, Name: o.call.Name, Content: content, IsError: failed})
	}
	if blocked == len(outs) {
		st.BlockedTurns++
	} else {
		st.BlockedTurns = 0
	}
	return proposed, capped
}

// execute runs one validated call with its timeout. A tool that ignores
// its context is abandoned at the timeout; a panicking tool is an error.
func (a *Agent) execute(ctx context.Context, st *runState, o *callOutcome) {
	t := o.tool
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()

	type result struct {
		res   Result
		draft *ProposalRef
		err   error
	}
	done := make(chan result, 1) // buffered: an abandoned tool can still finish
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("the tool crashed: %v", p)
			}
			done <- r
		}()
		if t.Effect == Outgoing {
			r.draft, r.err = a.propose(tctx, st, t, o.call.Arguments)
			return
		}
		r.res, r.err = t.run(tctx, o.call.Arguments)
		// A read call that must not run unapproved becomes a proposal.
		if ar, ok := errors.AsType[*ApprovalRequired](r.err); ok {
			r.draft, r.err = a.proposeDraft(tctx, st, ar.Draft)
		}
	}()
	var r result
	select {
	case r = <-done:
	case <-tctx.Done():
		r.err = tctx.Err()
	}
	switch {
	case r.err != nil && errors.Is(r.err, context.DeadlineExceeded) && ctx.Err() == nil:
		o.status, o.text = StatusTimeout, fmt.Sprintf("Error: %s did not answer within %s and was stopped. Try something else.", t.Name, timeout)
	case r.err != nil:
		// An error can carry outside text (a plugin's stderr, an API's
		// message quoting an issue): it is data like any result.
		o.status, o.text = StatusError, fmt.Sprintf("Error from %s:\n%s", t.Name, untrusted.Wrap(t.Name+" error", r.err.Error()))
	case r.draft != nil:
		o.status, o.proposal = StatusProposed, r.draft
		o.text = fmt.Sprintf("Proposal %s created: %q. It is pending the owner's approval: nothing has been sent or changed, and nothing will be unless the owner approves it. You cannot approve it; tell the owner it is waiting for them.", r.draft.ID, r.draft.Title)
	default:
		o.status, o.res = StatusOK, r.res
		if adv, ok := r.res.advance(); ok {
			o.advance = &adv
		}
	}
	a.log.Debug("tool call", "run", st.ID, "tool", t.Name, "status", o.status, "ms", time.Since(start).Milliseconds())
}

// propose turns an outgoing call into a proposal through the gate.
func (a *Agent) propose(ctx context.Context, st *runState, t *Tool, args json.RawMessage) (*ProposalRef, error) {
	if a.opts.Proposer == nil {
		return nil, errors.New("proposals are not available in this process, so this action cannot even be proposed")
	}
	d, err := t.propose(ctx, args)
	if err != nil {
		return nil, err
	}
	return a.proposeDraft(ctx, st, d)
}

// proposeDraft hands a draft to the gate in the run's name.
func (a *Agent) proposeDraft(ctx context.Context, st *runState, d approval.Draft) (*ProposalRef, error) {
	if a.opts.Proposer == nil {
		return nil, errors.New("proposals are not available in this process, so this action cannot even be proposed")
	}
	d.Provenance = st.prov
	d.Origin = st.Task.Origin
	if d.Origin == "" {
		d.Origin = "agent"
	}
	if d.Reason == "" {
		d.Reason = "proposed by the agent while working on: " + clipRunes(st.Task.Objective, 200)
	}
	p, err := a.opts.Proposer.Propose(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("propose: %w", err)
	}
	return &ProposalRef{ID: p.ID, Kind: p.Kind, Title: p.Title, State: p.State}, nil
}

// apply adds a finished call to the run (citations, proposals, findings,
// phase) and returns the content the model sees. It runs in call order.
func (a *Agent) apply(st *runState, o *callOutcome, emit func(Event)) string {
	if o.status != StatusOK {
		if o.proposal != nil {
			st.Proposals = append(st.Proposals, *o.proposal)
			a.actOnHint(st, o.call.Name, "proposal "+o.proposal.ID, emit)
		}
		return o.text
	}
	var b strings.Builder
	b.WriteString(o.res.Text)
	if len(o.res.Items) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(st.renderItems(a.opts.Location, o.call.Name, o.res.Items))
	}
	for _, d := range o.res.Data {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(untrusted.Wrap(d.Source, d.Content))
	}
	for _, f := range o.res.Findings {
		if err := st.Graph.Apply(f); err != nil {
			fmt.Fprintf(&b, "\nFinding not recorded: %v", err)
			continue
		}
		emit(Event{Type: EventFinding, Finding: &f})
	}
	if o.advance != nil {
		if ph := st.Plan.Advance(*o.advance); ph != nil {
			emit(Event{Type: EventPhaseComplete, Phase: ph})
			if nx := st.Plan.Active(); nx != nil {
				fmt.Fprintf(&b, "Phase %q complete. Next phase: %s — %s.", ph.Name, nx.Name, nx.Goal)
			} else {
				fmt.Fprintf(&b, "Phase %q complete. All phases are done: give the owner your answer.", ph.Name)
			}
		} else {
			b.WriteString("The plan is already complete: give the owner your answer.")
		}
	}
	if b.Len() == 0 {
		b.WriteString("(no output)")
	}
	return b.String()
}

// actOnHint marks as acted the frontier node an outgoing tool serves, so
// the graph records what was proposed without the model having to.
func (a *Agent) actOnHint(st *runState, tool, evidence string, emit func(Event)) {
	for _, f := range st.Graph.Frontier() {
		if slices.Contains(f.ToolHints, tool) {
			fd := graph.Finding{Node: f.Node.ID, State: graph.Acted, Evidence: evidence}
			if st.Graph.Apply(fd) == nil {
				emit(Event{Type: EventFinding, Finding: &fd})
			}
			return
		}
	}
}

// renderItems numbers items for citation and shows them as one block of
// untrusted data.
func (st *runState) renderItems(loc *time.Location, source string, items []Cited) string {
	var b strings.Builder
	for _, it := range items {
		n := st.cite(it)
		fmt.Fprintf(&b, "[%d] %s · %s", n, it.Time.In(loc).Format("2006-01-02 15:04 MST"), it.Source)
		if it.From != "" {
			fmt.Fprintf(&b, " · from %s", it.From)
		}
		fmt.Fprintf(&b, " · %s\n", it.Title)
		if txt := strings.TrimSpace(it.Text); txt != "" {
			b.WriteString(txt)
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return fmt.Sprintf("%d item(s); cite them by their [number]:\n%s", len(items), untrusted.Wrap(source, b.String()))
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
