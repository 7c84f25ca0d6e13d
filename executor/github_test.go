package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	ghcollect "github.com/omnibrain/omnibrain/collectors/github"
	"github.com/omnibrain/omnibrain/executor"
	fake "github.com/omnibrain/omnibrain/internal/fakes/github"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

func newGitHubExecutor(t *testing.T, srv *fake.Server) *executor.GitHubComment {
	t.Helper()
	client, err := ghcollect.NewClient(srv.URL(), "tok", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return executor.NewGitHubComment(client, nil)
}

func commentProposal(t *testing.T, number int, body string) *approval.Proposal {
	t.Helper()
	payload, err := json.Marshal(approval.GitHubCommentPayload{Owner: "acme", Repo: "api", Number: number, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return &approval.Proposal{ID: "p1", Kind: approval.KindGitHubComment, Payload: payload, Created: time.Now()}
}

func TestGitHubCommentExecuteAndFind(t *testing.T) {
	srv := fake.New(fake.Options{Login: "owner", Token: "tok"})
	defer srv.Close()
	n := srv.AddIssue(fake.Issue{Repo: "acme/api", Title: "Bug", Author: "alice"})
	ctx := context.Background()
	p := commentProposal(t, n, "Fixed in #12, thanks!")
	ex := newGitHubExecutor(t, srv)

	if _, found, err := ex.Find(ctx, p, "k1"); err != nil || found {
		t.Fatalf("Find before Execute = %v, %v", found, err)
	}
	id, err := ex.Execute(ctx, p, "k1")
	if err != nil {
		t.Fatal(err)
	}
	created := srv.Created()
	if len(created) != 1 || created[0].Body != "Fixed in #12, thanks!\n\n<!-- omnibrain:k1 -->" {
		t.Fatalf("created = %+v", created)
	}
	if !strings.Contains(id, "/acme/api/issues/1#issuecomment-") {
		t.Errorf("remote id = %q, want the comment's web address", id)
	}

	// Someone quoting the marker is not our attempt; neither is another key.
	srv.AddComment(fake.Comment{Repo: "acme/api", Number: n, Author: "mallory", Body: "<!-- omnibrain:k2 -->"})
	restarted := newGitHubExecutor(t, srv)
	for _, tt := range []struct {
		key   string
		found bool
	}{{"k1", true}, {"k2", false}, {"k3", false}} {
		got, found, err := restarted.Find(ctx, p, tt.key)
		if err != nil || found != tt.found {
			t.Errorf("Find(%s) = %v, %v; want found %v", tt.key, found, err, tt.found)
		}
		if found && got != id {
			t.Errorf("Find(%s) = %q, want %q", tt.key, got, id)
		}
	}
}

func TestGitHubCommentFindPaginates(t *testing.T) {
	srv := fake.New(fake.Options{Login: "owner"})
	defer srv.Close()
	n := srv.AddIssue(fake.Issue{Repo: "acme/api", Title: "Busy thread", Author: "alice"})
	for range 250 {
		srv.AddComment(fake.Comment{Repo: "acme/api", Number: n, Author: "owner", Body: "chatter"})
	}
	ctx := context.Background()
	p := commentProposal(t, n, "late reply")
	ex := newGitHubExecutor(t, srv)
	// Comment 251 is on the third page of 100.
	if _, err := ex.Execute(ctx, p, "deep"); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ex.Find(ctx, p, "deep"); err != nil || !found {
		t.Errorf("Find on page 3 = %v, %v", found, err)
	}
}

func TestGitHubCommentRejectsBadInput(t *testing.T) {
	srv := fake.New(fake.Options{})
	defer srv.Close()
	ex := newGitHubExecutor(t, srv)
	ctx := context.Background()
	good := commentProposal(t, 1, "hi")
	tests := map[string]struct {
		p   *approval.Proposal
		key string
	}{
		"wrong kind":                   {&approval.Proposal{Kind: approval.KindEmail, Payload: good.Payload}, "k"},
		"unknown field":                {&approval.Proposal{Kind: approval.KindGitHubComment, Payload: json.RawMessage(`{"owner":"a","repo":"b","number":1,"body":"x","cc":"y"}`)}, "k"},
		"no number":                    {&approval.Proposal{Kind: approval.KindGitHubComment, Payload: json.RawMessage(`{"owner":"a","repo":"b","body":"x"}`)}, "k"},
		"key breaks out of the marker": {good, "k --><script>"},
		"empty key":                    {good, ""},
	}
	for name, tt := range tests {
		if _, err := ex.Execute(ctx, tt.p, tt.key); err == nil {
			t.Errorf("%s: Execute accepted", name)
		}
	}
	if len(srv.Created()) != 0 {
		t.Errorf("bad input posted %d comments", len(srv.Created()))
	}
}

// gateEnv runs the real approval gate over a store with the GitHub executor.
type gateEnv struct {
	st  *store.Store
	srv *fake.Server
	num int
}

func newGateEnv(t *testing.T) *gateEnv {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := fake.New(fake.Options{Login: "owner", Token: "tok"})
	t.Cleanup(srv.Close)
	n := srv.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Add retries", Author: "alice", Reviewers: []string{"owner"}})
	return &gateEnv{st: st, srv: srv, num: n}
}

func (e *gateEnv) gate(t *testing.T, ex executor.Executor) *approval.Gate {
	t.Helper()
	reg := executor.NewRegistry()
	if err := reg.Register(ex); err != nil {
		t.Fatal(err)
	}
	g, err := approval.NewGate(approval.GateOptions{Store: e.st, Executors: reg, OutboxInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func (e *gateEnv) approved(t *testing.T, g *approval.Gate) *approval.Proposal {
	t.Helper()
	ctx := context.Background()
	p, err := g.Propose(ctx, approval.Draft{Kind: approval.KindGitHubComment, Title: "Comment on acme/api#1", Origin: "agent",
		Payload: approval.GitHubCommentPayload{Owner: "acme", Repo: "api", Number: e.num, Body: "LGTM once CI is green."}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = g.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *gateEnv) state(t *testing.T, g *approval.Gate, id string) *approval.Proposal {
	t.Helper()
	p, err := g.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGitHubCommentThroughGate(t *testing.T) {
	e := newGateEnv(t)
	g := e.gate(t, newGitHubExecutor(t, e.srv))
	p := e.approved(t, g)
	if err := g.ExecuteApproved(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.state(t, g, p.ID)
	if got.State != approval.StateExecuted || !strings.Contains(got.RemoteID, "#issuecomment-") {
		t.Fatalf("state %s remote %q error %q", got.State, got.RemoteID, got.Error)
	}
	created := e.srv.Created()
	if len(created) != 1 || !strings.HasPrefix(created[0].Body, "LGTM once CI is green.\n\n<!-- omnibrain:"+got.IdempotencyKey+" -->") {
		t.Errorf("created = %+v", created)
	}
	// A second pass has nothing to do.
	g.ExecuteApproved(context.Background())
	if n := len(e.srv.Created()); n != 1 {
		t.Errorf("%d comments after a second pass", n)
	}
}

// crashAfterPost posts through the real executor, then dies before the
// gate can record the outcome: the process is killed between the POST and
// the store write.
type crashAfterPost struct {
	inner *executor.GitHubComment
	kill  context.CancelFunc
}

func (c crashAfterPost) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	if _, err := c.inner.Execute(context.WithoutCancel(ctx), p, key); err != nil {
		return "", err
	}
	c.kill()
	<-ctx.Done()
	return "", ctx.Err()
}

func (c crashAfterPost) Kinds() []approval.Kind { return c.inner.Kinds() }

func (c crashAfterPost) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	return c.inner.Find(ctx, p, key)
}

func TestGitHubCommentCrashWhileExecutingPostsOnce(t *testing.T) {
	e := newGateEnv(t)
	ctx, kill := context.WithCancel(context.Background())
	g := e.gate(t, crashAfterPost{inner: newGitHubExecutor(t, e.srv), kill: kill})
	p := e.approved(t, g)
	g.ExecuteApproved(ctx)
	if got := e.state(t, g, p.ID); got.State != approval.StateExecuting {
		t.Fatalf("after the crash the proposal is %s, want executing", got.State)
	}
	if n := len(e.srv.Created()); n != 1 {
		t.Fatalf("%d comments before the restart, want 1", n)
	}

	// Restart: a new gate and executor over the same store and GitHub.
	g2 := e.gate(t, newGitHubExecutor(t, e.srv))
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g2.RunOutbox(rctx) }()
	testutil.WaitPass(t, "outbox", g2.WaitPass) // the restarted outbox's pass resolves it
	stop()
	<-done
	got := e.state(t, g2, p.ID)
	if got.State != approval.StateExecuted || !strings.Contains(got.RemoteID, "#issuecomment-") {
		t.Errorf("after the restart: state %s remote %q error %q", got.State, got.RemoteID, got.Error)
	}
	if n := len(e.srv.Created()); n != 1 {
		t.Errorf("%d comments after the restart, want exactly 1", n)
	}
}

func TestGitHubCommentLostResponseIsFoundNotFailed(t *testing.T) {
	e := newGateEnv(t)
	g := e.gate(t, newGitHubExecutor(t, e.srv))
	p := e.approved(t, g)
	e.srv.Inject(fake.Fault{Method: http.MethodPost, Status: http.StatusBadGateway, AfterEffect: true, Times: 1})
	g.ExecuteApproved(context.Background())
	got := e.state(t, g, p.ID)
	if got.State != approval.StateExecuted || got.RemoteID == "" {
		t.Errorf("state %s remote %q error %q; want executed with the comment found", got.State, got.RemoteID, got.Error)
	}
	if n := len(e.srv.Created()); n != 1 {
		t.Errorf("%d comments, want 1", n)
	}
}

func TestGitHubCommentServerErrorFailsWithoutRetry(t *testing.T) {
	e := newGateEnv(t)
	g := e.gate(t, newGitHubExecutor(t, e.srv))
	p := e.approved(t, g)
	e.srv.Inject(fake.Fault{Method: http.MethodPost, Status: http.StatusInternalServerError})
	g.ExecuteApproved(context.Background())
	g.ExecuteApproved(context.Background())
	got := e.state(t, g, p.ID)
	if got.State != approval.StateFailed || !strings.Contains(got.Error, "500") {
		t.Errorf("state %s error %q; want failed with the 500", got.State, got.Error)
	}
	posts := 0
	for _, r := range e.srv.Requests() {
		if r.Method == http.MethodPost {
			posts++
		}
	}
	if posts != 1 || len(e.srv.Created()) != 0 {
		t.Errorf("%d POSTs, %d comments; want one attempt and none created", posts, len(e.srv.Created()))
	}
}

// The answer to the post was lost and looking for the comment failed too:
// the outcome is unknown (the gate keeps it executing), never a failure
// the owner would retry by hand, and a later lookup finds the one comment.
func TestGitHubCommentLostResponseAndFailedLookupIsUnknown(t *testing.T) {
	srv := fake.New(fake.Options{Login: "owner", Token: "tok"})
	defer srv.Close()
	n := srv.AddIssue(fake.Issue{Repo: "acme/api", Title: "Bug", Author: "alice"})
	ex := newGitHubExecutor(t, srv)
	p := commentProposal(t, n, "Fixed.")
	key := approval.IdempotencyKey(p.ID, "hash")
	srv.Inject(fake.Fault{Method: http.MethodPost, Status: http.StatusBadGateway, AfterEffect: true, Times: 1})
	srv.Inject(fake.Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable, Times: 1})
	_, err := ex.Execute(context.Background(), p, key)
	if !errors.Is(err, approval.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("Execute = %v, want an unknown outcome naming the 502", err)
	}
	if id, found, err := ex.Find(context.Background(), p, key); err != nil || !found || id == "" {
		t.Errorf("Find afterwards = %q %v %v", id, found, err)
	}
	if n := len(srv.Created()); n != 1 {
		t.Errorf("%d comments, want 1", n)
	}
}
