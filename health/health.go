// Package health is the model every component reports into and that
// `omnibrain status` shows: a state per component with its last success,
// last error and counters.
package health

import (
	"sort"
	"sync"
	"time"
)

// State is a component's health.
type State string

const (
	Starting State = "starting"
	OK       State = "ok"
	Degraded State = "degraded" // working, but something needs attention
	Down     State = "down"     // failing; being retried
	Disabled State = "disabled" // not configured; Detail says how to enable it
)

// Component is one component's report.
type Component struct {
	Name        string           `json:"name"`
	State       State            `json:"state"`
	Detail      string           `json:"detail,omitempty"`
	LastSuccess time.Time        `json:"last_success,omitzero"`
	LastError   string           `json:"last_error,omitempty"`
	LastErrorAt time.Time        `json:"last_error_at,omitzero"`
	Restarts    int              `json:"restarts,omitempty"`
	Counters    map[string]int64 `json:"counters,omitempty"`
}

// Registry holds every component's report. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	now    func() time.Time
	redact func(string) string
	comps  map[string]*Component
}

// NewRegistry returns an empty registry using the given clock (time.Now if nil).
func NewRegistry(now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{now: now, redact: func(s string) string { return s }, comps: map[string]*Component{}}
}

// Redact makes the registry pass every detail and error text through f
// before keeping it: reports are shown by `status`, and an error can carry
// a secret (a Telegram URL holds the bot token). Call it before use.
func (r *Registry) Redact(f func(string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redact = f
}

func (r *Registry) get(name string) *Component {
	c, ok := r.comps[name]
	if !ok {
		c = &Component{Name: name, State: Starting}
		r.comps[name] = c
	}
	return c
}

// Set records a state with a human-readable detail.
func (r *Registry) Set(name string, s State, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.get(name)
	c.State, c.Detail = s, r.redact(detail)
}

// Success records a successful pass: the component is OK.
func (r *Registry) Success(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.get(name)
	c.State, c.Detail = OK, ""
	c.LastSuccess = r.now()
}

// Failure records an error: the component is down until its next success.
func (r *Registry) Failure(name string, err error) {
	r.fail(name, Down, err)
}

// Degrade records an error that leaves the component working.
func (r *Registry) Degrade(name string, err error) {
	r.fail(name, Degraded, err)
}

func (r *Registry) fail(name string, s State, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.get(name)
	c.State = s
	if err != nil {
		c.LastError = r.redact(err.Error())
		c.LastErrorAt = r.now()
	}
}

// Restarted counts a supervisor restart of the component.
func (r *Registry) Restarted(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.get(name).Restarts++
}

// Add adds n to one of the component's counters.
func (r *Registry) Add(name, counter string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.get(name)
	if c.Counters == nil {
		c.Counters = map[string]int64{}
	}
	c.Counters[counter] += n
}

// Get returns a copy of one component's report.
func (r *Registry) Get(name string) (Component, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.comps[name]
	if !ok {
		return Component{}, false
	}
	return copyOf(c), true
}

// Snapshot returns every report, sorted by name.
func (r *Registry) Snapshot() []Component {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Component, 0, len(r.comps))
	for _, c := range r.comps {
		out = append(out, copyOf(c))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func copyOf(c *Component) Component {
	cp := *c
	if c.Counters != nil {
		cp.Counters = make(map[string]int64, len(c.Counters))
		for k, v := range c.Counters {
			cp.Counters[k] = v
		}
	}
	return cp
}

// Overall summarises: down if any component is down, degraded if any is
// degraded, otherwise ok. Disabled components do not count.
func Overall(cs []Component) State {
	out := OK
	for _, c := range cs {
		switch c.State {
		case Down:
			return Down
		case Degraded:
			out = Degraded
		}
	}
	return out
}
