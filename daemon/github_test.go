package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	fakegithub "github.com/omnibrain/omnibrain/internal/fakes/github"
)

type githubEnv struct {
	app  *App
	srv  *fakegithub.Server
	home string
}

func newGitHubEnv(t *testing.T, vars map[string]string, tokenFile string) *githubEnv {
	t.Helper()
	srv := fakegithub.New(fakegithub.Options{Login: "owner", Token: "ghp_right"})
	t.Cleanup(srv.Close)
	srv.AddNotification(fakegithub.Notification{Repo: "acme/api", Type: "PullRequest", Number: 7, Title: "Review me", Reason: "review_requested"})
	srv.AddIssue(fakegithub.Issue{Repo: "acme/api", PR: true, Title: "Review me", Author: "alice", Reviewers: []string{"owner"}})
	home := t.TempDir()
	if tokenFile != "" {
		if err := config.WriteSecretFile(home+"/"+config.GitHubTokenFile, []byte(tokenFile+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"OMNIBRAIN_GITHUB_API_URL": srv.URL(), "OMNIBRAIN_SEND_DELAY": "0s"}
	for k, v := range vars {
		env[k] = v
	}
	cfg, err := config.Load(home, func(k string) string { return env[k] }, config.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	app, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return &githubEnv{app: app, srv: srv, home: home}
}

func (e *githubEnv) collect(t *testing.T) (state, fix, errText string, stored int) {
	t.Helper()
	res, err := e.app.collectors().CollectNow(context.Background(), []string{"github"})
	if err != nil || len(res) != 1 {
		t.Fatalf("collect github: %v %v", res, err)
	}
	return res[0].State, res[0].Fix, res[0].Error, res[0].Stored
}

func (e *githubEnv) authHeaders() []string {
	var out []string
	for _, r := range e.srv.Requests() {
		out = append(out, r.Header.Get("Authorization"))
	}
	return out
}

func TestGitHubWithoutTokenIsDisabledUntilAuthSavesOne(t *testing.T) {
	e := newGitHubEnv(t, nil, "")
	h, _ := e.app.Health().Get("github")
	if h.State != health.Disabled || !strings.Contains(h.Detail, "omnibrain auth github") {
		t.Fatalf("health = %s %q, want disabled with the fix", h.State, h.Detail)
	}
	state, fix, _, _ := e.collect(t)
	if state != string(health.Disabled) || fix != githubFix {
		t.Errorf("collect without a token: state %q fix %q", state, fix)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d requests sent without a token", n)
	}

	// What `omnibrain auth github` does while the daemon runs.
	if err := config.WriteSecretFile(e.home+"/"+config.GitHubTokenFile, []byte("ghp_right\n")); err != nil {
		t.Fatal(err)
	}
	state, _, errText, stored := e.collect(t)
	if state != string(health.OK) || stored != 2 {
		t.Fatalf("collect after auth: state %q stored %d error %q; want ok and 2 items", state, stored, errText)
	}
	for _, a := range e.authHeaders() {
		if a != "Bearer ghp_right" {
			t.Errorf("Authorization %q", a)
		}
	}
	if _, err := e.app.Store().ItemByExternalID(context.Background(), "github", "pr:acme/api#1"); err != nil {
		t.Error(err)
	}
}

func TestGitHubRejectedTokenNeedsTheOwner(t *testing.T) {
	e := newGitHubEnv(t, map[string]string{"OMNIBRAIN_GITHUB_TOKEN": "ghp_revoked"}, "")
	state, fix, errText, _ := e.collect(t)
	if state != "failed" || !strings.Contains(fix, "omnibrain auth github") || !strings.Contains(errText, "rejected the token") {
		t.Errorf("state %q fix %q error %q", state, fix, errText)
	}
	if h, _ := e.app.Health().Get("github"); h.State != health.Down {
		t.Errorf("health %s, want down", h.State)
	}
	if strings.Contains(errText+fix, "ghp_revoked") {
		t.Error("the token leaked into the error")
	}
}

func TestGitHubRejectedTokenToldOncePerToken(t *testing.T) {
	e := newGitHubEnv(t, nil, "ghp_revoked")
	notes := func() []string {
		t.Helper()
		ns, err := e.app.Store().Notifications(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range ns {
			if strings.Contains(n.Text, "omnibrain auth github") {
				out = append(out, n.Text)
			}
		}
		return out
	}
	for range 3 {
		if state, _, _, _ := e.collect(t); state != "failed" {
			t.Fatalf("state %q, want failed", state)
		}
	}
	if n := notes(); len(n) != 1 || strings.Contains(n[0], "ghp_revoked") {
		t.Fatalf("notifications = %q, want one naming the fix and not the token", n)
	}
	// The owner saves another token, which GitHub rejects too: told again.
	if err := config.WriteSecretFile(e.home+"/"+config.GitHubTokenFile, []byte("ghp_also_wrong\n")); err != nil {
		t.Fatal(err)
	}
	e.collect(t)
	e.collect(t)
	if n := notes(); len(n) != 2 {
		t.Errorf("%d notifications after a second rejected token, want 2", len(n))
	}
}

func TestGitHubEnvironmentTokenWinsOverFile(t *testing.T) {
	e := newGitHubEnv(t, map[string]string{"OMNIBRAIN_GITHUB_TOKEN": "ghp_right"}, "ghp_stale")
	if state, _, errText, _ := e.collect(t); state != string(health.OK) {
		t.Fatalf("state %q error %q", state, errText)
	}
	for _, a := range e.authHeaders() {
		if a != "Bearer ghp_right" {
			t.Errorf("Authorization %q, want the environment's token", a)
		}
	}
}

func TestGitHubCommentExecutedThroughTheDaemonsGate(t *testing.T) {
	e := newGitHubEnv(t, map[string]string{"OMNIBRAIN_GITHUB_TOKEN": "ghp_right"}, "")
	ctx := context.Background()
	g := e.app.Gate()
	p, err := g.Propose(ctx, approval.Draft{Kind: approval.KindGitHubComment, Title: "Comment on acme/api#1", Origin: "agent",
		Payload: approval.GitHubCommentPayload{Owner: "acme", Repo: "api", Number: 1, Body: "Looks good to me."}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	if err := g.ExecuteApproved(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := g.Get(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	created := e.srv.Created()
	if got.State != approval.StateExecuted || len(created) != 1 || !strings.HasPrefix(created[0].Body, "Looks good to me.\n\n<!-- omnibrain:") {
		t.Errorf("state %s error %q; created %+v", got.State, got.Error, created)
	}
}
