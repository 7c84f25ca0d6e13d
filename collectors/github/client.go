// Package github collects the owner's GitHub work: unread notifications
// (If-Modified-Since, X-Poll-Interval), review requests, assigned issues,
// mentions, and the owner's open pull requests with their check status. It
// talks to the REST API through go-github, respects the rate limits (waits
// for the reset, backs off on 429/5xx as Retry-After says) and stores
// everything as items with events for the proactive engine.
package github

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
	"github.com/omnibrain/omnibrain/internal/retry"
)

// NewClient returns a go-github client for apiURL, the bare API root
// (https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise
// Server), authenticating with token. Requests go to {apiURL}/{path}.
func NewClient(apiURL, token string, hc *http.Client) (*gh.Client, error) {
	c := gh.NewClient(hc)
	if token != "" {
		c = c.WithAuthToken(token)
	}
	if apiURL == "" {
		return c, nil
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("github: api url %q: want http(s)://host[/path]", apiURL)
	}
	if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3") {
		// GitHub Enterprise Server: go-github also derives the upload URL.
		return c.WithEnterpriseURLs(apiURL, apiURL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	c.BaseURL = u
	return c, nil
}

// retryPolicy says how requests are retried.
type retryPolicy struct {
	attempts int          // tries per request on 5xx, 429, secondary limits and network errors
	backoff  retry.Policy // waits without Retry-After
}

// wait is the backoff after the failed attempt (from 0).
func (p retryPolicy) wait(attempt int) time.Duration { return p.backoff.Wait(attempt + 1) }

// waitKind is why a request waits.
type waitKind int

const (
	waitRateLimit waitKind = iota // primary limit exhausted: until the reset
	waitBackoff                   // 429, secondary limit, 5xx, network
)

// classify decides what to do with a failed request: how long to wait and
// why, or that the error is final.
func classify(resp *gh.Response, err error, now time.Time, attempt int, p retryPolicy) (time.Duration, waitKind, bool) {
	backoff := func() time.Duration { return p.wait(attempt) }

	var rle *gh.RateLimitError
	if errors.As(err, &rle) {
		return untilReset(rle.Rate.Reset.Time, now), waitRateLimit, true
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			return *abuse.RetryAfter, waitBackoff, true
		}
		return max(time.Minute, backoff()), waitBackoff, true
	}
	if resp == nil || resp.Response == nil {
		var netErr interface{ Timeout() bool }
		var urlErr *url.Error
		if errors.As(err, &urlErr) || errors.As(err, &netErr) {
			return backoff(), waitBackoff, true
		}
		return 0, 0, false
	}
	status := resp.StatusCode
	if (status == http.StatusForbidden || status == http.StatusTooManyRequests) && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return untilReset(time.Unix(reset, 0), now), waitRateLimit, true
		}
	}
	if status == http.StatusTooManyRequests || status >= 500 {
		if d, ok := retry.After(resp.Header.Get("Retry-After"), now); ok {
			return d, waitBackoff, true
		}
		if status == http.StatusTooManyRequests {
			return max(time.Minute, backoff()), waitBackoff, true
		}
		return backoff(), waitBackoff, true
	}
	return 0, 0, false
}

// untilReset is the wait for a rate-limit reset, with a second's margin
// for clock skew; never negative.
func untilReset(reset, now time.Time) time.Duration {
	return max(reset.Sub(now)+time.Second, time.Second)
}

// RetryLaterError is a request that kept failing with 429, a secondary
// rate limit, 5xx or a network error through every attempt. After is the
// wait the server asked for (Retry-After) or the next backoff, for the
// scheduler's next try.
type RetryLaterError struct {
	Err   error
	After time.Duration
}

func (e *RetryLaterError) Error() string             { return e.Err.Error() }
func (e *RetryLaterError) Unwrap() error             { return e.Err }
func (e *RetryLaterError) RetryAfter() time.Duration { return e.After }
