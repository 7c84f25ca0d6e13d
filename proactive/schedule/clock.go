package schedule

import (
	"sync"
	"time"
)

// Clock is what the scheduler reads time from and waits on. The real one
// sleeps; a simulated one (SimClock) makes a week pass in milliseconds.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() time.Time { return time.Now() }

// After implements Clock.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SimClock is a simulated clock for tests and simulations: After does not
// sleep, it moves the time forward by d and fires at once. Sleep periods
// make the machine "sleep": a wait that reaches into one ends when the
// period does, as a real timer fires late after a suspend. It is safe for
// concurrent use, but only one goroutine should wait on it.
type SimClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []sleep
}

type sleep struct{ from, to time.Time }

// NewSimClock returns a simulated clock at start.
func NewSimClock(start time.Time) *SimClock { return &SimClock{now: start} }

// Now implements Clock.
func (c *SimClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After implements Clock: the time moves forward by d (or to the end of a
// sleep period the wait runs into) and the channel is ready.
func (c *SimClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	for _, s := range c.sleeps {
		if s.from.After(c.now) && !s.from.After(target) && s.to.After(target) {
			target = s.to
		}
	}
	c.now = target
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- target
	return ch
}

// Set moves the clock to t (forwards or backwards: a clock change).
func (c *SimClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Sleep makes the machine sleep from from to to: no wait ends inside.
func (c *SimClock) Sleep(from, to time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, sleep{from, to})
}
