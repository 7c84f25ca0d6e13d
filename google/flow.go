package google

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/oauth2"
)

// FlowOptions configure the installed-app consent flow.
type FlowOptions struct {
	// Show presents the consent URL to the owner (the CLI prints it). It
	// must not block: the flow waits for the redirect meanwhile.
	Show func(authURL string) error
	// HTTPClient reaches the token endpoint (default: 30 s timeout).
	HTTPClient *http.Client
	Log        *slog.Logger
}

// Authorize runs the installed-app flow: it listens on a random loopback
// port, shows the consent URL (PKCE S256, a random state, offline access),
// waits for Google's redirect with the code, checks the state and
// exchanges the code. ctx bounds the wait.
func Authorize(ctx context.Context, conf oauth2.Config, opts FlowOptions) (*oauth2.Token, error) {
	if opts.Show == nil {
		return nil, errors.New("google auth: FlowOptions.Show is required")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("google auth: listen on loopback: %w", err)
	}
	conf.RedirectURL = fmt.Sprintf("http://%s/oauth2callback", ln.Addr())
	state, err := randomState()
	if err != nil {
		ln.Close()
		return nil, err
	}
	verifier := oauth2.GenerateVerifier()

	type result struct {
		code string
		err  error
	}
	done := make(chan result, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth2callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		// A request without our state is not Google's answer to our request
		// (another page, or an attacker's code): refuse it and keep waiting.
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			opts.Log.Warn("google auth: refused a redirect with a wrong state")
			http.Error(w, "This is not the answer to omnibrain's request (state mismatch).", http.StatusBadRequest)
			return
		}
		var res result
		switch {
		case q.Get("error") != "":
			res.err = fmt.Errorf("google auth: consent refused: %s", q.Get("error"))
		case q.Get("code") == "":
			res.err = errors.New("google auth: the redirect carried no code")
		default:
			res.code = q.Get("code")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if res.err != nil {
			fmt.Fprintf(w, "<p>omnibrain was not authorized: %s</p>", html.EscapeString(res.err.Error()))
		} else {
			fmt.Fprint(w, "<p>omnibrain is authorized. You can close this window.</p>")
		}
		select {
		case done <- res:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutCtx)
	}()

	authURL := conf.AuthCodeURL(state, oauth2.AccessTypeOffline, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("prompt", "consent")) // so Google returns a refresh token again on re-authorization
	if err := opts.Show(authURL); err != nil {
		return nil, fmt.Errorf("google auth: %w", err)
	}
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("google auth: gave up waiting for the browser: %w", ctx.Err())
	}
	if res.err != nil {
		return nil, res.err
	}
	tok, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, opts.HTTPClient), res.code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("google auth: exchange the code: %w", err)
	}
	if tok.RefreshToken == "" {
		opts.Log.Warn("google returned no refresh token; omnibrain will need a new authorization when this access token expires")
	}
	return tok, nil
}

func randomState() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("google auth: state: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
