package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/omnibrain/omnibrain/approval"
)

// GitHubComment posts approved comments on issues and pull requests
// (approval.KindGitHubComment). Each comment carries a hidden marker made
// from the idempotency key, so Find can recognise an earlier attempt among
// the issue's comments after a crash or a lost response.
type GitHubComment struct {
	client *gh.Client
	log    *slog.Logger

	mu    sync.Mutex
	login string // the token's user, learnt on first use
}

// Kinds implements Executor.
func (e *GitHubComment) Kinds() []approval.Kind { return []approval.Kind{approval.KindGitHubComment} }

// NewGitHubComment returns the executor; client comes from
// collectors/github.NewClient.
func NewGitHubComment(client *gh.Client, log *slog.Logger) *GitHubComment {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &GitHubComment{client: client, log: log.With("component", "executor.github")}
}

// commentMarker is the hidden line appended to every comment. GitHub
// renders nothing for an HTML comment, so readers see only the body.
func commentMarker(key string) (string, error) {
	if key == "" || strings.IndexFunc(key, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 || strings.Contains(key, "--") {
		return "", fmt.Errorf("github comment: idempotency key %q cannot be put in a marker", key)
	}
	return "<!-- omnibrain:" + key + " -->", nil
}

func githubPayload(p *approval.Proposal) (*approval.GitHubCommentPayload, error) {
	if p.Kind != approval.KindGitHubComment {
		return nil, fmt.Errorf("github comment executor: proposal %s is a %s", p.ID, p.Kind)
	}
	var pl approval.GitHubCommentPayload
	dec := json.NewDecoder(bytes.NewReader(p.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pl); err != nil {
		return nil, fmt.Errorf("github comment: payload of %s: %w", p.ID, err)
	}
	if pl.Owner == "" || pl.Repo == "" || pl.Number <= 0 || strings.TrimSpace(pl.Body) == "" {
		return nil, fmt.Errorf("github comment: payload of %s needs owner, repo, number and body", p.ID)
	}
	return &pl, nil
}

// Execute posts the comment once. When the answer is lost (5xx, network
// error, timeout) it looks for the comment before reporting a failure, so
// a comment that did land is reported as posted, not as failed.
func (e *GitHubComment) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	pl, err := githubPayload(p)
	if err != nil {
		return "", err
	}
	marker, err := commentMarker(key)
	if err != nil {
		return "", err
	}
	body := pl.Body + "\n\n" + marker
	c, resp, err := e.client.Issues.CreateComment(ctx, pl.Owner, pl.Repo, pl.Number, &gh.IssueComment{Body: &body})
	if err == nil {
		return commentID(c), nil
	}
	err = fmt.Errorf("github: create comment on %s/%s#%d: %w", pl.Owner, pl.Repo, pl.Number, err)
	if !ambiguous(resp, err) || ctx.Err() != nil {
		return "", err
	}
	id, found, ferr := e.Find(ctx, p, key)
	switch {
	case ferr != nil:
		return "", fmt.Errorf("%w; looking it up failed too (%v): %w", err, ferr, approval.ErrOutcomeUnknown)
	case found:
		e.log.Info("comment was posted although its answer was lost", "proposal", p.ID, "comment", id)
		return id, nil
	}
	return "", err
}

// ambiguous reports a failure after which the comment may exist.
func ambiguous(resp *gh.Response, err error) bool {
	if resp == nil || resp.Response == nil {
		var urlErr *url.Error
		return errors.As(err, &urlErr)
	}
	return resp.StatusCode >= http.StatusInternalServerError
}

// Find looks for a comment by the token's user carrying the key's marker.
// Only comments updated since shortly before the proposal was created are
// listed: an attempt cannot be older than its proposal.
func (e *GitHubComment) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	pl, err := githubPayload(p)
	if err != nil {
		return "", false, err
	}
	marker, err := commentMarker(key)
	if err != nil {
		return "", false, err
	}
	login, err := e.self(ctx)
	if err != nil {
		return "", false, err
	}
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	if !p.Created.IsZero() {
		since := p.Created.Add(-time.Hour) // room for clock skew
		opts.Since = &since
	}
	for {
		comments, resp, err := e.client.Issues.ListComments(ctx, pl.Owner, pl.Repo, pl.Number, opts)
		if err != nil {
			return "", false, fmt.Errorf("github: list comments of %s/%s#%d: %w", pl.Owner, pl.Repo, pl.Number, err)
		}
		for _, c := range comments {
			if strings.EqualFold(c.GetUser().GetLogin(), login) && strings.Contains(c.GetBody(), marker) {
				return commentID(c), true, nil
			}
		}
		if resp.NextPage == 0 {
			return "", false, nil
		}
		opts.Page = resp.NextPage
	}
}

func (e *GitHubComment) self(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.login != "" {
		return e.login, nil
	}
	u, _, err := e.client.Users.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("github: get authenticated user: %w", err)
	}
	if u.GetLogin() == "" {
		return "", errors.New("github: GET /user returned no login")
	}
	e.login = u.GetLogin()
	return e.login, nil
}

// commentID is the comment's web address, what the owner can open; its
// numeric id when GitHub sent none.
func commentID(c *gh.IssueComment) string {
	if u := c.GetHTMLURL(); u != "" {
		return u
	}
	return strconv.FormatInt(c.GetID(), 10)
}
