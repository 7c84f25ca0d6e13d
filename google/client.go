package google

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/internal/wait"
	"golang.org/x/oauth2"
	"google.golang.org/api/calendar/v3"
	"google.golang.org/api/gmail/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// ClientOptions configure the HTTP client under the Google API clients.
type ClientOptions struct {
	// Auth supplies tokens (an *Auth); nil sends no credentials (tests
	// against a fake that does not require them).
	Auth oauth2.TokenSource
	// Base is the transport (default http.DefaultTransport).
	Base http.RoundTripper
	// Attempts per idempotent read on 429/5xx/network errors (default 3).
	Attempts int
	// MaxWait caps one wait between attempts; a longer Retry-After is left
	// to the caller's backoff (default 30 s).
	MaxWait time.Duration
	// Sleep waits d or until ctx is done; tests inject a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	// Timeout bounds one request including retries (default 2 min).
	Timeout time.Duration
}

// NewHTTPClient returns the client the API clients use: tokens from Auth,
// and retries of GETs on 429 and 5xx honouring Retry-After. Writes (send,
// insert, …) are never retried here: their callers decide.
func NewHTTPClient(opts ClientOptions) *http.Client {
	if opts.Base == nil {
		opts.Base = http.DefaultTransport
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 30 * time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = wait.Sleep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	var rt http.RoundTripper = &retryTransport{base: opts.Base, attempts: opts.Attempts, maxWait: opts.MaxWait,
		policy: retry.Policy{Initial: time.Second, Max: opts.MaxWait}, sleep: opts.Sleep, now: opts.Now}
	if opts.Auth != nil {
		rt = &oauth2.Transport{Source: opts.Auth, Base: rt}
	}
	return &http.Client{Transport: rt, Timeout: opts.Timeout}
}

// NewGmail returns a Gmail client for apiURL, the bare root that serves
// /gmail/v1/ and /upload/gmail/v1/ (https://www.googleapis.com).
func NewGmail(ctx context.Context, apiURL string, hc *http.Client) (*gmail.Service, error) {
	svc, err := gmail.NewService(ctx, option.WithEndpoint(strings.TrimSuffix(apiURL, "/")+"/"), option.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("google: gmail client: %w", err)
	}
	return svc, nil
}

// NewCalendar returns a Calendar client for apiURL, the bare root that
// serves /calendar/v3/.
func NewCalendar(ctx context.Context, apiURL string, hc *http.Client) (*calendar.Service, error) {
	svc, err := calendar.NewService(ctx, option.WithEndpoint(strings.TrimSuffix(apiURL, "/")+"/calendar/v3/"), option.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("google: calendar client: %w", err)
	}
	return svc, nil
}

// retryTransport retries idempotent reads on 429, 5xx and network errors.
type retryTransport struct {
	base     http.RoundTripper
	attempts int
	maxWait  time.Duration
	policy   retry.Policy // waits when Google does not say
	sleep    func(context.Context, time.Duration) error
	now      func() time.Time
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return t.base.RoundTrip(req)
	}
	for attempt := 1; ; attempt++ {
		resp, err := t.base.RoundTrip(req)
		if attempt >= t.attempts || req.Context().Err() != nil {
			return resp, err
		}
		var wait time.Duration
		switch {
		case err != nil:
			wait = t.policy.Wait(attempt)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			wait = t.policy.Wait(attempt)
			if d, ok := retry.After(resp.Header.Get("Retry-After"), t.now()); ok {
				wait = d
			}
			if wait > t.maxWait {
				return resp, nil // too long to wait inside a request: the caller backs off
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		default:
			return resp, nil
		}
		if err := t.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// RetryError is a 429 or 5xx answer after the in-request retries: the
// caller should wait at least Wait (Retry-After, when Google sent one).
type RetryError struct {
	Status int
	Wait   time.Duration
	Err    error
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// RetryAfter is how long to wait before trying again.
func (e *RetryError) RetryAfter() time.Duration { return e.Wait }

// Classify turns a Google API error worth retrying later (429, 5xx) into a
// *RetryError carrying Retry-After; other errors are returned as they are.
func Classify(err error, now time.Time) error {
	var ge *googleapi.Error
	if err == nil || !errors.As(err, &ge) {
		return err
	}
	if ge.Code != http.StatusTooManyRequests && ge.Code < 500 {
		return err
	}
	re := &RetryError{Status: ge.Code, Err: err}
	if d, ok := retry.After(ge.Header.Get("Retry-After"), now); ok {
		re.Wait = d
	}
	return re
}

// IsStatus reports whether err is a Google API answer with that status.
func IsStatus(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}
