package google_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/oauth2"
	"google.golang.org/api/gmail/v1"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

func googleConfig(fake *fakegoogle.Server) config.Google {
	return config.Google{APIURL: fake.URL, TokenURL: fake.TokenURL(), AuthURL: fake.AuthURL(), ClientID: fake.ClientID(), ClientSecret: config.Secret(fake.ClientSecret())}
}

func oauthConf(t *testing.T, fake *fakegoogle.Server) *oauth2.Config {
	t.Helper()
	conf, err := google.OAuthConfig(googleConfig(fake))
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// browser plays the owner's browser: it opens the consent URL and follows
// the redirect to the loopback listener.
func browser(t *testing.T, before func(redirect string)) func(string) error {
	return func(authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		go func() {
			if before != nil {
				before(u.Query().Get("redirect_uri"))
			}
			resp, err := http.Get(authURL)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		return nil
	}
}

func TestAuthorizeInstalledAppFlow(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	var strayStatus int
	show := browser(t, func(redirect string) {
		// Someone else's redirect (wrong state) is refused and the flow goes on.
		resp, err := http.Get(redirect + "?code=attacker&state=wrong")
		if err == nil {
			strayStatus = resp.StatusCode
			resp.Body.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, err := google.Authorize(ctx, *oauthConf(t, fake), google.FlowOptions{Show: show})
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Errorf("token = %+v", tok)
	}
	if strayStatus != http.StatusBadRequest {
		t.Errorf("a redirect with a wrong state answered %d, want 400", strayStatus)
	}
	reqs := fake.AuthRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d consent requests", len(reqs))
	}
	q := reqs[0]
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	if redirect.Hostname() != "127.0.0.1" || redirect.Port() == "" || redirect.Port() == "0" {
		t.Errorf("redirect_uri = %s, want a random 127.0.0.1 port", redirect)
	}
	if q.Get("code_challenge_method") != "S256" || len(q.Get("state")) < 32 || q.Get("access_type") != "offline" {
		t.Errorf("consent request = %v", q)
	}
	scopes := strings.Fields(q.Get("scope"))
	slices.Sort(scopes)
	want := []string{"https://www.googleapis.com/auth/calendar.events", "https://www.googleapis.com/auth/gmail.readonly", "https://www.googleapis.com/auth/gmail.send"}
	if !slices.Equal(scopes, want) {
		t.Errorf("scopes = %v, want exactly %v", scopes, want)
	}
	// The token works against the API.
	path := filepath.Join(t.TempDir(), google.TokenFileName)
	if err := google.WriteToken(path, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	svc := gmailThrough(t, fake, google.NewAuth(google.AuthOptions{Path: path, Config: oauthConf(t, fake)}))
	if _, err := svc.Users.GetProfile("me").Do(); err != nil {
		t.Errorf("profile with the new token: %v", err)
	}
}

func TestAuthorizeRefusedAndTimeout(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	fake.SetConsent("access_denied")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := google.Authorize(ctx, *oauthConf(t, fake), google.FlowOptions{Show: browser(t, nil)}); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Errorf("denied consent: %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err := google.Authorize(short, *oauthConf(t, fake), google.FlowOptions{Show: func(string) error { return nil }})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("nobody answers: %v, want a deadline error", err)
	}
}

func gmailThrough(t *testing.T, fake *fakegoogle.Server, auth oauth2.TokenSource) *gmail.Service {
	t.Helper()
	svc, err := google.NewGmail(context.Background(), fake.URL, google.NewHTTPClient(google.ClientOptions{Auth: auth}))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func writeIssued(t *testing.T, tok fakegoogle.Token) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), google.TokenFileName)
	if err := google.WriteToken(path, &oauth2.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: "Bearer", Expiry: tok.Expiry}, "", ""); err != nil {
		t.Fatal(err)
	}
	return path
}

func countGrant(fake *fakegoogle.Server, grant string) int {
	n := 0
	for _, f := range fake.TokenRequests() {
		if f.Get("grant_type") == grant {
			n++
		}
	}
	return n
}

func TestAuthRefreshIsPersisted(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	issued := fake.IssueToken(-time.Minute) // already expired
	path := writeIssued(t, issued)
	auth := google.NewAuth(google.AuthOptions{Path: path, Config: oauthConf(t, fake)})
	svc := gmailThrough(t, fake, auth)
	for range 3 {
		if _, err := svc.Users.GetProfile("me").Do(); err != nil {
			t.Fatal(err)
		}
	}
	if n := countGrant(fake, "refresh_token"); n != 1 {
		t.Errorf("%d refreshes for 3 calls, want 1", n)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v; want 0600", fi.Mode(), err)
	}
	b, _ := os.ReadFile(path)
	f, err := google.ParseToken(b, time.Now())
	if err != nil || f == nil || strings.Contains(string(b), issued.AccessToken) || !strings.Contains(string(b), issued.RefreshToken) {
		t.Errorf("persisted token %s: want the refreshed access token and the kept refresh token", b)
	}
	// A new process (a fresh Auth) uses the persisted token without refreshing.
	svc2 := gmailThrough(t, fake, google.NewAuth(google.AuthOptions{Path: path, Config: oauthConf(t, fake)}))
	if _, err := svc2.Users.GetProfile("me").Do(); err != nil || countGrant(fake, "refresh_token") != 1 {
		t.Errorf("second process: %v, %d refreshes", err, countGrant(fake, "refresh_token"))
	}
}

func TestAuthInvalidGrantAndReimport(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	path := writeIssued(t, fake.IssueToken(-time.Minute))
	auth := google.NewAuth(google.AuthOptions{Path: path, Config: oauthConf(t, fake)})
	svc := gmailThrough(t, fake, auth)
	fake.RevokeRefreshTokens()
	for range 2 {
		_, err := svc.Users.GetProfile("me").Do()
		var re *google.RevokedError
		if !errors.As(err, &re) || !strings.Contains(re.OwnerAction(), "omnibrain auth google") {
			t.Fatalf("after revocation: %v, want a RevokedError naming the fix", err)
		}
	}
	if n := countGrant(fake, "refresh_token"); n != 1 {
		t.Errorf("%d refresh attempts after revocation, want 1 (no hammering)", n)
	}
	// The owner imports a new token (auth google --token-file): the same
	// Auth picks it up at the next request.
	fresh := fake.IssueToken(time.Hour)
	data := `{"access_token":"` + fresh.AccessToken + `","token_type":"Bearer","refresh_token":"` + fresh.RefreshToken + `","expiry":"` + fresh.Expiry.UTC().Format(time.RFC3339) + `"}`
	if err := google.ImportToken(path, []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}
	// An import comes later than the first write: its mtime differs
	// whatever the file system's granularity.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Users.GetProfile("me").Do(); err != nil {
		t.Errorf("after import: %v", err)
	}
}

func TestAuthMissingTokenFile(t *testing.T) {
	auth := google.NewAuth(google.AuthOptions{Path: filepath.Join(t.TempDir(), "none.json")})
	_, err := auth.Token()
	var na *google.NotAuthorizedError
	if !errors.As(err, &na) || na.NotConfigured() != "run: omnibrain auth google" {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseToken(t *testing.T) {
	now := time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, in    string
		wantErr     string
		access      string
		refresh     string
		expiry      time.Time
		clientID    string
		clientFound bool
	}{
		{name: "standard", in: `{"access_token":"a","token_type":"Bearer","refresh_token":"r","expiry":"2024-07-01T13:00:00Z"}`, access: "a", refresh: "r", expiry: now.Add(time.Hour)},
		{name: "expires_in", in: `{"access_token":"a","refresh_token":"r","expires_in":3599}`, access: "a", refresh: "r", expiry: now.Add(3599 * time.Second)},
		{name: "google-auth", in: `{"token":"a","refresh_token":"r","client_id":"c","client_secret":"s","expiry":"2024-07-01T13:00:00.000000Z"}`, access: "a", refresh: "r", expiry: now.Add(time.Hour), clientID: "c"},
		{name: "gcloud authorized_user", in: `{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}`, refresh: "r", clientID: "c"},
		{name: "not json", in: `access_token=a`, wantErr: "not JSON"},
		{name: "empty", in: `{"token_type":"Bearer"}`, wantErr: "no access_token"},
		{name: "bad expiry", in: `{"access_token":"a","expiry":"tomorrow"}`, wantErr: "expiry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tok.json")
			err := google.ImportToken(path, []byte(c.in), now)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("err = %v, want %q", err, c.wantErr)
				}
				if google.HasToken(path) {
					t.Error("a bad token was written")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			f, err := google.ParseToken(b, now)
			if err != nil {
				t.Fatal(err)
			}
			tok := f.OAuth2Token()
			if tok.AccessToken != c.access || tok.RefreshToken != c.refresh || !tok.Expiry.Equal(c.expiry) && !(c.access == "" && tok.Expiry.IsZero()) {
				t.Errorf("token = %+v", tok)
			}
			if !strings.Contains(string(b), `"client_id": "`+c.clientID+`"`) && c.clientID != "" {
				t.Errorf("client id not kept: %s", b)
			}
		})
	}
}

func TestOAuthConfigSources(t *testing.T) {
	dir := t.TempDir()
	installed := filepath.Join(dir, "installed.json")
	os.WriteFile(installed, []byte(`{"installed":{"client_id":"id-1.apps.googleusercontent.com","client_secret":"s1","redirect_uris":["http://localhost"]}}`), 0o600)
	web := filepath.Join(dir, "web.json")
	os.WriteFile(web, []byte(`{"web":{"client_id":"id-2","client_secret":"s2"}}`), 0o600)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"service_account":{}}`), 0o600)
	for _, c := range []struct {
		name     string
		g        config.Google
		id, secr string
		err      bool
	}{
		{name: "config", g: config.Google{ClientID: "cfg", ClientSecret: "cs", Credentials: installed}, id: "cfg", secr: "cs"},
		{name: "installed json", g: config.Google{Credentials: installed}, id: "id-1.apps.googleusercontent.com", secr: "s1"},
		{name: "web json", g: config.Google{Credentials: web}, id: "id-2", secr: "s2"},
		{name: "broken json", g: config.Google{Credentials: broken}, err: true},
		{name: "nothing", g: config.Google{}, err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.g.TokenURL, c.g.AuthURL = "http://127.0.0.1:1/token", "http://127.0.0.1:1/auth"
			conf, err := google.OAuthConfig(c.g)
			if c.err {
				if err == nil {
					t.Errorf("want an error, got %+v", conf)
				}
				return
			}
			if err != nil || conf.ClientID != c.id || conf.ClientSecret != c.secr || conf.Endpoint.TokenURL != c.g.TokenURL {
				t.Errorf("conf = %+v, %v", conf, err)
			}
		})
	}
}

// sleeps records the waits of the retry transport instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func TestRetriesHonourRetryAfter(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	rec := &sleeps{}
	svc, err := google.NewGmail(context.Background(), fake.URL, google.NewHTTPClient(google.ClientOptions{Sleep: rec.sleep, MaxWait: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	// A 429 with Retry-After: 2 is waited out and the read succeeds.
	fake.InjectFault(fakegoogle.Fault{Path: "/gmail/v1/users/me/profile", Status: 429, RetryAfter: "2", Times: 1})
	if _, err := svc.Users.GetProfile("me").Do(); err != nil {
		t.Fatal(err)
	}
	if len(rec.d) != 1 || rec.d[0] != 2*time.Second {
		t.Errorf("waits = %v, want [2s]", rec.d)
	}
	// A Retry-After longer than MaxWait is left to the caller, as a RetryError.
	fake.InjectFault(fakegoogle.Fault{Path: "/gmail/v1/users/me/profile", Status: 429, RetryAfter: "120", Times: 1})
	_, err = svc.Users.GetProfile("me").Do()
	var re *google.RetryError
	if !errors.As(google.Classify(err, time.Now()), &re) || re.RetryAfter() != 120*time.Second || re.Status != 429 {
		t.Errorf("long Retry-After: %v, want a RetryError of 120s", err)
	}
	// Persistent 500s: three attempts, then the error.
	rec.d = nil
	fake.InjectFault(fakegoogle.Fault{Path: "/gmail/v1/users/me/profile", Status: 500})
	before := fake.CountRequests("GET", "/gmail/v1/users/me/profile")
	if _, err := svc.Users.GetProfile("me").Do(); !google.IsStatus(err, 500) {
		t.Errorf("persistent 500: %v", err)
	}
	if n := fake.CountRequests("GET", "/gmail/v1/users/me/profile") - before; n != 3 || len(rec.d) != 2 {
		t.Errorf("%d attempts, waits %v; want 3 attempts", n, rec.d)
	}
	// A send is never retried here.
	fake.InjectFault(fakegoogle.Fault{Method: "POST", Status: 500})
	raw := base64.URLEncoding.EncodeToString([]byte("To: a@example.org\r\nSubject: x\r\n\r\nx\r\n"))
	if _, err := svc.Users.Messages.Send("me", &gmail.Message{Raw: raw}).Do(); !google.IsStatus(err, 500) {
		t.Errorf("send with 500: %v", err)
	}
	if n := fake.CountRequests("POST", "/gmail/v1/users/me/messages/send"); n != 1 {
		t.Errorf("send attempted %d times, want 1", n)
	}
}
