package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/executor"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/proactive"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/store"
)

// proactiveParts are the proactive engine's pieces: triage of new mail
// (component "proactive"), the scheduler of briefings, meeting preps,
// follow-ups and patterns (component "scheduler"), and the notification
// policy the Telegram delivery asks.
type proactiveParts struct {
	engine *proactive.Engine
	triage *triage.Triager
	sched  *schedule.Scheduler
}

// openProactive builds the engine from the configuration and sets its
// notification policy; call it after openApproval and openRouter, and
// before openTelegram (which takes the policy). The collectors' polls are
// not scheduled here: the collectors schedule themselves.
func (a *App) openProactive(ctx context.Context, b *api.Backends) error {
	cfg := a.cfg
	log := a.log.With("component", "proactive")
	policy, err := proactive.NewPolicy(a.store, a.approval.gate, cfg.Notifications, cfg.Location, log)
	if err != nil {
		return err
	}
	a.setNotifyPolicy(policy)

	var model triage.Model
	var narrator proactive.Model
	if a.llm != nil && a.llm.Available() {
		model, narrator = a.llm, a.llm
	}
	p := &a.proactive
	p.triage, err = triage.New(triage.Options{
		Store: a.store, OwnerName: cfg.Owner.Name, Owner: cfg.Owner.Emails, VIPs: cfg.Owner.VIPs, Location: cfg.Location,
		Model: model, Brain: a.triageBrain(),
		Proposer: a.approval.gate, Notifier: a.approval.queue,
		Log: log.With("part", "triage"), Health: a.health, Now: a.store.Now,
	})
	if err != nil {
		return err
	}
	p.engine, err = proactive.New(proactive.Options{
		Store: a.store, Owner: cfg.Owner, Location: cfg.Location, Schedule: cfg.Schedule,
		Model: narrator, Brain: a.engineBrain(), Gate: a.approval.gate, Notifier: a.approval.queue,
		Log: log, Health: a.health, Now: a.store.Now,
	})
	if err != nil {
		return err
	}
	// Standing rules the patterns propose take effect only through the
	// gate, once the owner approves them.
	if err := a.registerExecutor(executor.Automation{Store: a.store}); err != nil {
		return err
	}
	since, err := a.firstRun(ctx)
	if err != nil {
		return err
	}
	p.sched = schedule.New(schedule.Options{Location: cfg.Location, Since: since, Log: a.log.With("component", "scheduler"), Health: a.health})
	for _, j := range p.engine.Jobs() {
		if err := p.sched.Add(j); err != nil {
			return fmt.Errorf("proactive: %w", err)
		}
	}
	a.collectors().stored = p.triage.Kick
	a.components = append(a.components,
		supervise.Component{Name: triage.HealthName, Run: p.triage.Run},
		supervise.Component{Name: schedule.HealthName, Run: p.sched.Run},
	)
	b.Briefings = briefings{e: p.engine}
	b.Explain = explainer{e: p.engine, a: a}
	return nil
}

// briefings serves the API's briefings from the engine: a request runs the
// same code as the schedule.
type briefings struct{ e *proactive.Engine }

func (b briefings) Briefing(ctx context.Context, kind string) (*api.Briefing, error) {
	br, created, err := b.e.Briefing(ctx, kind, schedule.Run{Job: kind, Manual: true})
	if err != nil {
		return nil, err
	}
	out := wireBriefing(br)
	out.New = created
	return out, nil
}

func (b briefings) Refresh(ctx context.Context, kind string) (*api.Briefing, error) {
	br, err := b.e.Refresh(ctx, kind)
	if err != nil {
		return nil, err
	}
	out := wireBriefing(br)
	out.New = true
	return out, nil
}

func (b briefings) Briefings(ctx context.Context, kind string, limit int) ([]*api.Briefing, error) {
	bs, err := b.e.Stored(ctx, kind, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*api.Briefing, 0, len(bs))
	for _, br := range bs {
		out = append(out, wireBriefing(br))
	}
	return out, nil
}

func wireBriefing(b *store.Briefing) *api.Briefing {
	return &api.Briefing{Kind: b.Kind, Day: b.Day, PeriodStart: b.PeriodStart, PeriodEnd: b.PeriodEnd, Created: b.Created,
		Late: b.Late, Manual: b.Manual, Narrative: b.Narrative, Text: b.Text, Data: json.RawMessage(b.Data)}
}

// explainer serves `omnibrain explain`.
type explainer struct {
	e *proactive.Engine
	a *App
}

func (x explainer) Explain(ctx context.Context, id string) (*api.Explanation, error) {
	ex, err := x.e.Explain(ctx, id)
	if errors.Is(err, proactive.ErrNotFound) {
		return nil, fmt.Errorf("%w: no item or proposal has the id %q", api.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	var runs []explainedRun
	if ex.Item != nil {
		cps, err := x.a.agent.runs.OfSubject(ctx, graph.ItemSubject(ex.Item.ID))
		if err != nil {
			return nil, err
		}
		for _, cp := range cps {
			runs = append(runs, explainedRun{ID: cp.ID, Kind: cp.Kind, Status: cp.Status, Attempts: cp.Attempts, Tokens: cp.Tokens, Error: cp.LastError, Updated: cp.Updated})
		}
	}
	detail, err := json.Marshal(struct {
		*proactive.Explanation
		Runs []explainedRun `json:"runs,omitempty"`
	}{ex, runs})
	if err != nil {
		return nil, err
	}
	text := proactive.FormatExplanation(ex, x.a.cfg.Location)
	if len(runs) > 0 {
		text += "\n\nBackground runs:"
		for _, r := range runs {
			text += fmt.Sprintf("\n  %s: %s, %d attempt(s), %d tokens", r.Kind, r.Status, r.Attempts, r.Tokens)
			if r.Error != "" && r.Status != agent.RunDone {
				text += " — " + r.Error
			}
		}
	}
	return &api.Explanation{ID: id, Text: text, Detail: detail}, nil
}

// explainedRun is a background run about the item explained.
type explainedRun struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Status   string    `json:"status"`
	Attempts int       `json:"attempts"`
	Tokens   int       `json:"tokens"`
	Error    string    `json:"error,omitempty"`
	Updated  time.Time `json:"updated"`
}

// triageBrain and engineBrain are the job runner as triage and the engine
// use it; nil without a model, so that their templates do the work.
func (a *App) triageBrain() triage.Brain {
	if a.agent.jobs == nil {
		return nil
	}
	return a.agent.jobs
}

func (a *App) engineBrain() proactive.Brain {
	if a.agent.jobs == nil {
		return nil
	}
	return a.agent.jobs
}

// firstRunKey is the meta key holding when the daemon first ran on the home.
const firstRunKey = "daemon.first_run"

// firstRun returns when the daemon first ran on this home, recording now
// (the scheduler's wall clock) on the first run: a morning briefing slot
// before it was not missed, and a new home is not greeted with one.
func (a *App) firstRun(ctx context.Context) (time.Time, error) {
	v, err := a.store.Meta(ctx, firstRunKey)
	if err != nil {
		return time.Time{}, fmt.Errorf("proactive: %w", err)
	}
	if v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err == nil {
			return t, nil
		}
		a.log.Warn("unreadable first run time; recording a new one", "value", v, "err", err)
	}
	now := schedule.RealClock{}.Now()
	err = a.store.Tx(ctx, func(tx *store.Tx) error { return tx.SetMeta(firstRunKey, now.UTC().Format(time.RFC3339Nano)) })
	if err != nil {
		return time.Time{}, fmt.Errorf("proactive: record the first run: %w", err)
	}
	return now, nil
}
