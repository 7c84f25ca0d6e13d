package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/health"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects the runs of every job.
type recorder struct {
	mu   sync.Mutex
	runs []Run
	at   []time.Time // the clock when each run happened
}

func (r *recorder) job(clock Clock) func(ctx context.Context, run Run) error {
	return func(ctx context.Context, run Run) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.runs = append(r.runs, run)
		r.at = append(r.at, clock.Now())
		return nil
	}
}

func (r *recorder) of(job string) (runs []Run, at []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, run := range r.runs {
		if run.Job == job {
			runs = append(runs, run)
			at = append(at, r.at[i])
		}
	}
	return runs, at
}

// simulate runs a scheduler with the default jobs on a simulated clock
// from start until end and returns what ran.
func simulate(t *testing.T, loc *time.Location, start, end time.Time, setup func(*SimClock)) (*recorder, *health.Registry) {
	t.Helper()
	clock := NewSimClock(start)
	if setup != nil {
		setup(clock)
	}
	reg := health.NewRegistry(clock.Now)
	s := New(Options{Location: loc, Clock: clock, Health: reg})
	rec := &recorder{}
	for _, j := range []Job{
		{Name: "morning", Spec: "0 7 * * *", CatchUp: 12 * time.Hour},
		{Name: "evening", Spec: "0 22 * * *"},
		{Name: "weekly", Spec: "0 8 * * 1"},
		{Name: "patterns", Spec: "0 * * * *"},
		{Name: "prep", Spec: "@every 15m"},
	} {
		j.Run = rec.job(clock)
		if err := s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stop when the simulated time passes end: a job that checks the clock.
	stop := Job{Name: "stop", Spec: "@every 1m", Run: func(context.Context, Run) error {
		if !clock.Now().Before(end) {
			cancel()
		}
		return nil
	}}
	if err := s.Add(stop); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Fatal("the simulation did not finish")
	}
	return rec, reg
}

func localTimes(loc *time.Location, ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format("Mon 01-02 15:04 MST")
	}
	return out
}

func TestSimulatedWeekAcrossFallBack(t *testing.T) {
	chicago := mustLoad(t, "America/Chicago")
	start := time.Date(2001, 10, 22, 0, 0, 0, 0, chicago) // Monday; clocks fall back Sunday 28th
	end := time.Date(2001, 10, 29, 9, 0, 0, 0, chicago)
	rec, _ := simulate(t, chicago, start, end, nil)

	runs, at := rec.of("morning")
	want := []string{}
	for d := 22; d <= 29; d++ {
		want = append(want, time.Date(2001, 10, d, 7, 0, 0, 0, chicago).Format("Mon 01-02 15:04 MST"))
	}
	if got := localTimes(chicago, at); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("morning briefings at\n%v\nwant\n%v", got, want)
	}
	for _, r := range runs {
		if r.Late || r.Manual {
			t.Errorf("unexpected late/manual run %+v", r)
		}
	}
	_, at = rec.of("evening")
	if len(at) != 7 {
		t.Errorf("%d evening summaries, want 7: %v", len(at), localTimes(chicago, at))
	}
	for _, a := range at {
		if h := a.In(chicago).Hour(); h != 22 {
			t.Errorf("evening summary at %s", a.In(chicago))
		}
	}
	_, at = rec.of("weekly")
	if got := localTimes(chicago, at); len(got) != 2 || got[0] != "Mon 10-22 08:00 CDT" || got[1] != "Mon 10-29 08:00 CST" {
		t.Errorf("weekly reviews at %v", got)
	}
	// 7 days of 24 wall-clock hours + 10 on Monday the 29th (00:00..09:00).
	if _, at = rec.of("patterns"); len(at) != 7*24+10 {
		t.Errorf("%d pattern runs, want %d", len(at), 7*24+10)
	}
}

func TestSleepSkipsMissedRunsButCatchesUpTheMorningBriefing(t *testing.T) {
	chicago := mustLoad(t, "America/Chicago")
	start := time.Date(2001, 10, 23, 0, 0, 0, 0, chicago)
	end := time.Date(2001, 10, 24, 23, 30, 0, 0, chicago)
	sleepFrom := time.Date(2001, 10, 23, 1, 10, 0, 0, chicago)
	wake := time.Date(2001, 10, 23, 9, 20, 0, 0, chicago) // slept through 07:00
	sleep2 := time.Date(2001, 10, 24, 21, 30, 0, 0, chicago)
	wake2 := time.Date(2001, 10, 24, 23, 5, 0, 0, chicago) // slept through 22:00
	rec, reg := simulate(t, chicago, start, end, func(c *SimClock) {
		c.Sleep(sleepFrom, wake)
		c.Sleep(sleep2, wake2)
	})

	runs, at := rec.of("morning")
	if len(runs) != 2 {
		t.Fatalf("%d morning runs, want 2 (one late, one on time): %v", len(runs), localTimes(chicago, at))
	}
	if !runs[0].Late || !runs[0].Scheduled.Equal(time.Date(2001, 10, 23, 7, 0, 0, 0, chicago)) || !at[0].Equal(wake) {
		t.Errorf("first morning run = %+v at %s, want the 07:00 slot, late, at wake-up %s", runs[0], at[0].In(chicago), wake)
	}
	if runs[1].Late || !at[1].Equal(time.Date(2001, 10, 24, 7, 0, 0, 0, chicago)) {
		t.Errorf("second morning run = %+v at %s, want on time", runs[1], at[1].In(chicago))
	}
	if _, at := rec.of("evening"); len(at) != 1 || at[0].In(chicago).Day() != 23 {
		t.Errorf("evening runs %v: the one missed while asleep must be skipped, not replayed", localTimes(chicago, at))
	}
	// Patterns: hourly, never more than once per slot, nothing while asleep.
	_, at = rec.of("patterns")
	for _, a := range at {
		if (!a.Before(sleepFrom) && a.Before(wake)) || (!a.Before(sleep2) && a.Before(wake2)) {
			t.Errorf("pattern run at %s while asleep", a.In(chicago))
		}
	}
	// 48 hours minus the slots lost to sleep (02..09 and 22..23 = 8+2), plus
	// nothing replayed on waking.
	if want := 48 - 10; len(at) != want {
		t.Errorf("%d pattern runs, want %d: %v", len(at), want, localTimes(chicago, at))
	}
	if c, _ := reg.Get(HealthName); c.Counters["runs_skipped"] == 0 || c.Counters["clock_jumps"] < 2 {
		t.Errorf("health counters %v: want skipped runs and clock jumps reported", c.Counters)
	}
}

func TestCatchUpHasALimit(t *testing.T) {
	chicago := mustLoad(t, "America/Chicago")
	start := time.Date(2001, 10, 23, 0, 0, 0, 0, chicago)
	end := time.Date(2001, 10, 23, 23, 50, 0, 0, chicago)
	rec, _ := simulate(t, chicago, start, end, func(c *SimClock) {
		c.Sleep(time.Date(2001, 10, 23, 6, 0, 0, 0, chicago), time.Date(2001, 10, 23, 20, 0, 0, 0, chicago))
	})
	if runs, at := rec.of("morning"); len(runs) != 0 {
		t.Errorf("a morning briefing 13 hours late was sent: %v", localTimes(chicago, at))
	}
}

func TestStartCatchesUpTodaysMorningBriefingOnce(t *testing.T) {
	chicago := mustLoad(t, "America/Chicago")
	tests := []struct {
		name    string
		started time.Time
		late    int
		onTime  int       // run by the first tick: the slot is within the grace period
		since   time.Time // the daemon's first run on the home
	}{
		{"daemon started at 09:00", time.Date(2001, 10, 23, 9, 0, 0, 0, chicago), 1, 0, time.Time{}},
		{"daemon started at 06:00", time.Date(2001, 10, 23, 6, 0, 0, 0, chicago), 0, 0, time.Time{}},
		{"daemon started at 07:01 (within grace)", time.Date(2001, 10, 23, 7, 1, 0, 0, chicago), 0, 1, time.Time{}},
		{"daemon started at 21:00 (too late)", time.Date(2001, 10, 23, 21, 0, 0, 0, chicago), 0, 0, time.Time{}},
		{"home first run at 08:00, restarted at 09:00 (nothing missed)", time.Date(2001, 10, 23, 9, 0, 0, 0, chicago), 0, 0, time.Date(2001, 10, 23, 8, 0, 0, 0, chicago)},
		{"home first run at 06:30, restarted at 09:00", time.Date(2001, 10, 23, 9, 0, 0, 0, chicago), 1, 0, time.Date(2001, 10, 23, 6, 30, 0, 0, chicago)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewSimClock(tt.started)
			s := New(Options{Location: chicago, Clock: clock, Since: tt.since})
			rec := &recorder{}
			if err := s.Add(Job{Name: "morning", Spec: "0 7 * * *", CatchUp: 12 * time.Hour, Run: rec.job(clock)}); err != nil {
				t.Fatal(err)
			}
			s.Start(context.Background(), tt.started)
			runs, _ := rec.of("morning")
			if len(runs) != tt.late {
				t.Fatalf("%d runs at start, want %d", len(runs), tt.late)
			}
			if tt.late == 1 && (!runs[0].Late || runs[0].Scheduled.In(chicago).Hour() != 7) {
				t.Errorf("catch-up run %+v", runs[0])
			}
			// The first tick runs a slot that is still on time, and never
			// the one caught up at start a second time.
			s.Tick(context.Background(), tt.started.Add(time.Minute))
			runs, _ = rec.of("morning")
			if len(runs) != tt.late+tt.onTime {
				t.Fatalf("%d runs after a tick, want %d", len(runs), tt.late+tt.onTime)
			}
			if tt.onTime == 1 && (runs[0].Late || !runs[0].Scheduled.Equal(time.Date(2001, 10, 23, 7, 0, 0, 0, chicago))) {
				t.Errorf("on-time run %+v, want the 07:00 slot, not late", runs[0])
			}
			s.Tick(context.Background(), tt.started.Add(2*time.Minute))
			if runs, _ := rec.of("morning"); len(runs) != tt.late+tt.onTime {
				t.Errorf("%d runs after a second tick, want still %d", len(runs), tt.late+tt.onTime)
			}
			next := s.Next("morning")
			if want := time.Date(2001, 10, 24, 7, 0, 0, 0, chicago); tt.started.Hour() >= 7 && !next.Equal(want) {
				t.Errorf("next morning %s, want %s", next, want)
			}
		})
	}
}

func TestBackwardClockJumpReplans(t *testing.T) {
	utc := time.UTC
	clock := NewSimClock(time.Date(2024, 5, 1, 10, 0, 0, 0, utc))
	s := New(Options{Location: utc, Clock: clock})
	rec := &recorder{}
	if err := s.Add(Job{Name: "hourly", Spec: "0 * * * *", Run: rec.job(clock)}); err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background(), clock.Now())
	clock.Set(time.Date(2024, 4, 30, 10, 0, 0, 0, utc)) // a day back
	s.noticeJump(time.Date(2024, 5, 1, 10, 0, 0, 0, utc), clock.Now(), time.Minute)
	if next := s.Next("hourly"); !next.Equal(time.Date(2024, 4, 30, 11, 0, 0, 0, utc)) {
		t.Errorf("after the clock went back a day the next run is %s, want within the hour", next)
	}
}

func TestFailingAndPanickingJobsDoNotStopOthers(t *testing.T) {
	clock := NewSimClock(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	reg := health.NewRegistry(clock.Now)
	s := New(Options{Location: time.UTC, Clock: clock, Health: reg})
	rec := &recorder{}
	for _, j := range []Job{
		{Name: "panics", Spec: "0 * * * *", Run: func(context.Context, Run) error { panic("boom") }},
		{Name: "fails", Spec: "0 * * * *", Run: func(context.Context, Run) error { return errors.New("broken") }},
		{Name: "works", Spec: "0 * * * *", Run: rec.job(clock)},
	} {
		if err := s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	s.Start(context.Background(), clock.Now())
	s.Tick(context.Background(), time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC))
	if runs, _ := rec.of("works"); len(runs) != 1 {
		t.Errorf("the working job ran %d times, want 1", len(runs))
	}
	c, _ := reg.Get(HealthName)
	if c.State != health.Degraded || c.Counters["runs_failed"] != 2 {
		t.Errorf("health %+v: want degraded with 2 failed runs", c)
	}
}

func TestTriggerRunsTheSameJobManually(t *testing.T) {
	clock := NewSimClock(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	s := New(Options{Location: time.UTC, Clock: clock})
	rec := &recorder{}
	if err := s.Add(Job{Name: "morning", Spec: "0 7 * * *", Run: rec.job(clock)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Trigger(context.Background(), "morning"); err != nil {
		t.Fatal(err)
	}
	runs, _ := rec.of("morning")
	if len(runs) != 1 || !runs[0].Manual || !runs[0].Scheduled.Equal(clock.Now()) {
		t.Errorf("runs %+v, want one manual run now", runs)
	}
	if err := s.Trigger(context.Background(), "nope"); err == nil {
		t.Error("triggering an unknown job succeeded")
	}
}

func TestAddRejectsBadJobs(t *testing.T) {
	s := New(Options{})
	noop := func(context.Context, Run) error { return nil }
	if err := s.Add(Job{Name: "a", Spec: "0 7 * * *", Run: noop}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []Job{
		{Name: "a", Spec: "0 7 * * *", Run: noop},
		{Name: "", Spec: "0 7 * * *", Run: noop},
		{Name: "b", Spec: "0 7 * *", Run: noop},
		{Name: "c", Spec: "0 7 * * *"},
	} {
		if err := s.Add(j); err == nil {
			t.Errorf("Add(%+v) succeeded", j)
		}
	}
}

// A job that takes minutes is neither a clock jump nor a reason for the
// jobs after it to miss their slots.
func TestSlowJobIsNotAClockJump(t *testing.T) {
	start := time.Date(2024, 5, 1, 9, 59, 0, 0, time.UTC)
	end := time.Date(2024, 5, 1, 12, 50, 0, 0, time.UTC)
	clock := NewSimClock(start)
	reg := health.NewRegistry(clock.Now)
	s := New(Options{Location: time.UTC, Clock: clock, Health: reg})
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, j := range []Job{
		{Name: "slow", Spec: "0 * * * *", Run: func(ctx context.Context, r Run) error {
			clock.Set(clock.Now().Add(3 * time.Minute)) // three minutes of work
			return rec.job(clock)(ctx, r)
		}},
		{Name: "every5", Spec: "@every 5m", Run: rec.job(clock)},
		{Name: "stop", Spec: "*/10 * * * *", Run: func(context.Context, Run) error {
			if !clock.Now().Before(end) {
				cancel()
			}
			return nil
		}},
	} {
		if err := s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if runs, _ := rec.of("slow"); len(runs) != 3 {
		t.Errorf("the slow job ran %d times in 3 hours, want 3", len(runs))
	}
	if runs, _ := rec.of("every5"); len(runs) < 30 {
		t.Errorf("the 5-minute job ran %d times in under 3 hours, want about 34", len(runs))
	}
	if c, _ := reg.Get(HealthName); c.Counters["clock_jumps"] != 0 || c.Counters["runs_skipped"] != 0 {
		t.Errorf("health counters %v: a slow job was taken for a clock jump or made others miss their slots", c.Counters)
	}
}
