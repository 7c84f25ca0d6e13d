package daemon

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/health"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/plugins/sandbox"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) {
	sandbox.RunIfHelper() // local plugins run through this test binary
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

type retryErr struct{ d time.Duration }

func (e retryErr) Error() string             { return "429 slow down" }
func (e retryErr) RetryAfter() time.Duration { return e.d }

type ownerErr struct{ key string }

func (e ownerErr) Error() string       { return "token revoked" }
func (e ownerErr) OwnerAction() string { return "run: fix-it" }
func (e ownerErr) NotifyKey() string   { return e.key }

type setupErr struct{}

func (setupErr) Error() string         { return "no token" }
func (setupErr) NotConfigured() string { return "run: set-it-up" }

// recorder is a Notifier that keeps what it is told.
type recorder struct {
	mu   sync.Mutex
	msgs []notify.Message
}

func (r *recorder) Notify(_ context.Context, m notify.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	return nil
}

func testRegistry(n Notifier) (*collectorRegistry, *health.Registry) {
	h := health.NewRegistry(nil)
	r := newCollectorRegistry(slog.New(slog.DiscardHandler), h, n, time.Now)
	r.jitter = func(max time.Duration) time.Duration { return max / 2 } // waits come out exact
	return r, h
}

func TestLoopWaitsIntervalsBackoffAndRetryAfter(t *testing.T) {
	r, h := testRegistry(nil)
	script := []error{nil, retryErr{5 * time.Minute}, errors.New("boom"), errors.New("boom"), nil}
	var mu sync.Mutex
	passes := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := r.add(Collector{Name: "x", Interval: time.Minute, Collect: func(ctx context.Context) (CollectOutcome, error) {
		mu.Lock()
		defer mu.Unlock()
		err := script[passes]
		passes++
		return CollectOutcome{Seen: 2, Stored: 1}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	r.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		if len(waits) > len(script) {
			cancel()
			return ctx.Err()
		}
		return nil
	}
	if err := r.loop(ctx, cs); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{6 * time.Second, time.Minute, 5 * time.Minute, 2 * time.Minute, 4 * time.Minute, time.Minute}
	if len(waits) != len(want) {
		t.Fatalf("waits = %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("wait %d = %v, want %v (all: %v)", i, waits[i], want[i], waits)
		}
	}
	c, _ := h.Get("x")
	if c.State != health.OK || c.Counters["items_seen"] != 10 || c.Counters["items_stored"] != 5 || c.LastError != "boom" || c.LastSuccess.IsZero() {
		t.Errorf("health = %+v", c)
	}
}

func TestStatesAndOwnerToldOnce(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "o.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := notify.NewQueue(st, nil)
	r, h := testRegistry(q)
	revoked := func(context.Context) (CollectOutcome, error) {
		return CollectOutcome{}, ownerErr{key: "google-token:abc"}
	}
	for _, c := range []Collector{
		{Name: "gmail", Interval: time.Minute, Collect: revoked},
		{Name: "calendar", Interval: time.Minute, Collect: revoked},
		{Name: "setup", Interval: time.Minute, Collect: func(context.Context) (CollectOutcome, error) { return CollectOutcome{}, setupErr{} }},
		{Name: "off", Disabled: "set FOO, then run: omnibrain auth foo"},
		{Name: "panics", Interval: time.Minute, Collect: func(context.Context) (CollectOutcome, error) { panic("bad data") }},
	} {
		if _, err := r.add(c); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for range 3 {
		if _, err := r.CollectNow(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.CollectNow(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]api.CollectResult{}
	for _, x := range res {
		got[x.Collector] = x
	}
	for name, want := range map[string]struct{ state, fix string }{
		"gmail": {"failed", "run: fix-it"}, "calendar": {"failed", "run: fix-it"}, "setup": {"disabled", "run: set-it-up"},
		"off": {"disabled", "set FOO, then run: omnibrain auth foo"}, "panics": {"failed", ""},
	} {
		if got[name].State != want.state || got[name].Fix != want.fix {
			t.Errorf("%s = %+v, want state %s fix %q", name, got[name], want.state, want.fix)
		}
	}
	for name, want := range map[string]health.State{"gmail": health.Down, "setup": health.Disabled, "off": health.Disabled, "panics": health.Down} {
		if c, _ := h.Get(name); c.State != want {
			t.Errorf("health %s = %s, want %s", name, c.State, want)
		}
	}
	if c, _ := h.Get("gmail"); c.Detail != "run: fix-it" {
		t.Errorf("gmail detail = %q, want the fix", c.Detail)
	}
	// Two collectors, four passes each: one notification for the token.
	ns, err := st.Notifications(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 || !strings.Contains(ns[0].Text, "run: fix-it") || ns[0].Level != string(notify.Important) {
		t.Errorf("notifications = %+v, want exactly one naming the fix", ns)
	}
	if _, err := r.CollectNow(ctx, []string{"nope"}); err == nil || !strings.Contains(err.Error(), "have: calendar, gmail, off, panics, setup") {
		t.Errorf("unknown collector: %v", err)
	}
}

// googleApp opens an App whose Google endpoints are the fake.
func googleApp(t *testing.T, fake *fakegoogle.Server) (*App, *api.Client) {
	t.Helper()
	cfg := config.Default(t.TempDir())
	cfg.Google.APIURL, cfg.Google.TokenURL, cfg.Google.AuthURL = fake.URL, fake.TokenURL(), fake.AuthURL()
	cfg.Google.ClientID, cfg.Google.ClientSecret = fake.ClientID(), config.Secret(fake.ClientSecret())
	cfg.Location = time.UTC
	cfg.Approval.SendDelay = 0 // approvals run at once here
	app, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, stop := api.NewInProcessClient(app.Handler())
	t.Cleanup(func() {
		stop()
		app.Close()
	})
	return app, c
}

func result(t *testing.T, c *api.Client, name string) api.CollectResult {
	t.Helper()
	res, err := c.Collect(context.Background(), name)
	if err != nil || len(res) != 1 {
		t.Fatalf("collect %s: %v, %v", name, res, err)
	}
	return res[0]
}

func TestCollectGoogleThroughAPIAndTokenPickup(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	start := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
	if _, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "Soon", Start: &fakegoogle.EventDateTime{DateTime: start.Format(time.RFC3339)},
		End: &fakegoogle.EventDateTime{DateTime: start.Add(time.Hour).Format(time.RFC3339)}}); err != nil {
		t.Fatal(err)
	}
	fake.AddMessage([]byte("From: alice@example.org\r\nTo: owner@example.com\r\nSubject: hi\r\nDate: "+time.Now().Format(time.RFC1123Z)+"\r\n\r\nhello\r\n"), fakegoogle.MessageOptions{})
	app, c := googleApp(t, fake)

	// No token yet: disabled, with the fix, and nothing is asked of Google.
	r := result(t, c, "calendar")
	if r.State != "disabled" || r.Fix != "run: omnibrain auth google" || r.Detail != "" || strings.Contains(r.Error, "http") || !strings.Contains(r.Error, "not authorized yet") {
		t.Errorf("without a token = %+v; want disabled with the fix, no pass detail and no request URL", r)
	}
	if comp, _ := app.Health().Get("calendar"); comp.State != health.Disabled {
		t.Errorf("health = %+v", comp)
	}
	// The owner imports a token (auth google --token-file) while the app
	// runs: the next pass uses it.
	tok := fake.IssueToken(time.Hour)
	data := `{"access_token":"` + tok.AccessToken + `","refresh_token":"` + tok.RefreshToken + `","token_type":"Bearer","expiry":"` + tok.Expiry.Format(time.RFC3339) + `"}`
	if err := google.ImportToken(app.cfg.Path(google.TokenFileName), []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}
	r = result(t, c, "calendar")
	if r.State != "ok" || r.Stored != 1 || r.Seen != 1 {
		t.Fatalf("with the token = %+v", r)
	}
	if r = result(t, c, "calendar"); r.State != "ok" || r.Stored != 0 {
		t.Errorf("second pass = %+v, want nothing new", r)
	}
	if r = result(t, c, "gmail"); r.State != "ok" || r.Stored != 1 || r.Detail != "backfill" {
		t.Errorf("gmail pass = %+v", r)
	}
	if comp, _ := app.Health().Get("calendar"); comp.State != health.OK || comp.Counters["items_stored"] != 1 {
		t.Errorf("health = %+v", comp)
	}

	// Revoked: both passes fail with the fix; the owner is told once for
	// the token, not once per collector or pass.
	fake.RevokeRefreshTokens()
	for range 2 {
		for _, name := range []string{"calendar", "gmail"} {
			r = result(t, c, name)
			if r.State != "failed" || !strings.Contains(r.Fix, "omnibrain auth google") {
				t.Errorf("%s after revocation = %+v", name, r)
			}
		}
	}
	ns, err := app.Store().Notifications(context.Background(), "", 10)
	if err != nil || len(ns) != 1 {
		t.Errorf("notifications after revocation = %d, %v; want 1", len(ns), err)
	}
	if comp, _ := app.Health().Get("calendar"); comp.State != health.Down {
		t.Errorf("health after revocation = %+v", comp)
	}
}
