package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/omnibrain/omnibrain/graph"
)

// Checkpoints persists runs; *Runs provides it.
type Checkpoints interface {
	Save(ctx context.Context, c *Checkpoint) error
	Get(ctx context.Context, id string) (*Checkpoint, error)
}

func (a *Agent) save(ctx context.Context, st *runState, ans *Answer, status string) {
	if err := a.saveRun(ctx, st, ans, status); err != nil {
		a.log.Error("checkpoint failed", "run", st.ID, "err", err)
	}
}

// saveRun checkpoints a run with its status; ans is nil while it runs.
func (a *Agent) saveRun(ctx context.Context, st *runState, ans *Answer, status string) error {
	state, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	r := &Checkpoint{
		ID: st.ID, Session: st.Task.Session, Route: string(st.Task.Route), Objective: st.Task.Objective,
		Status: status, Iteration: st.Iteration, State: state, Interactive: st.Task.Interactive,
		Kind: st.Task.Kind, Subject: st.Task.Subject, Tokens: st.Usage.InputTokens + st.Usage.OutputTokens,
	}
	if ans != nil {
		if r.Answer, err = json.Marshal(ans); err != nil {
			return fmt.Errorf("agent: checkpoint: %w", err)
		}
	}
	return a.opts.Checkpoints.Save(ctx, r)
}

// Resume continues a checkpointed run that did not finish (the daemon
// stopped mid-run), from its last checkpoint. A finished run returns its
// saved answer.
func (a *Agent) Resume(ctx context.Context, runID string, onEvent func(Event)) (*Answer, error) {
	if a.opts.Checkpoints == nil {
		return nil, errors.New("agent: resume: no checkpoint store")
	}
	r, err := a.opts.Checkpoints.Get(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("agent: resume %s: %w", runID, err)
	}
	if len(r.Answer) > 0 {
		var ans Answer
		if err := json.Unmarshal(r.Answer, &ans); err != nil {
			return nil, fmt.Errorf("agent: resume %s: answer: %w", runID, err)
		}
		return &ans, nil
	}
	var st runState
	if err := json.Unmarshal(r.State, &st); err != nil {
		return nil, fmt.Errorf("agent: resume %s: state: %w", runID, err)
	}
	if st.Calls == nil {
		st.Calls = map[string]int{}
	}
	if st.Graph == nil {
		st.Graph = &graph.Graph{}
	}
	a.log.Info("resuming run", "run", runID, "iteration", st.Iteration)
	return a.loop(ctx, &st, a.emitter(&st, onEvent))
}
