package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/daemon"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
)

type googleCLI struct {
	fake *fakegoogle.Server
	home string
	vars map[string]string
}

func newGoogleCLI(t *testing.T) *googleCLI {
	t.Helper()
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	home := filepath.Join(t.TempDir(), "home")
	return &googleCLI{fake: fake, home: home, vars: map[string]string{
		"OMNIBRAIN_HOME": home, "OMNIBRAIN_GOOGLE_API_URL": fake.URL, "OMNIBRAIN_GOOGLE_TOKEN_URL": fake.TokenURL(),
		"OMNIBRAIN_GOOGLE_AUTH_URL": fake.AuthURL(), "OMNIBRAIN_GOOGLE_CLIENT_ID": fake.ClientID(), "OMNIBRAIN_GOOGLE_CLIENT_SECRET": fake.ClientSecret(),
	}}
}

// syncWriter is a goroutine-safe buffer that calls onWrite with everything
// written so far.
type syncWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	onWrite func(string)
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	s := w.b.String()
	w.mu.Unlock()
	if w.onWrite != nil {
		w.onWrite(s)
	}
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (g *googleCLI) run(t *testing.T, stdin string, stderr *syncWriter, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	if stderr == nil {
		stderr = &syncWriter{}
	}
	err := run(context.Background(), args, strings.NewReader(stdin), &out, stderr, func(k string) string { return g.vars[k] })
	return out.String(), err
}

func TestAuthGoogleBrowserFlow(t *testing.T) {
	g := newGoogleCLI(t)
	urlRE := regexp.MustCompile(`http://\S+/o/oauth2/auth\?\S+`)
	var once sync.Once
	var browserErr error
	done := make(chan struct{})
	stderr := &syncWriter{onWrite: func(s string) {
		if u := urlRE.FindString(s); u != "" {
			once.Do(func() {
				go func() { // the owner's browser
					defer close(done)
					resp, err := http.Get(u)
					if err != nil {
						browserErr = err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}()
			})
		}
	}}
	out, err := g.run(t, "", stderr, "auth", "google")
	<-done
	if err != nil || browserErr != nil {
		t.Fatalf("auth google: %v, browser %v\nstderr: %s", err, browserErr, stderr.String())
	}
	if !strings.Contains(out, "authorized as owner@example.com") {
		t.Errorf("stdout = %q", out)
	}
	for _, want := range []string{"gmail.readonly:", "gmail.send:", "calendar.events:", "--token-file"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	path := filepath.Join(g.home, google.TokenFileName)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v, %v", fi, err)
	}
	b, _ := os.ReadFile(path)
	saved, err := google.ParseToken(b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if saved.RefreshToken == "" || strings.Contains(out+stderr.String(), saved.AccessToken) || strings.Contains(out+stderr.String(), saved.RefreshToken) {
		t.Errorf("saved token %s; it must hold a refresh token and never be printed", b)
	}
	if _, err := os.Stat(path + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Error("the staged token file was left behind")
	}
}

func tokenJSON(tok fakegoogle.Token) string {
	return `{"access_token":"` + tok.AccessToken + `","token_type":"Bearer","refresh_token":"` + tok.RefreshToken + `","expiry":"` + tok.Expiry.UTC().Format(time.RFC3339) + `"}`
}

// TestAuthGoogleTokenFileReachesOpenApp imports a token while an app over
// the same home is open (as a daemon would be): its next pass uses it.
func TestAuthGoogleTokenFileReachesOpenApp(t *testing.T) {
	g := newGoogleCLI(t)
	cfg, err := config.Load(g.home, func(k string) string { return g.vars[k] }, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if err := config.EnsureHome(g.home); err != nil {
		t.Fatal(err)
	}
	app, err := daemon.Open(context.Background(), cfg, daemon.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, stop := api.NewInProcessClient(app.Handler())
	defer func() { stop(); app.Close() }()
	res, err := c.Collect(context.Background(), "calendar")
	if err != nil || res[0].State != "disabled" {
		t.Fatalf("before import: %+v, %v", res, err)
	}

	file := filepath.Join(t.TempDir(), "token.json")
	os.WriteFile(file, []byte(tokenJSON(g.fake.IssueToken(time.Hour))), 0o644)
	out, err := g.run(t, "", nil, "auth", "google", "--token-file", file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r googleAuthResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || !r.Verified || r.Email != "owner@example.com" || len(r.Scopes) != 3 {
		t.Errorf("--json = %s (%v)", out, err)
	}
	res, err = c.Collect(context.Background(), "calendar")
	if err != nil || res[0].State != "ok" {
		t.Errorf("after import: %+v, %v", res, err)
	}
}

func TestAuthGoogleRefusesBadTokens(t *testing.T) {
	g := newGoogleCLI(t)
	path := filepath.Join(g.home, google.TokenFileName)
	// Not a token.
	if _, err := g.run(t, `{"hello":"world"}`, nil, "auth", "google", "--token-stdin"); err == nil || !strings.Contains(err.Error(), "no access_token") {
		t.Errorf("garbage: %v", err)
	}
	// A token Google refuses: expired, and its refresh token revoked.
	revoked := g.fake.IssueToken(-time.Minute)
	g.fake.RevokeRefreshTokens()
	if _, err := g.run(t, tokenJSON(revoked), nil, "auth", "google", "--token-stdin"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("revoked: %v", err)
	}
	if google.HasToken(path) {
		t.Error("a refused token was saved")
	}
	// Usage mistakes exit 2.
	for _, args := range [][]string{{"auth"}, {"auth", "dropbox"}, {"auth", "google", "--token-file", "x", "--token-stdin"}} {
		var ue usageError
		if _, err := g.run(t, "", nil, args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestCollectCommand(t *testing.T) {
	g := newGoogleCLI(t)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour)
	g.fake.AddEvent("primary", fakegoogle.Event{Summary: "Review", Start: &fakegoogle.EventDateTime{DateTime: start.Format(time.RFC3339)},
		End: &fakegoogle.EventDateTime{DateTime: start.Add(time.Hour).Format(time.RFC3339)}})
	// Named but not set up: the fix is printed and the exit status says
	// that nothing was collected.
	out, err := g.run(t, "", nil, "collect", "calendar")
	if err == nil || !strings.Contains(out, "calendar  disabled run: omnibrain auth google") {
		t.Errorf("without a token: %q, %v", out, err)
	}
	if _, err := g.run(t, tokenJSON(g.fake.IssueToken(time.Hour)), nil, "auth", "google", "--token-stdin"); err != nil {
		t.Fatal(err)
	}
	out, err = g.run(t, "", nil, "collect", "calendar")
	if err != nil || !strings.Contains(out, "calendar  ok       1 new or changed items (1 seen)") {
		t.Errorf("first pass: %q, %v", out, err)
	}
	out, err = g.run(t, "", nil, "collect", "calendar", "--json")
	var res []api.CollectResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || len(res) != 1 || res[0].Stored != 0 || res[0].State != "ok" {
		t.Errorf("second pass --json: %s, %v", out, err)
	}
	var ue usageError
	if _, err := g.run(t, "", nil, "collect", "nosuch"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "no collector named") {
		t.Errorf("unknown collector: %v, want a usage error", err)
	}
}

// Without an OAuth client, auth google says so once, with the one way to
// get one, instead of a doubled "google:" and the hint twice.
func TestAuthGoogleWithoutAClientSaysWhatToDo(t *testing.T) {
	_, err := runInProcess(t, nil, "--home", t.TempDir(), "auth", "google")
	if err == nil {
		t.Fatal("auth google without a client succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "no OAuth client is configured") || strings.Count(msg, "OMNIBRAIN_GOOGLE_CREDENTIALS") != 1 ||
		strings.Contains(msg, "google: google") || strings.Count(msg, "no OAuth client") != 1 {
		t.Errorf("error:\n%s", msg)
	}
}

// Nobody answers in the browser: the wait ends with what happened and
// that nothing was saved, not a bare context error.
func TestAuthGoogleBrowserNeverAnswers(t *testing.T) {
	g := newGoogleCLI(t)
	_, err := g.run(t, "", nil, "--home", g.home, "auth", "google", "--timeout", "200ms")
	if err == nil || !strings.Contains(err.Error(), "no answer from the browser within 200ms; nothing was saved") {
		t.Fatalf("auth google with no browser: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.home, "google-token.json")); !os.IsNotExist(err) {
		t.Errorf("a token file exists after the wait ran out: %v", err)
	}
}
