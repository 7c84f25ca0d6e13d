// Package retry is how omnibrain's clients wait before trying again: the
// one reader of a server's Retry-After (seconds or an HTTP date, and
// OpenAI's Retry-After-Ms) and exponential backoff policies built on
// cenkalti/backoff. Each client keeps its own loop (what is retried, what
// is logged, when to give up belong to it); the waits come from here.
package retry

import (
	"cmp"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// MaxAfter caps what a server may ask for: no client waits a day inside a
// request, and it keeps arithmetic on the result from overflowing.
const MaxAfter = 24 * time.Hour

// After parses a Retry-After value as of now: delay-seconds (a decimal is
// accepted) or an HTTP date (a date in the past is 0). ok is false when v
// is empty, negative or unreadable; the result is at most MaxAfter.
func After(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return seconds(f)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxAfter), true
	}
	return 0, false
}

// FromHeader reads Retry-After-Ms (OpenAI's, in milliseconds, more
// precise) when it holds a positive wait, else Retry-After.
func FromHeader(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			if d, ok := seconds(f / 1000); ok && d > 0 {
				return d, true
			}
		}
	}
	return After(h.Get("Retry-After"), now)
}

// seconds turns a number of seconds from outside into a wait.
func seconds(f float64) (time.Duration, bool) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f < 0:
		return 0, false
	case f >= MaxAfter.Seconds():
		return MaxAfter, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// Policy is exponential backoff: the first wait is Initial, each next one
// Multiplier times longer (default 2) up to Max (none when 0), and every
// wait is randomised by ±Jitter (a fraction: 0.1 is ±10%; 0 is exact).
type Policy struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
}

// Backoff returns a fresh backoff following p, for a caller that waits
// step by step (NextBackOff) and starts over after a success (Reset). It
// is not safe for concurrent use.
func (p Policy) Backoff() *backoff.ExponentialBackOff {
	limit := p.Max
	if limit <= 0 {
		limit = time.Duration(math.MaxInt64)
	}
	b := &backoff.ExponentialBackOff{
		InitialInterval:     min(p.Initial, limit),
		RandomizationFactor: p.Jitter,
		Multiplier:          cmp.Or(p.Multiplier, 2),
		MaxInterval:         limit,
	}
	b.Reset()
	return b
}

// Wait is the wait after n consecutive failures (n from 1; less counts
// as 1), without jitter, for callers that keep a count rather than a
// Backoff.
func (p Policy) Wait(n int) time.Duration {
	p.Jitter = 0
	b := p.Backoff()
	d := b.NextBackOff()
	for i := 1; i < n && d < b.MaxInterval; i++ {
		d = b.NextBackOff()
	}
	return d
}
