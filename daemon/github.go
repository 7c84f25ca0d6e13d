package daemon

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	ghcollect "github.com/omnibrain/omnibrain/collectors/github"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/executor"
	"github.com/omnibrain/omnibrain/health"
)

// githubFix is what the owner runs when there is no usable GitHub token.
const githubFix = "run: omnibrain auth github (or set OMNIBRAIN_GITHUB_TOKEN)"

var errNoGitHubToken = errors.New("no GitHub token")

// openGitHub registers the GitHub collector. It is polled even without a
// token: it reports Disabled with the fix, and a token saved later by
// `omnibrain auth github` is used from the next request, without a restart.
func (a *App) openGitHub(ctx context.Context) error {
	tok := newGitHubToken(a.cfg)
	// No http.Client.Timeout: the collector bounds each request with its
	// context, and the gate bounds each execution.
	hc := &http.Client{Transport: tok}
	client, err := ghcollect.NewClient(a.cfg.GitHub.APIURL, "", hc)
	if err != nil {
		return err
	}
	col, err := ghcollect.New(ghcollect.Options{Client: client, Store: a.store, Log: a.log, Health: a.health})
	if err != nil {
		return err
	}
	err = a.registerCollector(Collector{Name: ghcollect.Name, Interval: a.cfg.Schedule.GitHub, Collect: func(ctx context.Context) (CollectOutcome, error) {
		s, err := tok.get()
		if err == nil && !s.IsSet() {
			err = errNoGitHubToken
		}
		if err != nil {
			return CollectOutcome{}, githubError(err, s)
		}
		r, err := col.Collect(ctx)
		return CollectOutcome{Seen: r.Seen, Stored: r.Stored, Skipped: r.Skipped}, githubError(err, s)
	}})
	if err != nil {
		return err
	}
	if s, err := tok.get(); err != nil || !s.IsSet() {
		a.health.Set(ghcollect.Name, health.Disabled, githubFix)
	}
	// Registered even without a token: an approved comment then fails with
	// "no GitHub token" instead of "nothing can execute it".
	return a.registerExecutor(executor.NewGitHubComment(client, a.log))
}

// githubError adapts collector errors to the scheduler: no token is "not
// configured", a rejected token needs the owner (told once per token), and
// a RetryLaterError keeps its RetryAfter through the wrapping.
func githubError(err error, tok config.Secret) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errNoGitHubToken) {
		return &notConfiguredError{err: err, fix: githubFix}
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusUnauthorized {
		h := fnv.New64a()
		h.Write([]byte(tok.Reveal()))
		return &githubAuthError{err: err, key: fmt.Sprintf("github-token:%016x", h.Sum64())}
	}
	return err
}

// githubAuthError is a token GitHub rejects: revoked, expired or mistyped.
type githubAuthError struct {
	err error
	key string // names the rejected token without revealing it
}

func (e *githubAuthError) Error() string { return "GitHub rejected the token: " + e.err.Error() }
func (e *githubAuthError) Unwrap() error { return e.err }
func (e *githubAuthError) OwnerAction() string {
	return "run: omnibrain auth github (the token was revoked, has expired, or lacks access)"
}
func (e *githubAuthError) NotifyKey() string { return e.key }

// githubToken authenticates every GitHub request. A token from the
// environment or config.yaml is used as is; a token file (the default
// HOME/github-token, or github.token_file) is re-read when it changes.
type githubToken struct {
	static config.Secret
	path   string
	base   http.RoundTripper

	mu         sync.Mutex
	mod        time.Time
	size       int64
	cached     config.Secret
	cachedFrom bool
}

func newGitHubToken(cfg *config.Config) *githubToken {
	t := &githubToken{base: http.DefaultTransport, path: cfg.Path(config.GitHubTokenFile)}
	file := cfg.GitHub.TokenFile
	if file != "" && !filepath.IsAbs(file) {
		file = cfg.Path(file)
	}
	switch {
	case file == "" && cfg.GitHub.Token.IsSet():
		t.static = cfg.GitHub.Token
	case file != "":
		t.path = file
		// config reads token_file only when no token was given otherwise.
		if s, err := config.ReadSecretFile(file); cfg.GitHub.Token.IsSet() && (err != nil || s != cfg.GitHub.Token) {
			t.static = cfg.GitHub.Token
		}
	}
	return t
}

// get returns the current token, "" when there is none yet.
func (t *githubToken) get() (config.Secret, error) {
	if t.static.IsSet() {
		return t.static, nil
	}
	fi, err := os.Stat(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("github token: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cachedFrom && fi.ModTime().Equal(t.mod) && fi.Size() == t.size {
		return t.cached, nil
	}
	s, err := config.ReadSecretFile(t.path)
	if err != nil {
		return "", fmt.Errorf("github token: %w", err)
	}
	t.cached, t.mod, t.size, t.cachedFrom = s, fi.ModTime(), fi.Size(), true
	return s, nil
}

// RoundTrip sends req with the current token.
func (t *githubToken) RoundTrip(req *http.Request) (*http.Response, error) {
	s, err := t.get()
	if err == nil && !s.IsSet() {
		err = errNoGitHubToken
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+s.Reveal())
	return t.base.RoundTrip(req)
}
