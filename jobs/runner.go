// Package jobs does the proactive engine's work as background agent runs:
// a reply drafted for a mail that needs one, a meeting prepared, a
// briefing's narrative, a GitHub issue analysed, a standing rule proposed
// for a confirmed pattern. For each kind of job it says what the run is
// given — its plan template, the tools fit for it (read tools and its own
// proposal tool), the context it looks up before the model is asked, its
// caps and its route — and what comes of it.
//
// Runs are checkpointed and identified by job and subject, so a job is
// done once: asked again, a finished run gives its answer, an interrupted
// one resumes from its checkpoint, and one interrupted too often is
// dropped. A few run at a time. When no model can take a run (none, or
// the budget spent) the job is paused and the caller's template path
// does the work and says so.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Job kinds.
const (
	DraftReply        = "draft_reply"
	MeetingPrep       = "meeting_prep"
	BriefingNarrative = "briefing_narrative"
	Automation        = "automation"
	IssueAnalysis     = "issue_analysis"
)

// Errors a job returns instead of its result; the caller's template path
// takes over. ErrPaused wraps the router's ErrNoModel or ErrBudgetExceeded.
var (
	ErrPaused  = errors.New("background run paused")
	ErrFailed  = errors.New("background run failed")
	ErrDropped = errors.New("background run dropped after repeated interruptions")
)

// Model says whether a model can take background work on a task now;
// *router.Router provides it.
type Model interface {
	Ready(ctx context.Context, task router.Task) error
}

// Health receives the runner's counters and notes; *health.Registry
// provides it.
type Health interface {
	Add(name, counter string, n int64)
	Degrade(name string, err error)
}

// Options are the runner's dependencies; all but Log and Health are
// required.
type Options struct {
	Agent  *agent.Agent
	Runs   *agent.Runs
	Chains *graph.Chains
	Store  *store.Store
	Model  Model
	// OwnerName signs the drafts' prompt; Location is the owner's
	// timezone, for the times the runs are told (default time.Local).
	OwnerName string
	Location  *time.Location
	// Concurrency is how many runs go at once (default 2); MaxAttempts
	// how often a run may be started or resumed before it is dropped
	// (default 3).
	Concurrency int
	MaxAttempts int
	Log         *slog.Logger
	Health      Health
	// HealthName is the component the runner reports under (default agent).
	HealthName string
}

// Runner runs jobs. It is safe for concurrent use.
type Runner struct {
	o   Options
	sem chan struct{}

	mu       sync.Mutex
	inflight map[string]*flight
}

// flight is a run in progress; later askers wait for its outcome.
type flight struct {
	done chan struct{}
	ans  *agent.Answer
	err  error
}

// New returns a runner.
func New(o Options) (*Runner, error) {
	if o.Agent == nil || o.Runs == nil || o.Chains == nil || o.Store == nil || o.Model == nil {
		return nil, errors.New("jobs: agent, runs, chains, store and model are required")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 2
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.HealthName == "" {
		o.HealthName = "agent"
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	return &Runner{o: o, sem: make(chan struct{}, o.Concurrency), inflight: map[string]*flight{}}, nil
}

// job is one run to do and how its context is recorded.
type job struct {
	task agent.Task
	// chain and stage, when set, are the lifecycle stage the run's
	// prefetched context completes; detail describes it from the items.
	chain, stage string
	detail       func(items []agent.Citation) string
}

// run does a job once: the answer of its finished run, its interrupted
// run resumed, or a new run. Concurrent askers share one run.
func (r *Runner) run(ctx context.Context, j job) (*agent.Answer, error) {
	return r.once(ctx, agent.RunID(j.task.Kind, j.task.Subject), &j)
}

func (r *Runner) once(ctx context.Context, id string, j *job) (*agent.Answer, error) {
	r.mu.Lock()
	if f := r.inflight[id]; f != nil {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.ans, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	r.inflight[id] = f
	r.mu.Unlock()
	f.ans, f.err = r.exec(ctx, id, j)
	r.mu.Lock()
	delete(r.inflight, id)
	r.mu.Unlock()
	close(f.done)
	return f.ans, f.err
}

// exec looks up the run's checkpoint and finishes the job from there. j
// is nil when only an interrupted run is resumed.
func (r *Runner) exec(ctx context.Context, id string, j *job) (*agent.Answer, error) {
	cp, err := r.o.Runs.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		if j == nil {
			return nil, err
		}
		if err := r.o.Model.Ready(ctx, j.task.Route); err != nil {
			return nil, r.pause(ctx, id, j.task, err)
		}
		release, err := r.acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		ans, err := r.o.Agent.Run(ctx, j.task, r.events(ctx, j))
		return r.settle(ctx, id, ans, err)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	switch cp.Status {
	case agent.RunDone:
		var ans agent.Answer
		if err := json.Unmarshal(cp.Answer, &ans); err != nil {
			return nil, fmt.Errorf("jobs: run %s: answer: %w", id, err)
		}
		return &ans, nil
	case agent.RunPaused:
		return nil, fmt.Errorf("%w: %s", ErrPaused, cp.LastError)
	case agent.RunDropped:
		return nil, fmt.Errorf("%w: %s", ErrDropped, cp.LastError)
	case agent.RunRunning:
	default:
		return nil, fmt.Errorf("%w: %s (%s)", ErrFailed, cp.LastError, cp.Status)
	}
	// Interrupted (the daemon stopped or crashed): resume from the
	// checkpoint, unless it keeps being interrupted.
	n, err := r.o.Runs.Attempt(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if n > r.o.MaxAttempts {
		return nil, r.drop(ctx, cp, n)
	}
	if err := r.o.Model.Ready(ctx, router.Task(cp.Route)); err != nil {
		return nil, r.pause(ctx, id, agent.Task{}, err)
	}
	release, err := r.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	r.o.Log.Info("resuming a background run", "run", id, "attempt", n)
	ans, err := r.o.Agent.Resume(ctx, id, r.events(ctx, j))
	return r.settle(ctx, id, ans, err)
}

func (r *Runner) acquire(ctx context.Context) (func(), error) {
	select {
	case r.sem <- struct{}{}:
		return func() { <-r.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// settle files the run's outcome: done, interrupted (resumable), paused
// (no model could take it) or failed (a cap or a model error).
func (r *Runner) settle(ctx context.Context, id string, ans *agent.Answer, err error) (*agent.Answer, error) {
	end := func(status, why string) {
		if err := r.o.Runs.End(context.WithoutCancel(ctx), id, status, why); err != nil {
			r.o.Log.Error("recording a background run's end failed", "run", id, "err", err)
		}
	}
	if err != nil {
		end(agent.RunFailed, err.Error())
		r.count("failed")
		return nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	r.count("runs")
	switch ans.Stop {
	case agent.StopDone:
		return ans, nil
	case agent.StopCanceled:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, context.Canceled
	case agent.StopBudget:
		end(agent.RunPaused, ans.Text)
		return nil, fmt.Errorf("%w: %w", ErrPaused, router.ErrBudgetExceeded)
	case agent.StopNoModel:
		end(agent.RunPaused, ans.Text)
		return nil, fmt.Errorf("%w: %w", ErrPaused, router.ErrNoModel)
	}
	end(agent.RunFailed, fmt.Sprintf("%s: %s", ans.Stop, ans.Text))
	r.count("failed")
	r.o.Log.Warn("a background run ended without doing its job", "run", id, "stop", ans.Stop)
	return nil, fmt.Errorf("%w: %s", ErrFailed, ans.Stop)
}

// pause records that no model could take the job now (kept, so explain
// says why and a second ask gets the same answer at once).
func (r *Runner) pause(ctx context.Context, id string, t agent.Task, cause error) error {
	r.count("paused")
	if t.Kind != "" {
		state, _ := json.Marshal(map[string]any{"task": t})
		if err := r.o.Runs.Save(ctx, &agent.Checkpoint{ID: id, Kind: t.Kind, Subject: t.Subject, Route: string(t.Route),
			Objective: t.Objective, Status: agent.RunPaused, State: state}); err != nil {
			r.o.Log.Error("recording a paused run failed", "run", id, "err", err)
		}
	}
	if err := r.o.Runs.End(ctx, id, agent.RunPaused, cause.Error()); err != nil && !errors.Is(err, store.ErrNotFound) {
		r.o.Log.Error("recording a paused run failed", "run", id, "err", err)
	}
	return fmt.Errorf("%w: %w", ErrPaused, cause)
}

// drop gives up on a run interrupted too often: it may be what brings the
// daemon down. Explain shows it with its subject; status shows the note.
func (r *Runner) drop(ctx context.Context, cp *agent.Checkpoint, attempts int) error {
	why := fmt.Sprintf("interrupted %d times: dropped", attempts-1)
	if err := r.o.Runs.End(ctx, cp.ID, agent.RunDropped, why); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	r.count("dropped")
	err := fmt.Errorf("background run %s (%s) %s", cp.ID, cp.Objective, why)
	if r.o.Health != nil {
		r.o.Health.Degrade(r.o.HealthName, err)
	}
	r.o.Log.Error("dropped a background run", "run", cp.ID, "attempts", attempts-1)
	return fmt.Errorf("%w: %s", ErrDropped, why)
}

func (r *Runner) count(what string) {
	if r.o.Health != nil {
		r.o.Health.Add(r.o.HealthName, "background_"+what, 1)
	}
}

// events records the lifecycle stage a run's prefetched context
// completes, before the model is first asked (the proposal tools check it).
func (r *Runner) events(ctx context.Context, j *job) func(agent.Event) {
	return func(ev agent.Event) {
		if ev.Type != agent.EventContext || j == nil || j.stage == "" {
			return
		}
		s := graph.Stage{Subject: j.task.Subject, Chain: j.chain, Name: j.stage}
		for _, c := range ev.Items {
			s.Evidence = append(s.Evidence, c.ItemID)
		}
		if j.detail != nil {
			s.Detail = j.detail(ev.Items)
		}
		if err := r.o.Chains.Advance(ctx, s); err != nil {
			r.o.Log.Warn("recording a run's context failed", "subject", s.Subject, "err", err)
		}
	}
}

// ResumeInterrupted continues the background runs a stop or a crash
// interrupted, a few at a time, and returns when they have ended (or ctx
// is done). Their answers are kept: the jobs that asked for them get
// them when they ask again.
func (r *Runner) ResumeInterrupted(ctx context.Context) error {
	cps, err := r.o.Runs.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	var wg sync.WaitGroup
	for _, cp := range cps {
		if cp.Kind == "" {
			continue
		}
		wg.Go(func() {
			if _, err := r.once(ctx, cp.ID, nil); err != nil && ctx.Err() == nil {
				r.o.Log.Warn("an interrupted background run did not finish", "run", cp.ID, "err", err)
			}
		})
	}
	wg.Wait()
	return nil
}
