package fakegoogle_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"golang.org/x/oauth2"
	"google.golang.org/api/gmail/v1"
	"google.golang.org/api/option"
)

func oauthConfig(fake *fakegoogle.Server) *oauth2.Config {
	return &oauth2.Config{
		ClientID: fake.ClientID(), ClientSecret: fake.ClientSecret(),
		Endpoint:    oauth2.Endpoint{AuthURL: fake.AuthURL(), TokenURL: fake.TokenURL()},
		RedirectURL: "http://127.0.0.1:45678/callback",
		Scopes:      []string{"https://www.googleapis.com/auth/gmail.readonly"},
	}
}

// consent follows the consent page's redirect and returns its query.
func consent(t *testing.T, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent answered %s", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc.Query()
}

func TestOAuthCodeFlowWithPKCE(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	cfg := oauthConfig(fake)
	ctx := context.Background()
	verifier := oauth2.GenerateVerifier()
	back := consent(t, cfg.AuthCodeURL("state-123", oauth2.AccessTypeOffline, oauth2.S256ChallengeOption(verifier)))
	if back.Get("state") != "state-123" || back.Get("code") == "" {
		t.Fatalf("redirect query = %v", back)
	}
	if _, err := cfg.Exchange(ctx, back.Get("code"), oauth2.VerifierOption("a-wrong-verifier-of-sufficient-length-000000000")); !isGrantError(err, "invalid_grant") {
		t.Errorf("wrong verifier: %v, want invalid_grant", err)
	}
	back = consent(t, cfg.AuthCodeURL("s2", oauth2.AccessTypeOffline, oauth2.S256ChallengeOption(verifier)))
	tok, err := cfg.Exchange(ctx, back.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" || tok.AccessToken == "" || tok.Expiry.IsZero() {
		t.Errorf("token = %+v", tok)
	}
	if _, err := cfg.Exchange(ctx, back.Get("code"), oauth2.VerifierOption(verifier)); !isGrantError(err, "invalid_grant") {
		t.Errorf("a code used twice: %v, want invalid_grant", err)
	}

	// The access token opens the API; no token does not.
	svc, err := gmail.NewService(ctx, option.WithEndpoint(fake.URL+"/"), option.WithHTTPClient(cfg.Client(ctx, tok)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Users.GetProfile("me").Do(); err != nil {
		t.Errorf("with token: %v", err)
	}
	anon, _ := gmail.NewService(ctx, option.WithEndpoint(fake.URL+"/"), option.WithoutAuthentication())
	if _, err := anon.Users.GetProfile("me").Do(); !isStatus(err, 401) {
		t.Errorf("without token: %v, want 401", err)
	}

	// An expired token is refreshed through the token endpoint.
	tok.Expiry = time.Now().Add(-time.Minute)
	fake.ExpireAccessTokens()
	fresh, err := cfg.TokenSource(ctx, tok).Token()
	if err != nil || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken != tok.RefreshToken {
		t.Fatalf("refresh = %+v, %v", fresh, err)
	}
	// After revocation refreshing answers invalid_grant.
	fake.RevokeRefreshTokens()
	fresh.Expiry = time.Now().Add(-time.Minute)
	if _, err := cfg.TokenSource(ctx, fresh).Token(); !isGrantError(err, "invalid_grant") {
		t.Errorf("revoked refresh: %v, want invalid_grant", err)
	}
}

func TestOAuthConsentRefusals(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	cfg := oauthConfig(fake)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for name, u := range map[string]string{
		"no PKCE":         cfg.AuthCodeURL("s"),
		"remote redirect": (&oauth2.Config{ClientID: cfg.ClientID, Endpoint: cfg.Endpoint, RedirectURL: "http://evil.example/cb", Scopes: cfg.Scopes}).AuthCodeURL("s", oauth2.S256ChallengeOption("v")),
		"unknown client":  (&oauth2.Config{ClientID: "other", Endpoint: cfg.Endpoint, RedirectURL: cfg.RedirectURL, Scopes: cfg.Scopes}).AuthCodeURL("s", oauth2.S256ChallengeOption("v")),
	} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", name, resp.Status)
		}
	}
	fake.SetConsent("access_denied")
	back := consent(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption("v")))
	if back.Get("error") != "access_denied" || back.Get("code") != "" {
		t.Errorf("denied consent redirect = %v", back)
	}
}

func isGrantError(err error, code string) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == code
}
