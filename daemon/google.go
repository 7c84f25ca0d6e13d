package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/omnibrain/omnibrain/collectors/calendar"
	"github.com/omnibrain/omnibrain/collectors/gmail"
	"github.com/omnibrain/omnibrain/executor"
	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/health"
)

// googleClients are the pieces built from the Google configuration that
// the collectors and executors share.
type googleClients struct {
	auth      *google.Auth
	tokenPath string
	fix       string // what to do while there is no token
}

// openGoogle builds the Google token source and clients and registers the
// Gmail and Calendar collectors. They are always polled: without a token
// they report Disabled with the fix, and a token saved later (auth google,
// --token-file) is picked up at the next pass without a restart.
func (a *App) openGoogle(ctx context.Context) error {
	g := a.cfg.Google
	conf, err := google.OAuthConfig(g)
	fix := "run: " + google.FixCommand
	switch {
	case errors.Is(err, google.ErrNoClient):
		// A token file may carry its own client; else refreshing fails
		// with ErrNoClient, which says what to configure.
		conf = &oauth2.Config{Endpoint: google.Endpoint(g)}
		fix = "set OMNIBRAIN_GOOGLE_CLIENT_ID and OMNIBRAIN_GOOGLE_CLIENT_SECRET (or OMNIBRAIN_GOOGLE_CREDENTIALS), then run: " + google.FixCommand
	case err != nil:
		for _, name := range []string{"gmail", "calendar"} {
			if err := a.registerCollector(Collector{Name: name, Disabled: err.Error()}); err != nil {
				return err
			}
		}
		return nil
	}
	gc := &googleClients{tokenPath: a.cfg.Path(google.TokenFileName), fix: fix}
	gc.auth = google.NewAuth(google.AuthOptions{Path: gc.tokenPath, Config: conf, Log: a.log})
	hc := google.NewHTTPClient(google.ClientOptions{Auth: gc.auth})

	gmailSvc, err := google.NewGmail(ctx, g.APIURL, hc)
	if err != nil {
		return err
	}
	mail, err := gmail.New(gmail.Options{Service: gmailSvc, Store: a.store, BackfillDays: g.GmailBackfillDays, Log: a.log, Now: a.store.Now})
	if err != nil {
		return err
	}
	err = a.registerCollector(Collector{Name: gmail.Name, Interval: a.cfg.Schedule.Mail, Collect: func(ctx context.Context) (CollectOutcome, error) {
		var r gmail.Result
		err := gc.retryUnauthorized(func() (err error) { r, err = mail.Collect(ctx); return err })
		detail := r.Mode
		if r.Gone > 0 {
			detail += fmt.Sprintf(", %d deleted before they could be read", r.Gone)
		}
		if r.Deleted > 0 {
			detail += fmt.Sprintf(", %d deleted in Gmail and removed here", r.Deleted)
		}
		return CollectOutcome{Seen: r.Seen, Stored: r.Stored, Skipped: r.Skipped, Detail: detail}, gc.wrap(err)
	}})
	if err != nil {
		return err
	}

	calSvc, err := google.NewCalendar(ctx, g.APIURL, hc)
	if err != nil {
		return err
	}
	cal, err := calendar.New(calendar.Options{Service: calSvc, Store: a.store, PastDays: g.CalendarPastDays, FutureDays: g.CalendarFutureDays,
		Location: a.cfg.Location, Log: a.log, Now: a.store.Now})
	if err != nil {
		return err
	}
	err = a.registerCollector(Collector{Name: calendar.Name, Interval: a.cfg.Schedule.Calendar, Collect: func(ctx context.Context) (CollectOutcome, error) {
		var r calendar.Result
		err := gc.retryUnauthorized(func() (err error) { r, err = cal.Collect(ctx); return err })
		detail := "incremental"
		if r.Full {
			detail = "full sync of the window"
		}
		if r.Cancelled > 0 {
			detail += fmt.Sprintf(", %d cancelled", r.Cancelled)
		}
		return CollectOutcome{Seen: r.Seen, Stored: r.Stored, Skipped: r.Skipped, Detail: detail}, gc.wrap(err)
	}})
	if err != nil {
		return err
	}
	// The executors the approval gate calls; without a token they fail
	// with the command that fixes it.
	mailExec, err := executor.NewGmail(executor.GmailOptions{Service: gmailSvc, FromName: a.cfg.Owner.Name, Log: a.log})
	if err != nil {
		return err
	}
	if err := a.registerExecutor(mailExec); err != nil {
		return err
	}
	calExec, err := executor.NewCalendar(executor.CalendarOptions{Service: calSvc, Location: a.cfg.Location, Log: a.log})
	if err != nil {
		return err
	}
	if err := a.registerExecutor(calExec); err != nil {
		return err
	}

	if !google.HasToken(gc.tokenPath) {
		a.health.Set(gmail.Name, health.Disabled, gc.fix)
		a.health.Set(calendar.Name, health.Disabled, gc.fix)
	}
	return nil
}

// retryUnauthorized runs a pass again once after a 401: Google refused an
// access token that looked valid (revoked with the grant, or expired
// early), so the second run refreshes it and either works or reports the
// revocation with its fix.
func (gc *googleClients) retryUnauthorized(pass func() error) error {
	err := pass()
	if google.IsStatus(err, 401) {
		gc.auth.Invalidate()
		err = pass()
	}
	return err
}

// wrap adapts the clients' errors to what the scheduler understands: no
// token yet is "not configured" with the right fix, a 429/5xx carries its
// Retry-After.
func (gc *googleClients) wrap(err error) error {
	if err == nil {
		return nil
	}
	var na *google.NotAuthorizedError
	if errors.As(err, &na) {
		// The request never left: its URL would only be noise.
		return &notConfiguredError{err: na, fix: gc.fix}
	}
	return google.Classify(err, time.Now())
}

// notConfiguredError is a collector error with its fix (see Collector).
type notConfiguredError struct {
	err error
	fix string
}

func (e *notConfiguredError) Error() string         { return e.err.Error() }
func (e *notConfiguredError) Unwrap() error         { return e.err }
func (e *notConfiguredError) NotConfigured() string { return e.fix }
