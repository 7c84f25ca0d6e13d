// Package schedule runs the proactive engine's jobs (briefings, patterns,
// meeting prep, follow-ups) on cron specs in the owner's timezone, from an
// injected clock.
//
// Runs missed while the machine slept or the daemon was down are skipped,
// not replayed: when a job is found late by more than the grace period,
// its missed slots are dropped and it waits for the next one. A job marked
// CatchUp (the morning briefing) is the exception: its latest missed slot
// is run once, late, if it is not too late and still the same local day.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/health"
	"github.com/robfig/cron/v3"
)

// HealthName is the component name the scheduler reports under.
const HealthName = "scheduler"

// Job is one scheduled task.
type Job struct {
	Name string
	// Spec is a 5-field cron spec in the owner's timezone or "@every 5m".
	Spec string
	// CatchUp, when positive, runs the latest missed slot once, late, if
	// it is at most CatchUp late and still the same local day.
	CatchUp time.Duration
	Run     func(ctx context.Context, r Run) error
}

// Run describes one execution of a job.
type Run struct {
	Job       string
	Scheduled time.Time // the slot this run is for; the trigger time for manual runs
	Late      bool      // a catch-up of a missed slot
	Manual    bool      // asked for by the owner
}

// Options configure a Scheduler.
type Options struct {
	Location *time.Location // the owner's timezone; time.Local when nil
	Clock    Clock          // RealClock when nil
	Log      *slog.Logger
	Health   *health.Registry // may be nil
	// Grace is how late a run may start and still count as on time
	// (default 2 minutes). Later than that, the slot was missed.
	Grace time.Duration
	// Since is when the daemon first ran on this home: a slot before it
	// was not missed, so it is not caught up (zero: every slot counts).
	Since time.Time
	// MaxWait is the longest single wait (default 1 minute), so a wake
	// from sleep is noticed within it even though timers stop during a
	// suspend.
	MaxWait time.Duration
}

// Scheduler runs jobs at their times. Jobs run one at a time, in the
// scheduler's goroutine; Trigger runs a job from another goroutine under
// the same lock.
type Scheduler struct {
	o       Options
	entries []*entry
	byName  map[string]*entry
	run     sync.Mutex // one job at a time
}

type entry struct {
	job   Job
	sched cron.Schedule
	next  time.Time
}

// New returns a scheduler without jobs.
func New(o Options) *Scheduler {
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Grace <= 0 {
		o.Grace = 2 * time.Minute
	}
	if o.MaxWait <= 0 {
		o.MaxWait = time.Minute
	}
	return &Scheduler{o: o, byName: map[string]*entry{}}
}

// Add registers a job. Add all jobs before Run.
func (s *Scheduler) Add(j Job) error {
	if j.Name == "" || j.Run == nil {
		return errors.New("schedule: a job needs a name and a Run function")
	}
	if _, dup := s.byName[j.Name]; dup {
		return fmt.Errorf("schedule: job %q added twice", j.Name)
	}
	sched, err := Parse(j.Spec, s.o.Location)
	if err != nil {
		return fmt.Errorf("schedule: job %s: %w", j.Name, err)
	}
	e := &entry{job: j, sched: sched}
	s.entries = append(s.entries, e)
	s.byName[j.Name] = e
	return nil
}

// Next returns when the job runs next (zero before Run or if unknown).
func (s *Scheduler) Next(name string) time.Time {
	s.run.Lock()
	defer s.run.Unlock()
	if e, ok := s.byName[name]; ok {
		return e.next
	}
	return time.Time{}
}

// Trigger runs a job now, as the owner asked, by the same code path as a
// scheduled run.
func (s *Scheduler) Trigger(ctx context.Context, name string) error {
	e, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("schedule: no job %q", name)
	}
	s.run.Lock()
	defer s.run.Unlock()
	return s.exec(ctx, e, Run{Job: name, Scheduled: s.o.Clock.Now(), Manual: true})
}

// Run runs jobs until ctx is done.
func (s *Scheduler) Run(ctx context.Context) error {
	now := s.o.Clock.Now()
	s.Start(ctx, now)
	for {
		wait := s.o.MaxWait
		if next := s.earliest(); !next.IsZero() {
			wait = min(max(next.Sub(now), 0), s.o.MaxWait)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.o.Clock.After(wait):
		}
		if ctx.Err() != nil {
			return nil
		}
		prev := now
		now = s.o.Clock.Now()
		s.noticeJump(prev, now, wait)
		s.Tick(ctx, now)
		// The next wait, and the next jump check, start after the jobs
		// ran: a slow job is neither a clock jump nor a reason to wake late.
		now = s.o.Clock.Now()
	}
}

// Start computes every job's next slot from now and catches up CatchUp
// jobs whose latest slot today passed while the daemon was not running.
// A slot that passed within the grace period is still on time: the first
// Tick runs it, as it would have had the daemon started a minute earlier.
func (s *Scheduler) Start(ctx context.Context, now time.Time) {
	s.run.Lock()
	defer s.run.Unlock()
	failed := false
	for _, e := range s.entries {
		e.next = e.sched.Next(now.Add(-time.Nanosecond))
		_, wall := e.sched.(*wallSchedule)
		if !wall && e.job.CatchUp <= 0 {
			continue // an interval has no slot to be on time for
		}
		prev := s.previous(e, now)
		switch {
		case prev.IsZero():
		case now.Sub(prev) <= s.o.Grace:
			e.next = prev
		case s.catchUp(e, prev, now):
			failed = s.exec(ctx, e, Run{Job: e.job.Name, Scheduled: prev, Late: true}) != nil || failed
		}
	}
	s.ok(failed)
}

// previous is the job's latest slot at or before now within the local day.
func (s *Scheduler) previous(e *entry, now time.Time) time.Time {
	l := now.In(s.o.Location)
	t := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, s.o.Location).Add(-time.Nanosecond)
	var prev time.Time
	for i := 0; i < 100000; i++ {
		n := e.sched.Next(t)
		if n.IsZero() || n.After(now) {
			break
		}
		prev, t = n, n
	}
	return prev
}

// Tick runs every job whose slot has come by now. Jobs found later than
// the grace period missed their slots: they are skipped (CatchUp jobs run
// once, late, the same local day) and wait for their next slot after now.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) {
	s.run.Lock()
	defer s.run.Unlock()
	failed := false
	for _, e := range s.entries {
		if e.next.IsZero() || e.next.After(now) {
			continue
		}
		slot, skipped := e.next, 0
		for n := e.sched.Next(slot); !n.IsZero() && !n.After(now) && skipped < 1_000_000; n = e.sched.Next(n) {
			slot = n
			skipped++
		}
		late := now.Sub(slot) > s.o.Grace
		switch {
		case !late:
			if skipped > 0 {
				s.skipped(e, skipped, now)
			}
			failed = s.exec(ctx, e, Run{Job: e.job.Name, Scheduled: slot}) != nil || failed
		case s.catchUp(e, slot, now):
			s.skipped(e, skipped, now)
			failed = s.exec(ctx, e, Run{Job: e.job.Name, Scheduled: slot, Late: true}) != nil || failed
		default:
			s.skipped(e, skipped+1, now)
		}
		e.next = e.sched.Next(now)
	}
	s.ok(failed)
}

func (s *Scheduler) skipped(e *entry, n int, now time.Time) {
	if n == 0 {
		return
	}
	s.o.Log.Info("skipped missed runs (the machine slept or the daemon was not running)", "job", e.job.Name, "missed", n, "now", now.In(s.o.Location).Format(time.RFC3339))
	if s.o.Health != nil {
		s.o.Health.Add(HealthName, "runs_skipped", int64(n))
	}
}

func (s *Scheduler) exec(ctx context.Context, e *entry, r Run) error {
	log := s.o.Log.With("job", e.job.Name, "scheduled", r.Scheduled.In(s.o.Location).Format(time.RFC3339), "late", r.Late, "manual", r.Manual)
	err := s.safeRun(ctx, e, r)
	if s.o.Health != nil {
		s.o.Health.Add(HealthName, "runs", 1)
	}
	if err != nil {
		if ctx.Err() == nil {
			log.Error("job failed", "err", err)
			if s.o.Health != nil {
				s.o.Health.Degrade(HealthName, fmt.Errorf("job %s: %w", e.job.Name, err))
				s.o.Health.Add(HealthName, "runs_failed", 1)
			}
		}
		return err
	}
	log.Debug("job ran")
	return nil
}

// safeRun keeps a panicking job from taking the scheduler (and the other
// jobs) down with it.
func (s *Scheduler) safeRun(ctx context.Context, e *entry, r Run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return e.job.Run(ctx, r)
}

// ok reports a pass in which no job failed.
func (s *Scheduler) ok(failed bool) {
	if s.o.Health != nil && !failed {
		s.o.Health.Success(HealthName)
	}
}

func (s *Scheduler) earliest() time.Time {
	s.run.Lock()
	defer s.run.Unlock()
	var t time.Time
	for _, e := range s.entries {
		if !e.next.IsZero() && (t.IsZero() || e.next.Before(t)) {
			t = e.next
		}
	}
	return t
}

// noticeJump logs when the wall clock moved much more (a sleep, a clock
// change) or less than the wait, and re-plans after a backward jump so no
// job waits for a time that is now far away.
func (s *Scheduler) noticeJump(prev, now time.Time, wait time.Duration) {
	moved := now.Round(0).Sub(prev.Round(0))
	switch {
	case moved > wait+s.o.Grace:
		s.o.Log.Info("wall clock jumped forward (the machine slept or the clock changed)", "by", (moved - wait).Round(time.Second))
		if s.o.Health != nil {
			s.o.Health.Add(HealthName, "clock_jumps", 1)
		}
	case moved < -s.o.Grace:
		s.o.Log.Warn("wall clock went backwards; re-planning every job", "by", (-moved).Round(time.Second))
		if s.o.Health != nil {
			s.o.Health.Add(HealthName, "clock_jumps", 1)
		}
		s.run.Lock()
		for _, e := range s.entries {
			e.next = e.sched.Next(now)
		}
		s.run.Unlock()
	}
}

// catchUp reports whether a missed slot of e is still worth running late.
func (s *Scheduler) catchUp(e *entry, slot, now time.Time) bool {
	if e.job.CatchUp <= 0 || now.Sub(slot) > e.job.CatchUp || slot.Before(s.o.Since) {
		return false
	}
	a, b := slot.In(s.o.Location), now.In(s.o.Location)
	return a.Year() == b.Year() && a.YearDay() == b.YearDay()
}
