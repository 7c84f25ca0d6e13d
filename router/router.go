package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/internal/wait"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// HealthName is the component the router reports as in `status`.
const HealthName = "llm"

// DefaultProvider is the name routes use for the OMNIBRAIN_LLM_* provider.
const DefaultProvider = "default"

// Notifier tells the owner something; the notification queue implements it.
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// CallStore records every call and sums a day's spend; *store.Store
// implements it.
type CallStore interface {
	RecordLLMCall(ctx context.Context, c store.LLMCall) error
	LLMSpend(ctx context.Context, day string) (float64, error)
}

// Health receives the router's state; *health.Registry implements it.
type Health interface {
	Success(name string)
	Degrade(name string, err error)
	Add(name, counter string, n int64)
}

// Retry is the retry policy at one provider.
type Retry struct {
	// Attempts per provider, the first included (default 3).
	Attempts int
	// Initial and Max bound the jittered exponential backoff (±50%,
	// doubling): defaults 500ms and 8s.
	Initial, Max time.Duration
	// MaxRetryAfter is the longest Retry-After the router waits for; a
	// provider that asks for longer is left for the next one (default 30s).
	MaxRetryAfter time.Duration
}

// Options configure New. LLM is the configuration; everything else is
// optional.
type Options struct {
	LLM      config.LLM
	Location *time.Location // the owner's timezone: budget days end at its midnight
	Calls    CallStore      // nil: nothing is recorded and no budget applies
	Notifier Notifier       // nil: a spent budget is only logged
	Health   Health
	Log      *slog.Logger
	Now      func() time.Time
	// Sleep waits between retries; tests pass one that records and returns.
	Sleep func(ctx context.Context, d time.Duration) error
	// OllamaURL is probed when no provider is configured (default
	// http://127.0.0.1:11434/v1); ProbeTimeout bounds the probe (default 1s).
	OllamaURL    string
	ProbeTimeout time.Duration
	Retry        Retry
	// Transport, if set, carries requests to hosted (non-loopback)
	// providers: tests reach a hosted name at a loopback fake with it.
	Transport http.RoundTripper
}

// Router sends each request to the providers its task is routed to, in
// order: retrying a provider on 429, 5xx, timeouts and dropped connections
// with jittered exponential backoff (honouring Retry-After), failing over
// to the next, recording every attempt in llm_calls and keeping to the
// daily budget. It is safe for concurrent use.
type Router struct {
	endpoints map[string]*endpoint
	order     []string // default first, then config order
	routes    map[Task]config.Route
	prices    map[string]config.Price
	budget    float64
	hardLimit float64
	timeout   time.Duration
	retry     Retry
	loc       *time.Location
	hint      string // why there is no default provider, for ErrNoModel

	calls    CallStore
	notifier Notifier
	health   Health
	log      *slog.Logger
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	notified map[string]bool
}

// endpoint is one configured provider.
type endpoint struct {
	name    string
	kind    string // openai, anthropic, ollama
	model   string
	baseURL string
	local   bool // on loopback: allowed for privacy: local tasks
	p       provider

	price       config.Price // what its calls count at (see PriceFor)
	priceSource PriceSource
}

// New builds the router from the configuration. With Provider "" it probes
// a local Ollama once (short timeout) and uses it if it answers with a
// model. An error means the configuration cannot be used (a provider
// without a model, an unknown type); a router without any provider is not
// an error: its calls fail with ErrNoModel.
func New(ctx context.Context, opts Options) (*Router, error) {
	cfg := opts.LLM
	r := &Router{
		endpoints: map[string]*endpoint{},
		routes:    map[Task]config.Route{},
		prices:    cfg.Prices,
		budget:    cfg.DailyBudgetUSD,
		hardLimit: cfg.HardLimitUSD,
		timeout:   cmp.Or(cfg.Timeout, 2*time.Minute),
		retry:     opts.Retry,
		loc:       cmp.Or(opts.Location, time.Local),
		calls:     opts.Calls,
		notifier:  opts.Notifier,
		health:    opts.Health,
		log:       opts.Log,
		now:       opts.Now,
		sleep:     opts.Sleep,
		notified:  map[string]bool{},
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "router")
	if r.now == nil {
		r.now = time.Now
	}
	if r.sleep == nil {
		r.sleep = wait.Sleep
	}
	r.retry.Attempts = cmp.Or(r.retry.Attempts, 3)
	r.retry.Initial = cmp.Or(r.retry.Initial, 500*time.Millisecond)
	r.retry.Max = cmp.Or(r.retry.Max, 8*time.Second)
	r.retry.MaxRetryAfter = cmp.Or(r.retry.MaxRetryAfter, 30*time.Second)
	for task, route := range cfg.Routes {
		r.routes[Task(task)] = route
	}
	probe := probeOptions{url: cmp.Or(opts.OllamaURL, defaultOllamaURL), timeout: cmp.Or(opts.ProbeTimeout, time.Second)}

	var errs []error
	add := func(ep *endpoint, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		ep.price, ep.priceSource = PriceFor(r.prices, ep.kind, ep.baseURL, ep.model)
		r.endpoints[ep.name] = ep
		r.order = append(r.order, ep.name)
		if ep.priceSource == PriceUnknown {
			r.log.Warn("hosted model has no known price: its calls count at the most expensive known rate", "provider", ep.name, "model", ep.model,
				"input_per_mtok", ep.price.InputPerMTok, "output_per_mtok", ep.price.OutputPerMTok)
		}
	}
	switch cfg.Provider {
	case "none":
		r.hint = "llm.provider is none"
	case "":
		p := probe
		p.url = cmp.Or(cfg.BaseURL, p.url)
		ep, hint := discoverOllama(ctx, p, cfg.Model)
		if ep != nil {
			add(ep, nil)
			r.log.Info("using the local Ollama", "url", ep.baseURL, "model", ep.model)
		} else {
			r.hint = hint
		}
	default:
		add(newEndpoint(ctx, probe, DefaultProvider, cfg.Provider, cfg.BaseURL, cfg.APIKey.Reveal(), cfg.Model, opts.Transport))
	}
	for _, p := range cfg.Providers {
		add(newEndpoint(ctx, probe, p.Name, p.Type, p.BaseURL, p.APIKey.Reveal(), p.Model, opts.Transport))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("router: %w", errors.Join(errs...))
	}
	return r, nil
}

// Available reports whether any provider is configured.
func (r *Router) Available() bool { return len(r.endpoints) > 0 }

// Describe says in one line which providers the router uses, or why none.
func (r *Router) Describe() string {
	if len(r.endpoints) == 0 {
		return "no model: " + r.hint
	}
	parts := make([]string, 0, len(r.order))
	for _, name := range r.order {
		ep := r.endpoints[name]
		where := ep.baseURL
		if ep.local {
			where += ", local"
		}
		if ep.priceSource == PriceUnknown {
			where += fmt.Sprintf(", no known price: counted at $%g/$%g per million tokens", ep.price.InputPerMTok, ep.price.OutputPerMTok)
		}
		parts = append(parts, fmt.Sprintf("%s: %s %s (%s)", ep.name, ep.kind, ep.model, where))
	}
	return strings.Join(parts, "; ")
}

// Chat makes one call and returns the whole answer.
func (r *Router) Chat(ctx context.Context, req Request) (*Response, error) {
	return r.call(ctx, req, nil)
}

// Stream makes one call, passing text to onDelta as it arrives (see Delta
// for the Reset rule), and returns the whole answer. onDelta runs on the
// caller's goroutine and should return quickly. A nil onDelta makes it a
// non-streaming Chat.
func (r *Router) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	return r.call(ctx, req, onDelta)
}

func (r *Router) call(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	cands, err := r.candidates(req.Task, req.Within)
	if err != nil {
		return nil, err
	}
	// The data delimiters are for the model only: whatever it repeats of
	// them never reaches the owner, streamed or whole, nor anyone else.
	var strip untrusted.Stripper
	show := onDelta
	if onDelta != nil {
		onDelta = func(d Delta) {
			if d.Reset {
				strip.Reset()
				show(d)
				return
			}
			if t := strip.Write(d.Text); t != "" {
				show(Delta{Text: t})
			}
		}
	}
	day := r.now().In(r.loc).Format(time.DateOnly)
	spent := r.spent(ctx, day)
	var errs []error
	budgetOnly := true
	emitted := false
	for _, ep := range cands {
		if err := r.checkBudget(ctx, req, ep, day, spent); err != nil {
			errs = append(errs, err)
			continue
		}
		budgetOnly = false
		resp, err := r.tryProvider(ctx, ep, req, onDelta, &emitted)
		if err == nil {
			if r.health != nil {
				r.health.Success(HealthName)
			}
			if t := strip.Flush(); t != "" && show != nil {
				show(Delta{Text: t})
			}
			resp.Content = untrusted.Strip(resp.Content)
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	if budgetOnly {
		return nil, errs[0]
	}
	err = fmt.Errorf("router: task %s: no provider answered: %w", req.Task, errors.Join(errs...))
	if r.health != nil {
		r.health.Degrade(HealthName, err)
	}
	return nil, err
}

// Ready reports whether background work on task can reach a model now:
// ErrNoModel when none is configured for it, ErrBudgetExceeded when the
// day's budget is spent for every provider it may use (the owner is told
// once, as for a call). Callers check it before starting work that would
// only stop at its first model call.
func (r *Router) Ready(ctx context.Context, task Task) error {
	cands, err := r.candidates(task, "")
	if err != nil {
		return err
	}
	day := r.now().In(r.loc).Format(time.DateOnly)
	spent := r.spent(ctx, day)
	var first error
	for _, ep := range cands {
		err := r.checkBudget(ctx, Request{Task: task}, ep, day, spent)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// candidates are the endpoints a task may use, in order: its route (or the
// default provider), without non-loopback providers for privacy: local,
// whether the task's route or that of the task whose data it carries
// (within) says so.
func (r *Router) candidates(task, within Task) ([]*endpoint, error) {
	route := r.routes[task]
	names := route.Providers
	if len(names) == 0 {
		names = r.order
		if _, ok := r.endpoints[DefaultProvider]; ok {
			names = []string{DefaultProvider}
		}
	}
	local := route.Privacy == "local"
	if within != "" && r.routes[within].Privacy == "local" {
		local = true
		task = Task(fmt.Sprintf("%s (for %s)", task, within))
	}
	var out, kept []*endpoint
	for _, n := range names {
		ep := r.endpoints[n]
		if ep == nil {
			continue
		}
		if local && !ep.local {
			kept = append(kept, ep)
			continue
		}
		out = append(out, ep)
	}
	switch {
	case len(out) > 0:
		return out, nil
	case len(kept) > 0:
		return nil, fmt.Errorf("%w: task %s is privacy: local and none of its providers is on loopback (%s)", ErrNoModel, task, names)
	case len(r.endpoints) == 0:
		return nil, fmt.Errorf("%w (%s): set OMNIBRAIN_LLM_PROVIDER (openai, anthropic, ollama) or run Ollama on 127.0.0.1:11434", ErrNoModel, r.hint)
	default:
		return nil, fmt.Errorf("%w: task %s routes to %s, none of which is configured", ErrNoModel, task, names)
	}
}

// tryProvider makes up to Retry.Attempts attempts at one provider.
func (r *Router) tryProvider(ctx context.Context, ep *endpoint, req Request, onDelta func(Delta), emitted *bool) (*Response, error) {
	b := retry.Policy{Initial: r.retry.Initial, Max: r.retry.Max, Jitter: 0.5}.Backoff()
	for attempt := 1; ; attempt++ {
		resp, err := r.attempt(ctx, ep, req, onDelta, emitted, attempt)
		if err == nil {
			return resp, nil
		}
		var pe *ProviderError
		if !errors.As(err, &pe) || !pe.Retryable || attempt >= r.retry.Attempts || refused(err) {
			return nil, err
		}
		wait := b.NextBackOff()
		if pe.RetryAfter > 0 {
			if pe.RetryAfter > r.retry.MaxRetryAfter {
				return nil, err // it asked for longer than we wait: try the next provider
			}
			wait = pe.RetryAfter
		}
		if r.health != nil {
			r.health.Add(HealthName, "retries", 1)
		}
		r.log.Info("retrying", "provider", ep.name, "task", req.Task, "attempt", attempt, "wait", wait, "err", err)
		if err := r.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// streamCap bounds a stream that keeps trickling, in timeouts.
const streamCap = 10

// attempt is one request to one provider, recorded whatever its outcome.
func (r *Router) attempt(ctx context.Context, ep *endpoint, req Request, onDelta func(Delta), emitted *bool, n int) (*Response, error) {
	start := r.now()
	var resp *Response
	var err error
	if onDelta == nil {
		actx, cancel := context.WithTimeout(ctx, r.timeout)
		resp, err = ep.p.chat(actx, req)
		cancel()
	} else {
		// A stream may take long as long as it keeps coming: the timeout
		// is for silence (a slow local model writing a long answer is not
		// cut off), within an overall cap.
		actx, cancelCap := context.WithTimeout(ctx, streamCap*r.timeout)
		actx, cancel := context.WithCancelCause(actx)
		silent := time.AfterFunc(r.timeout, func() { cancel(context.DeadlineExceeded) })
		resp, err = ep.p.stream(actx, req, func(text string) {
			*emitted = true
			onDelta(Delta{Text: text})
		}, func() { silent.Reset(r.timeout) })
		silent.Stop()
		if err != nil && errors.Is(context.Cause(actx), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		cancel(nil)
		cancelCap()
	}
	latency := r.now().Sub(start)
	if err != nil {
		err = asProviderError(err, ctx, r.timeout)
		var pe *ProviderError
		if errors.As(err, &pe) {
			pe.Provider, pe.Model = ep.name, ep.model
		}
		if *emitted {
			// What this attempt streamed is void: the next one starts over.
			onDelta(Delta{Reset: true})
			*emitted = false
		}
	}
	if resp == nil {
		resp = &Response{}
	}
	resp.Provider = ep.name
	resp.Model = cmp.Or(resp.Model, ep.model)
	resp.Usage.CostUSD = ep.cost(resp.Usage)
	r.record(ctx, ep, req, start, latency, resp, err, n, onDelta != nil)
	if err != nil {
		r.log.Warn("model call failed", "provider", ep.name, "task", req.Task, "attempt", n, "err", err)
		return nil, err
	}
	return resp, nil
}

func (r *Router) record(ctx context.Context, ep *endpoint, req Request, start time.Time, latency time.Duration, resp *Response, err error, attempt int, stream bool) {
	if r.health != nil {
		r.health.Add(HealthName, "calls", 1)
		if err != nil {
			r.health.Add(HealthName, "failures", 1)
		}
	}
	if r.calls == nil {
		return
	}
	c := store.LLMCall{
		Time: start, Day: start.In(r.loc).Format(time.DateOnly),
		Task: cmp.Or(string(req.Task), "unknown"), Provider: ep.name, Model: ep.model,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, CostUSD: resp.Usage.CostUSD,
		Latency: latency, Interactive: req.Interactive, Stream: stream, Attempt: attempt,
	}
	if err != nil {
		c.Error = err.Error()
		var pe *ProviderError
		if errors.As(err, &pe) {
			c.Status = pe.Status
		}
	}
	if rerr := r.calls.RecordLLMCall(context.WithoutCancel(ctx), c); rerr != nil {
		r.log.Error("recording a model call failed", "err", rerr)
	}
}

// priced reports whether the endpoint's calls cost money: only those
// count against, and are paused by, the budget.
func (ep *endpoint) priced() bool { return ep.price.InputPerMTok > 0 || ep.price.OutputPerMTok > 0 }

func (ep *endpoint) cost(u Usage) float64 {
	c := (float64(u.InputTokens)*ep.price.InputPerMTok + float64(u.OutputTokens)*ep.price.OutputPerMTok) / 1e6
	return math.Round(c*1e9) / 1e9
}

// spent is the day's recorded spend; if the store cannot say, the budget
// is not enforced for this call (logged), rather than stopping all work.
func (r *Router) spent(ctx context.Context, day string) float64 {
	if r.calls == nil || (r.budget <= 0 && r.hardLimit <= 0) {
		return 0
	}
	s, err := r.calls.LLMSpend(ctx, day)
	if err != nil {
		r.log.Error("reading today's model spend failed; budget not enforced for this call", "err", err)
		return 0
	}
	return s
}

// checkBudget decides whether ep may take req given the day's spend.
// Free (unpriced) models are never paused. Background work pauses at the
// daily budget; interactive calls continue past it, up to the hard limit
// when one is set. The owner is told once per day for each.
func (r *Router) checkBudget(ctx context.Context, req Request, ep *endpoint, day string, spent float64) error {
	if !ep.priced() {
		return nil
	}
	tz := r.loc.String()
	if r.hardLimit > 0 && spent >= r.hardLimit {
		err := fmt.Errorf("%w: the hard limit is reached ($%.2f of $%.2f on %s, %s): every paid model call, chat included, is stopped until midnight; raise llm.hard_limit_usd to continue", ErrBudgetExceeded, spent, r.hardLimit, day, tz)
		r.tell(ctx, "llm-hard-limit:"+day, notify.Critical, fmt.Sprintf("Model spend reached the hard limit: $%.2f of $%.2f today. Chat and background work with paid models are stopped until midnight (%s).", spent, r.hardLimit, tz), err)
		return err
	}
	if !req.Interactive && r.budget > 0 && spent >= r.budget {
		err := fmt.Errorf("%w: $%.2f of $%.2f spent on %s (%s): background model work is paused until midnight", ErrBudgetExceeded, spent, r.budget, day, tz)
		r.tell(ctx, "llm-budget:"+day, notify.Important, fmt.Sprintf("Today's model budget is spent ($%.2f of $%.2f). Background work (triage, briefings, drafts) is paused until midnight (%s); chat still works.", spent, r.budget, tz), err)
		return err
	}
	return nil
}

// tell notifies the owner once per key and marks the router degraded.
func (r *Router) tell(ctx context.Context, key string, level notify.Level, text string, err error) {
	if r.health != nil {
		r.health.Degrade(HealthName, err)
	}
	r.mu.Lock()
	done := r.notified[key]
	r.notified[key] = true
	r.mu.Unlock()
	if done {
		return
	}
	r.log.Warn(text)
	if r.notifier == nil {
		return
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if nerr := r.notifier.Notify(nctx, notify.Message{Level: level, Key: key, Text: text}); nerr != nil {
		r.log.Error("telling the owner about the budget failed", "err", nerr)
		r.mu.Lock()
		delete(r.notified, key) // try again with the next call
		r.mu.Unlock()
	}
}
