package fakegoogle

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// oauthState is the token endpoint's memory.
type oauthState struct {
	mu        sync.Mutex
	n         int
	codes     map[string]authCode
	access    map[string]time.Time // access token → expiry
	refresh   map[string]bool      // refresh token → valid
	deny      string               // consent answer: "" approves, else the error
	authReqs  []url.Values
	tokenReqs []url.Values
}

type authCode struct {
	clientID, redirectURI, challenge, scope string
}

func newOAuthState() *oauthState {
	return &oauthState{codes: map[string]authCode{}, access: map[string]time.Time{}, refresh: map[string]bool{}}
}

// SetConsent decides what the consent page answers: "" approves at once;
// anything else (e.g. "access_denied") is returned as the error.
func (s *Server) SetConsent(errorCode string) {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	s.oauth.deny = errorCode
}

// AuthRequests returns the query of every consent-page request.
func (s *Server) AuthRequests() []url.Values {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	return append([]url.Values(nil), s.oauth.authReqs...)
}

// TokenRequests returns the form of every token-endpoint request (secrets
// included: tests only).
func (s *Server) TokenRequests() []url.Values {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	return append([]url.Values(nil), s.oauth.tokenReqs...)
}

// Token is what IssueToken hands out.
type Token struct {
	AccessToken  string
	RefreshToken string
	Expiry       time.Time
}

// IssueToken creates a valid access and refresh token pair without the
// consent flow, as for a token file made elsewhere. ttl is the access
// token's lifetime.
func (s *Server) IssueToken(ttl time.Duration) Token {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	t := Token{
		AccessToken:  fmt.Sprintf("ya29.fake-access-%d", o.n),
		RefreshToken: fmt.Sprintf("1//fake-refresh-%d", o.n),
		Expiry:       s.now().Add(ttl),
	}
	o.access[t.AccessToken] = t.Expiry
	o.refresh[t.RefreshToken] = true
	return t
}

// RevokeRefreshTokens revokes every refresh token issued so far (the owner
// removed access, or a "testing" app's 7 days passed): refreshing answers
// invalid_grant and their access tokens stop working.
func (s *Server) RevokeRefreshTokens() {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.refresh {
		o.refresh[k] = false
	}
	for k := range o.access {
		delete(o.access, k)
	}
}

// ExpireAccessTokens makes every access token issued so far invalid (401).
func (s *Server) ExpireAccessTokens() {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.access {
		delete(o.access, k)
	}
}

func (s *Server) authorized(r *http.Request) bool {
	if !s.opts.RequireAuth {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	exp, ok := o.access[tok]
	return ok && s.now().Before(exp)
}

// handleAuthorize is the consent page: it checks the request as Google
// does and redirects back to the loopback redirect_uri.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := s.oauth
	o.mu.Lock()
	o.authReqs = append(o.authReqs, q)
	deny := o.deny
	o.mu.Unlock()

	bad := func(msg string) { http.Error(w, "fake google consent: "+msg, http.StatusBadRequest) }
	if q.Get("client_id") != s.opts.ClientID {
		bad("invalid_client: unknown client_id")
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" {
		bad("redirect_uri_mismatch: installed apps redirect to http://127.0.0.1:PORT")
		return
	}
	if ip := net.ParseIP(redirect.Hostname()); ip == nil || !ip.IsLoopback() {
		bad("redirect_uri_mismatch: redirect must go to a loopback IP address")
		return
	}
	switch {
	case q.Get("response_type") != "code":
		bad("unsupported_response_type")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		bad("invalid_request: PKCE with code_challenge_method=S256 is required")
		return
	case q.Get("scope") == "":
		bad("invalid_request: missing scope")
		return
	}
	back := redirect.Query()
	if q.Get("state") != "" {
		back.Set("state", q.Get("state"))
	}
	if deny != "" {
		back.Set("error", deny)
	} else {
		o.mu.Lock()
		o.n++
		code := fmt.Sprintf("4/fake-code-%d", o.n)
		o.codes[code] = authCode{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), scope: q.Get("scope")}
		o.mu.Unlock()
		back.Set("code", code)
		back.Set("scope", q.Get("scope"))
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
	TokenType    string `json:"token_type"`
}

func tokenError(w http.ResponseWriter, code int, errCode, desc string) {
	writeJSON(w, code, map[string]string{"error": errCode, "error_description": desc})
}

// handleToken is the token endpoint: authorization_code (with PKCE
// verification) and refresh_token grants.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		tokenError(w, http.StatusMethodNotAllowed, "invalid_request", "POST required")
		return
	}
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	form := r.PostForm
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tokenReqs = append(o.tokenReqs, form)

	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	} else {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if id != s.opts.ClientID || secret != s.opts.ClientSecret {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "The OAuth client was not found.")
		return
	}
	issue := func(withRefresh bool, scope string) tokenResponse {
		o.n++
		resp := tokenResponse{AccessToken: fmt.Sprintf("ya29.fake-access-%d", o.n), ExpiresIn: 3599, TokenType: "Bearer", Scope: scope}
		o.access[resp.AccessToken] = s.now().Add(3599 * time.Second)
		if withRefresh {
			resp.RefreshToken = fmt.Sprintf("1//fake-refresh-%d", o.n)
			o.refresh[resp.RefreshToken] = true
		}
		return resp
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		code, ok := o.codes[form.Get("code")]
		if !ok {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "Malformed auth code.")
			return
		}
		delete(o.codes, form.Get("code")) // a code works once
		if code.redirectURI != form.Get("redirect_uri") {
			tokenError(w, http.StatusBadRequest, "redirect_uri_mismatch", "Bad Request")
			return
		}
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if form.Get("code_verifier") == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "Invalid code verifier.")
			return
		}
		writeJSON(w, http.StatusOK, issue(true, code.scope))
	case "refresh_token":
		if !o.refresh[form.Get("refresh_token")] {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "Token has been expired or revoked.")
			return
		}
		writeJSON(w, http.StatusOK, issue(false, ""))
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+form.Get("grant_type"))
	}
}
