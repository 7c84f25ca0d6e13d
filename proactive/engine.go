// Package proactive is omnibrain's proactive engine: scheduled briefings
// (morning, evening, weekly), meeting preps, follow-ups, pattern
// detection, explanations of its decisions, and the notification policy.
// Triage of new mail lives in proactive/triage and the scheduler in
// proactive/schedule. Everything works without a model; a model only adds
// a short narrative on top of a briefing.
package proactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Model is the router as the engine uses it (briefing narratives).
type Model interface {
	Chat(ctx context.Context, req router.Request) (*router.Response, error)
}

// Brain does the engine's model work as background runs (jobs.Runner
// provides it): a briefing's narrative, a meeting's brief with [n]
// citations (and the ids it cites), and a standing rule proposed for a
// new pattern after checking its evidence (its proposal id, "" when the
// evidence did not hold). Its errors wrap router.ErrNoModel or
// router.ErrBudgetExceeded when no model could take the work.
type Brain interface {
	Narrative(ctx context.Context, kind, day, text string) (string, error)
	MeetingBrief(ctx context.Context, event *store.Item, attendees []string, related []int64) (string, []int64, error)
	ProposeAutomation(ctx context.Context, ob *store.Observation) (string, error)
}

// Gate is the approval gate as the engine uses it: it proposes nudges and
// lists proposals for the briefings and explanations.
type Gate interface {
	Propose(ctx context.Context, d approval.Draft) (*approval.Proposal, error)
	List(ctx context.Context, o approval.ListOptions) ([]*approval.Proposal, error)
	Get(ctx context.Context, id string) (*approval.Proposal, error)
}

// Notifier tells the owner something.
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// FollowupOptions set when something counts as waiting too long.
type FollowupOptions struct {
	AwaitDays int // the owner wrote last and has no answer (default 3)
	OwesDays  int // an important person waits for the owner (default 2)
	QuietDays int // a regular contact stopped writing (default 14)
	NudgeDays int // propose a nudge after this many days without an answer (default 5; negative: never)
	// MaxAgeDays ignores waits older than this: a thread silent for months
	// is over, not overdue (default 30).
	MaxAgeDays int
}

// Options are the engine's dependencies. Model, Brain, Gate and Notifier
// may be nil: briefings and preps are then templated only (Model alone
// writes narratives in one call), nothing is proposed, and nothing is
// pushed (briefings are still stored and served).
type Options struct {
	Store     *store.Store
	Owner     config.Owner
	Location  *time.Location
	Schedule  config.Schedule
	Model     Model
	Brain     Brain
	Gate      Gate
	Notifier  Notifier
	Followups FollowupOptions
	// PrepLead is how long before a meeting its prep is delivered (default 90m).
	PrepLead time.Duration
	Log      *slog.Logger
	Health   *health.Registry
	Now      func() time.Time
}

// Engine runs the proactive jobs.
type Engine struct {
	o Options
}

// New returns an engine.
func New(o Options) (*Engine, error) {
	if o.Store == nil {
		return nil, errors.New("proactive: a store is required")
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PrepLead <= 0 {
		o.PrepLead = 90 * time.Minute
	}
	f := &o.Followups
	f.AwaitDays = defaultInt(f.AwaitDays, 3)
	f.OwesDays = defaultInt(f.OwesDays, 2)
	f.QuietDays = defaultInt(f.QuietDays, 14)
	f.NudgeDays = defaultInt(f.NudgeDays, 5)
	f.MaxAgeDays = defaultInt(f.MaxAgeDays, 30)
	return &Engine{o: o}, nil
}

func defaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Job names, for schedule.Scheduler.Trigger and the logs.
const (
	JobMorning   = "morning_briefing"
	JobEvening   = "evening_briefing"
	JobWeekly    = "weekly_review"
	JobPatterns  = "patterns"
	JobPrep      = "meeting_prep"
	JobFollowups = "followups"
)

// prepSpec checks for meetings to prepare every quarter hour.
const prepSpec = "*/15 * * * *"

// morningCatchUp is how late a missed morning briefing is still sent.
const morningCatchUp = 12 * time.Hour

// Jobs are the engine's scheduled jobs. The collectors' polls are not
// among them: the collectors schedule themselves (daemon/collectors.go).
func (e *Engine) Jobs() []schedule.Job {
	brief := func(kind string) func(ctx context.Context, r schedule.Run) error {
		return func(ctx context.Context, r schedule.Run) error {
			_, _, err := e.Briefing(ctx, kind, r)
			return err
		}
	}
	return []schedule.Job{
		{Name: JobMorning, Spec: e.o.Schedule.MorningBriefing, CatchUp: morningCatchUp, Run: brief(KindMorning)},
		{Name: JobEvening, Spec: e.o.Schedule.EveningBriefing, Run: brief(KindEvening)},
		{Name: JobWeekly, Spec: e.o.Schedule.WeeklyReview, Run: brief(KindWeekly)},
		{Name: JobPrep, Spec: prepSpec, Run: func(ctx context.Context, r schedule.Run) error {
			_, err := e.MeetingPrep(ctx)
			return err
		}},
		{Name: JobFollowups, Spec: e.o.Schedule.Patterns, Run: func(ctx context.Context, r schedule.Run) error {
			_, err := e.Followups(ctx)
			return err
		}},
		{Name: JobPatterns, Spec: e.o.Schedule.Patterns, Run: func(ctx context.Context, r schedule.Run) error {
			_, err := e.Patterns(ctx)
			return err
		}},
	}
}

// notify hands a message to the notifier, if there is one.
func (e *Engine) notify(ctx context.Context, m notify.Message) error {
	if e.o.Notifier == nil {
		return nil
	}
	if err := e.o.Notifier.Notify(ctx, m); err != nil {
		return fmt.Errorf("proactive: notify: %w", err)
	}
	return nil
}

func (e *Engine) local(t time.Time) time.Time { return t.In(e.o.Location) }

func (e *Engine) dayStart(t time.Time) time.Time { return localMidnight(t, e.o.Location) }

func (e *Engine) nextDayStart(t time.Time) time.Time {
	l := e.local(t)
	return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, e.o.Location)
}
