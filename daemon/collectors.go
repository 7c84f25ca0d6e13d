package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/internal/supervise"
	"github.com/omnibrain/omnibrain/internal/wait"
	"github.com/omnibrain/omnibrain/notify"
)

// Collector is one source the daemon polls. Each area's daemon file
// adapts its collector into one and registers it with registerCollector.
//
// Collect's error may implement, for the scheduler:
//   - RetryAfter() time.Duration: wait at least that long (429, 5xx);
//   - NotConfigured() string: not set up yet; the state is Disabled with
//     this fix, and polling goes on quietly (a token may appear);
//   - OwnerAction() string: only the owner can fix it (a revoked token);
//     the state is Down with this fix and the owner is told once, under
//     the key NotifyKey() when the error has one.
type Collector struct {
	Name     string        // gmail, calendar, github
	Interval time.Duration // from config.Schedule
	Collect  func(ctx context.Context) (CollectOutcome, error)
	// Disabled, when set, is why the collector cannot run and the command
	// that fixes it; it is registered (collect explains) but not polled.
	Disabled string
}

// CollectOutcome is what one pass did.
type CollectOutcome struct {
	Seen    int
	Stored  int // new or changed items
	Skipped int
	Detail  string
}

// The error behaviours the scheduler recognises (see Collector).
type (
	retryAfterer   interface{ RetryAfter() time.Duration }
	notConfigured  interface{ NotConfigured() string }
	ownerActionErr interface{ OwnerAction() string }
	notifyKeyed    interface{ NotifyKey() string }
)

// Notifier tells the owner something; notify.Queue implements it.
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// collectorRegistry holds the collectors, runs their poll loops and
// serves `collect` (api.Collectors).
type collectorRegistry struct {
	log    *slog.Logger
	health *health.Registry
	notify Notifier
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(max time.Duration) time.Duration

	// stored, when set, is called after a pass that stored new or
	// changed items (it wakes triage); set before the loops run.
	stored func()

	mu     sync.Mutex
	byName map[string]*collectorState
}

type collectorState struct {
	Collector
	pass     sync.Mutex // one pass at a time: the poll loop and `collect`
	failures int        // consecutive failed passes, under pass
}

func newCollectorRegistry(log *slog.Logger, reg *health.Registry, n Notifier, now func() time.Time) *collectorRegistry {
	return &collectorRegistry{
		log: log.With("component", "collectors"), health: reg, notify: n, now: now,
		sleep:  wait.Sleep,
		jitter: func(max time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(max) + 1)) },
		byName: map[string]*collectorState{},
	}
}

// collectors returns the app's registry, creating it on first use so the
// areas can register in any order. It tells the owner through the
// approval wiring's notification queue.
func (a *App) collectors() *collectorRegistry {
	if a.collectorReg == nil {
		var n Notifier
		if a.approval.queue != nil {
			n = a.approval.queue
		}
		a.collectorReg = newCollectorRegistry(a.log, a.health, n, time.Now)
	}
	return a.collectorReg
}

// registerCollector adds a collector and, unless it is disabled, its poll
// loop to the supervised components.
func (a *App) registerCollector(c Collector) error {
	reg := a.collectors()
	cs, err := reg.add(c)
	if err != nil {
		return err
	}
	if c.Disabled == "" {
		a.components = append(a.components, supervise.Component{Name: c.Name, Run: func(ctx context.Context) error { return reg.loop(ctx, cs) }})
	}
	return nil
}

func (r *collectorRegistry) add(c Collector) (*collectorState, error) {
	if c.Name == "" || (c.Disabled == "" && (c.Collect == nil || c.Interval <= 0)) {
		return nil, fmt.Errorf("collector %q: needs a name, and Collect and an Interval unless disabled", c.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[c.Name]; dup {
		return nil, fmt.Errorf("collector %q registered twice", c.Name)
	}
	cs := &collectorState{Collector: c}
	r.byName[c.Name] = cs
	if c.Disabled != "" {
		r.health.Set(c.Name, health.Disabled, c.Disabled)
	} else {
		r.health.Set(c.Name, health.Starting, fmt.Sprintf("polls every %v", c.Interval))
	}
	return cs, nil
}

// names lists the registered collectors, sorted.
func (r *collectorRegistry) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// maxBackoff caps the wait after repeated failures.
const maxBackoff = time.Hour

// loop polls until ctx is done: a jittered first pass (so collectors do
// not all start at once), then one pass per interval, backing off after
// failures. Sleeping relative to the last pass means a machine that was
// asleep runs one pass on waking, not a storm of missed ones.
func (r *collectorRegistry) loop(ctx context.Context, cs *collectorState) error {
	wait := r.jitter(min(cs.Interval/5, 30*time.Second))
	for {
		if err := r.sleep(ctx, wait); err != nil {
			return nil
		}
		res := r.run(ctx, cs)
		if ctx.Err() != nil {
			return nil
		}
		wait = r.nextWait(cs, res)
	}
}

// passResult is run's outcome with what the scheduler needs.
type passResult struct {
	api.CollectResult
	retryAfter time.Duration
	failed     bool
}

// nextWait is the interval after a success (or a quiet Disabled), else
// the interval doubled per consecutive failure up to maxBackoff and never
// shorter than a Retry-After; ±10% jitter keeps collectors apart.
func (r *collectorRegistry) nextWait(cs *collectorState, res passResult) time.Duration {
	wait := cs.Interval
	if res.failed {
		cs.pass.Lock()
		n := cs.failures
		cs.pass.Unlock()
		wait = max(retry.Policy{Initial: cs.Interval, Max: maxBackoff}.Wait(n), res.retryAfter)
	}
	return wait - wait/10 + r.jitter(wait/5)
}

// run performs one pass and records it in health.
func (r *collectorRegistry) run(ctx context.Context, cs *collectorState) passResult {
	cs.pass.Lock()
	defer cs.pass.Unlock()
	res := passResult{CollectResult: api.CollectResult{Collector: cs.Name}}
	if cs.Disabled != "" {
		res.State, res.Fix = string(health.Disabled), cs.Disabled
		return res
	}
	start := r.now()
	out, err := r.safeCollect(ctx, cs)
	res.Seconds = r.now().Sub(start).Seconds()
	res.Seen, res.Stored, res.Skipped, res.Detail = out.Seen, out.Stored, out.Skipped, out.Detail
	if out.Seen > 0 {
		r.health.Add(cs.Name, "items_seen", int64(out.Seen))
	}
	if out.Stored > 0 {
		r.health.Add(cs.Name, "items_stored", int64(out.Stored))
		if r.stored != nil {
			r.stored()
		}
	}
	if out.Skipped > 0 {
		r.health.Add(cs.Name, "items_skipped", int64(out.Skipped))
	}
	var nc notConfigured
	var oa ownerActionErr
	var ra retryAfterer
	switch {
	case err == nil:
		cs.failures = 0
		r.health.Success(cs.Name)
		res.State = string(health.OK)
		if out.Skipped > 0 {
			r.health.Set(cs.Name, health.OK, fmt.Sprintf("%d malformed items skipped in the last pass (see the log)", out.Skipped))
		}
		return res
	case ctx.Err() != nil:
		res.State, res.Error, res.failed = "failed", "interrupted", true
		return res
	case errors.As(err, &nc):
		cs.failures = 0
		res.Detail = "" // no pass happened
		res.State, res.Error, res.Fix = string(health.Disabled), err.Error(), nc.NotConfigured()
		r.health.Set(cs.Name, health.Disabled, nc.NotConfigured())
		return res
	case errors.As(err, &oa):
		cs.failures++
		res.State, res.Error, res.Fix, res.failed = "failed", err.Error(), oa.OwnerAction(), true
		r.health.Failure(cs.Name, err)
		r.health.Set(cs.Name, health.Down, oa.OwnerAction())
		r.tellOwner(ctx, cs.Name, err, oa.OwnerAction())
		return res
	default:
		cs.failures++
		res.State, res.Error, res.failed = "failed", err.Error(), true
		if errors.As(err, &ra) {
			res.retryAfter = ra.RetryAfter()
		}
		r.log.Warn("collector pass failed", "collector", cs.Name, "err", err, "failures", cs.failures)
		r.health.Failure(cs.Name, err)
		return res
	}
}

// safeCollect runs Collect, turning a panic into an error: a collector
// tripping over bad data must not take the daemon down.
func (r *collectorRegistry) safeCollect(ctx context.Context, cs *collectorState) (out CollectOutcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("collector panicked", "collector", cs.Name, "panic", p)
			err = fmt.Errorf("%s: panic: %v", cs.Name, p)
		}
	}()
	return cs.Collect(ctx)
}

// tellOwner queues one notification per cause: the key comes from the
// error (e.g. one per revoked token, shared by Gmail and Calendar).
func (r *collectorRegistry) tellOwner(ctx context.Context, name string, err error, fix string) {
	if r.notify == nil {
		return
	}
	key := "collector-owner-action:" + name
	var nk notifyKeyed
	if errors.As(err, &nk) {
		key = "owner-action:" + nk.NotifyKey()
	}
	msg := notify.Message{Level: notify.Important, Key: key,
		Text: fmt.Sprintf("%s stopped collecting: %v\nTo fix it, %s", name, err, fix)}
	if err := r.notify.Notify(ctx, msg); err != nil {
		r.log.Error("could not tell the owner", "collector", name, "err", err)
	}
}

// CollectNow runs one pass of each named collector (all when none), in
// name order (api.Collectors).
func (r *collectorRegistry) CollectNow(ctx context.Context, names []string) ([]api.CollectResult, error) {
	all := r.names()
	if len(names) == 0 {
		names = all
	}
	var states []*collectorState
	r.mu.Lock()
	for _, n := range names {
		cs, ok := r.byName[n]
		if !ok {
			r.mu.Unlock()
			if len(all) == 0 {
				return nil, api.BadRequest("no collector named %q: none is registered", n)
			}
			return nil, api.BadRequest("no collector named %q (have: %s)", n, strings.Join(all, ", "))
		}
		states = append(states, cs)
	}
	r.mu.Unlock()
	out := make([]api.CollectResult, 0, len(states))
	for _, cs := range states {
		out = append(out, r.run(ctx, cs).CollectResult)
	}
	return out, nil
}
