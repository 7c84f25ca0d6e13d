// Package google holds what Gmail and Calendar share: the OAuth client and
// scopes, the installed-app consent flow, the token file (HOME/google-token.json,
// 0600) with refresh and reload, and constructors of the API clients with
// retries of idempotent reads on 429/5xx.
package google

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/omnibrain/omnibrain/config"
)

// TokenFileName is the token file inside the home directory.
const TokenFileName = "google-token.json"

// FixCommand is what the owner runs to (re)authorize omnibrain.
const FixCommand = "omnibrain auth google"

// Scope is one OAuth scope omnibrain asks for and why.
type Scope struct {
	URL  string `json:"url"`
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Scopes are the smallest scopes that serve the features: reading mail,
// sending approved mail, and reading and changing calendar events.
func Scopes() []Scope {
	return []Scope{
		{URL: "https://www.googleapis.com/auth/gmail.readonly", Name: "gmail.readonly",
			Why: "read your mail and its labels to triage, search and brief you; it cannot change, delete or send anything"},
		{URL: "https://www.googleapis.com/auth/gmail.send", Name: "gmail.send",
			Why: "send only the mails you approved; it cannot read or delete mail"},
		{URL: "https://www.googleapis.com/auth/calendar.events", Name: "calendar.events",
			Why: "read your events to prepare meetings, and create, change or answer only the events you approved; no access to calendar settings or sharing"},
	}
}

// TestingAppNote is what doctor says about OAuth clients in "testing" mode.
const TestingAppNote = "An OAuth client whose consent screen is in \"Testing\" gets refresh tokens that expire after 7 days: publish the app (it can stay unverified for your own account) or run '" + FixCommand + "' weekly."

func scopeURLs() []string {
	var out []string
	for _, s := range Scopes() {
		out = append(out, s.URL)
	}
	return out
}

// ErrNoClient means no OAuth client is configured.
var ErrNoClient = errors.New("google: no OAuth client configured (set OMNIBRAIN_GOOGLE_CLIENT_ID and OMNIBRAIN_GOOGLE_CLIENT_SECRET, or OMNIBRAIN_GOOGLE_CREDENTIALS to the downloaded client-secret JSON)")

// OAuthConfig builds the OAuth client from the configuration: client id
// and secret, else the downloaded client-secret JSON (Credentials). The
// endpoints are always the configured ones, so tests and proxies work.
// RedirectURL is left for the flow to set.
func OAuthConfig(g config.Google) (*oauth2.Config, error) {
	id, secret := g.ClientID, g.ClientSecret.Reveal()
	if id == "" && g.Credentials != "" {
		var err error
		if id, secret, err = readClientSecretJSON(g.Credentials); err != nil {
			return nil, err
		}
	}
	if id == "" {
		return nil, ErrNoClient
	}
	return &oauth2.Config{ClientID: id, ClientSecret: secret, Endpoint: Endpoint(g), Scopes: scopeURLs()}, nil
}

// Endpoint is the configured OAuth endpoint. Without a configured client
// it still serves tokens that carry their own (imported google-auth files).
func Endpoint(g config.Google) oauth2.Endpoint {
	// Google takes the client in the form; auto-detection would send a
	// failing refresh twice.
	return oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyleInParams}
}

// readClientSecretJSON reads the file Google Cloud Console downloads for
// a Desktop (installed) or Web client.
func readClientSecretJSON(path string) (id, secret string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("google credentials: %w", err)
	}
	var f struct {
		Installed *struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
		} `json:"installed"`
		Web *struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
		} `json:"web"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return "", "", fmt.Errorf("google credentials %s: %w", path, err)
	}
	switch {
	case f.Installed != nil && f.Installed.ClientID != "":
		return f.Installed.ClientID, f.Installed.ClientSecret, nil
	case f.Web != nil && f.Web.ClientID != "":
		return f.Web.ClientID, f.Web.ClientSecret, nil
	}
	return "", "", fmt.Errorf("google credentials %s: no \"installed\" or \"web\" client_id (download the OAuth client JSON of a Desktop app)", path)
}

// TokenFile is the token file's JSON: the standard OAuth token fields, plus
// the client an imported token belongs to when it came with one.
type TokenFile struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	ClientID     string    `json:"client_id,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
}

// OAuth2Token is the token part.
func (f *TokenFile) OAuth2Token() *oauth2.Token {
	return &oauth2.Token{AccessToken: f.AccessToken, TokenType: f.TokenType, RefreshToken: f.RefreshToken, Expiry: f.Expiry}
}

// ParseToken reads a token JSON from elsewhere: the standard OAuth token
// (access_token, token_type, refresh_token, expiry or expires_in), the
// google-auth "authorized user" shape (token, refresh_token, client_id,
// client_secret, expiry) or gcloud's authorized_user file.
func ParseToken(b []byte, now time.Time) (*TokenFile, error) {
	var in struct {
		AccessToken  string      `json:"access_token"`
		Token        string      `json:"token"`
		TokenType    string      `json:"token_type"`
		RefreshToken string      `json:"refresh_token"`
		Expiry       string      `json:"expiry"`
		ExpiresIn    json.Number `json:"expires_in"`
		ClientID     string      `json:"client_id"`
		ClientSecret string      `json:"client_secret"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("token file: not JSON: %w", err)
	}
	f := &TokenFile{AccessToken: in.AccessToken, TokenType: in.TokenType, RefreshToken: in.RefreshToken, ClientID: in.ClientID, ClientSecret: in.ClientSecret}
	if f.AccessToken == "" {
		f.AccessToken = in.Token
	}
	if f.AccessToken == "" && f.RefreshToken == "" {
		return nil, errors.New("token file: no access_token or refresh_token")
	}
	if f.TokenType == "" {
		f.TokenType = "Bearer"
	}
	switch {
	case in.Expiry != "":
		t, err := parseExpiry(in.Expiry)
		if err != nil {
			return nil, fmt.Errorf("token file: expiry %q: %w", in.Expiry, err)
		}
		f.Expiry = t
	case in.ExpiresIn != "":
		secs, err := in.ExpiresIn.Int64()
		if err != nil {
			return nil, fmt.Errorf("token file: expires_in %q: %w", in.ExpiresIn, err)
		}
		f.Expiry = now.Add(time.Duration(secs) * time.Second)
	case f.AccessToken != "" && f.RefreshToken != "":
		f.Expiry = now // unknown: refresh before first use
	}
	return f, nil
}

func parseExpiry(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("want an RFC 3339 time")
}

// WriteToken saves a token (0600, atomically). client, when set, is kept
// beside it for tokens imported with their own OAuth client.
func WriteToken(path string, tok *oauth2.Token, clientID, clientSecret string) error {
	f := TokenFile{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, ClientID: clientID, ClientSecret: clientSecret}
	return writeTokenFile(path, &f)
}

func writeTokenFile(path string, f *TokenFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("google token: %w", err)
	}
	if err := config.WriteSecretFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("google token: %w", err)
	}
	return nil
}

// ImportToken validates a token JSON from elsewhere and installs it as the
// token file. A running daemon picks it up on its next request.
func ImportToken(path string, data []byte, now time.Time) error {
	f, err := ParseToken(data, now)
	if err != nil {
		return err
	}
	return writeTokenFile(path, f)
}

// NotAuthorizedError means omnibrain has no Google token yet.
type NotAuthorizedError struct{ Path string }

func (e *NotAuthorizedError) Error() string {
	return fmt.Sprintf("google: not authorized yet (no %s); run: %s", e.Path, FixCommand)
}

// NotConfigured is the fix: the collectors using it are disabled, not failing.
func (e *NotAuthorizedError) NotConfigured() string { return "run: " + FixCommand }

// RevokedError means Google refused the token for good (invalid_grant:
// revoked, expired, or a "testing" app's 7 days are over).
type RevokedError struct {
	Err error
	Key string // identifies the refused token (not its value)
}

func (e *RevokedError) Error() string {
	return fmt.Sprintf("google: access was revoked or has expired (%v); run: %s", e.Err, FixCommand)
}

func (e *RevokedError) Unwrap() error { return e.Err }

// NotifyKey is the same for every collector using the refused token, so
// the owner is told once per token, and again for a later one.
func (e *RevokedError) NotifyKey() string { return "google-token:" + e.Key }

// OwnerAction is the command only the owner can run to fix it.
func (e *RevokedError) OwnerAction() string {
	return "run: " + FixCommand + " (on a machine without a browser: " + FixCommand + " --token-file FILE)"
}

// AuthOptions configure an Auth.
type AuthOptions struct {
	Path string // the token file
	// Config is the OAuth client used to refresh; nil uses the client
	// stored in the token file, if any.
	Config *oauth2.Config
	// HTTPClient reaches the token endpoint (default: 30 s timeout).
	HTTPClient *http.Client
	Log        *slog.Logger
	Now        func() time.Time
}

// Auth is the token source of the daemon's Google clients. It reads the
// token file, re-reads it when it changes (a token imported while the
// daemon runs is used at the next request), refreshes the access token
// and persists the result. It is safe for concurrent use.
type Auth struct {
	path string
	conf *oauth2.Config
	hc   *http.Client
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	file    *TokenFile
	stamp   fileStamp
	revoked error // set on invalid_grant until the file changes
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewAuth returns the token source for the token file at opts.Path.
func NewAuth(opts AuthOptions) *Auth {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Auth{path: opts.Path, conf: opts.Config, hc: opts.HTTPClient, log: opts.Log.With("component", "google.auth"), now: opts.Now}
}

// expiryMargin refreshes a little early so a request never carries a
// token that expires on the way.
const expiryMargin = time.Minute

// Token returns a valid access token (oauth2.TokenSource).
func (a *Auth) Token() (*oauth2.Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.reload(); err != nil {
		return nil, err
	}
	if a.revoked != nil {
		return nil, a.revoked
	}
	f := a.file
	if f.AccessToken != "" && (f.Expiry.IsZero() || a.now().Add(expiryMargin).Before(f.Expiry)) {
		return f.OAuth2Token(), nil
	}
	if f.RefreshToken == "" {
		a.revoked = &RevokedError{Err: errors.New("the access token expired and there is no refresh token"), Key: f.key()}
		return nil, a.revoked
	}
	conf := a.conf
	if f.ClientID != "" && (conf == nil || conf.ClientID == "") {
		c := oauth2.Config{ClientID: f.ClientID, ClientSecret: f.ClientSecret}
		if a.conf != nil {
			c.Endpoint = a.conf.Endpoint
		}
		conf = &c
	}
	if conf == nil || conf.ClientID == "" || conf.Endpoint.TokenURL == "" {
		return nil, fmt.Errorf("google: the access token expired and cannot be refreshed: %w", ErrNoClient)
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, a.hc)
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: f.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "unauthorized_client") {
			a.log.Warn("google refused the refresh token", "error_code", re.ErrorCode)
			a.revoked = &RevokedError{Err: fmt.Errorf("%s: %s", re.ErrorCode, re.ErrorDescription), Key: f.key()}
			return nil, a.revoked
		}
		return nil, fmt.Errorf("google: refresh token: %w", err)
	}
	next := *f
	next.AccessToken, next.Expiry = tok.AccessToken, tok.Expiry
	if tok.TokenType != "" {
		next.TokenType = tok.TokenType
	}
	if tok.RefreshToken != "" {
		next.RefreshToken = tok.RefreshToken
	}
	a.file = &next
	// Persist, unless someone replaced the file meanwhile (an import wins).
	if st, err := stampOf(a.path); err == nil && st == a.stamp {
		if err := writeTokenFile(a.path, &next); err != nil {
			a.log.Error("could not save the refreshed token", "err", err)
		} else if st, err := stampOf(a.path); err == nil {
			a.stamp = st
		}
	}
	a.log.Debug("access token refreshed", "expiry", next.Expiry)
	return next.OAuth2Token(), nil
}

// Invalidate forgets the access token, so the next request refreshes it
// (after a 401 for a token that looked valid).
func (a *Auth) Invalidate() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.file != nil {
		f := *a.file
		f.Expiry = time.Unix(1, 0)
		a.file = &f
	}
}

// key is a short hash naming the token without revealing it.
func (f *TokenFile) key() string {
	return fmt.Sprintf("%016x", fnv64(f.RefreshToken+"\x00"+f.AccessToken))
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// reload reads the token file when it is new or changed.
func (a *Auth) reload() error {
	st, err := stampOf(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		a.file, a.revoked = nil, nil
		return &NotAuthorizedError{Path: a.path}
	}
	if err != nil {
		return fmt.Errorf("google token: %w", err)
	}
	if a.file != nil && st == a.stamp {
		return nil
	}
	s, err := config.ReadSecretFile(a.path)
	if err != nil {
		return fmt.Errorf("google token: %w", err)
	}
	f, err := ParseToken([]byte(s.Reveal()), a.now())
	if err != nil {
		return fmt.Errorf("google token %s: %w", a.path, err)
	}
	if a.file != nil {
		a.log.Info("google token file changed; using it")
	}
	a.file, a.stamp, a.revoked = f, st, nil
	return nil
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// HasToken reports whether a token file exists (for status and doctor).
func HasToken(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
