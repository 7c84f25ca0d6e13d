package github

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"
	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRoutesExistInOpenAPI checks every route the fake serves (and so every
// path omnibrain may call: the fake answers anything else with 404 and the
// callers' tests fail on it) against go-github v62's list of GitHub's REST
// operations.
func TestRoutesExistInOpenAPI(t *testing.T) {
	path := testutil.SharedData(t, "protocol/github-openapi_operations.go-github-v62.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Operations        []struct{ Name string } `yaml:"operations"`
		OpenAPIOperations []struct{ Name string } `yaml:"openapi_operations"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, op := range append(doc.Operations, doc.OpenAPIOperations...) {
		known[op.Name] = true
	}
	if len(known) < 1000 {
		t.Fatalf("only %d operations in %s: wrong file?", len(known), path)
	}
	for _, r := range Routes {
		if !known[r] {
			t.Errorf("route %q is not a GitHub REST operation", r)
		}
		if _, ok := routeParams[r]; !ok {
			t.Errorf("route %q has no parameter list", r)
		}
	}
	if len(routeParams) != len(Routes) {
		t.Errorf("routeParams has %d routes, Routes %d", len(routeParams), len(Routes))
	}
}

func newClient(t *testing.T, s *Server) *gh.Client {
	t.Helper()
	c := gh.NewClient(s.Client()).WithAuthToken("tok")
	u, err := url.Parse(s.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func TestUserScopesAndAuth(t *testing.T) {
	s := New(Options{Login: "mona", Token: "tok", Scopes: []string{"repo", "notifications"}})
	defer s.Close()
	u, resp, err := newClient(t, s).Users.Get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if u.GetLogin() != "mona" || resp.Header.Get("X-OAuth-Scopes") != "repo, notifications" {
		t.Errorf("login %q scopes %q", u.GetLogin(), resp.Header.Get("X-OAuth-Scopes"))
	}
	if resp.Rate.Limit != 5000 || resp.Rate.Remaining != 4999 {
		t.Errorf("rate = %+v", resp.Rate)
	}
	bad := gh.NewClient(s.Client()).WithAuthToken("wrong")
	bad.BaseURL = newClient(t, s).BaseURL
	if _, resp, err := bad.Users.Get(context.Background(), ""); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %v", err)
	}
}

func TestNotificationsPaginationAndConditional(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s := New(Options{Now: func() time.Time { return now }, PollInterval: 90 * time.Second})
	defer s.Close()
	for i := range 5 {
		s.AddNotification(Notification{Repo: "o/r", Number: i + 1, Title: "t", Reason: "mention", Updated: now.Add(time.Duration(i) * time.Second)})
	}
	c := newClient(t, s)
	ctx := context.Background()
	var all []*gh.Notification
	opts := &gh.NotificationListOptions{ListOptions: gh.ListOptions{PerPage: 2}}
	var first *gh.Response
	for {
		ns, resp, err := c.Activity.ListNotifications(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = resp
		}
		all = append(all, ns...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if len(all) != 5 || all[0].GetSubject().GetURL() != s.APIURL()+"repos/o/r/issues/5" {
		t.Fatalf("got %d notifications, first %v", len(all), all[0].GetSubject().GetURL())
	}
	if first.Header.Get("X-Poll-Interval") != "90" || first.LastPage != 3 {
		t.Errorf("X-Poll-Interval %q, last page %d", first.Header.Get("X-Poll-Interval"), first.LastPage)
	}
	req, _ := c.NewRequest("GET", "notifications", nil)
	req.Header.Set("If-Modified-Since", first.Header.Get("Last-Modified"))
	before := s.Remaining("core")
	resp, err := c.Do(ctx, req, nil)
	if resp == nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional request: %v %v", resp, err)
	}
	if s.Remaining("core") != before {
		t.Error("a 304 used rate-limit quota")
	}
	s.MarkRead(all[0].GetID())
	now = now.Add(time.Minute)
	s.AddNotification(Notification{Repo: "o/r", Number: 9, Title: "new", Reason: "assign"})
	req, _ = c.NewRequest("GET", "notifications", nil)
	req.Header.Set("If-Modified-Since", first.Header.Get("Last-Modified"))
	var ns []*gh.Notification
	if _, err := c.Do(ctx, req, &ns); err != nil {
		t.Fatal(err)
	}
	if len(ns) != 5 || ns[0].GetSubject().GetTitle() != "new" {
		t.Errorf("after a change: %d notifications (read one hidden), first %q", len(ns), ns[0].GetSubject().GetTitle())
	}
}

func TestRateLimitAndFaults(t *testing.T) {
	now := time.Now()
	s := New(Options{Now: func() time.Time { return now }})
	defer s.Close()
	c := newClient(t, s)
	ctx := context.Background()

	s.SetRate("core", 0, now.Add(time.Hour))
	_, _, err := c.Users.Get(ctx, "")
	var rle *gh.RateLimitError
	if !errors.As(err, &rle) || rle.Rate.Remaining != 0 || rle.Rate.Reset.Unix() != now.Add(time.Hour).Unix() {
		t.Fatalf("exhausted core: %v", err)
	}
	// Search has its own budget.
	if _, _, err := c.Search.Issues(ctx, "is:open", nil); err != nil {
		t.Errorf("search with core exhausted: %v", err)
	}

	s2 := New(Options{})
	defer s2.Close()
	c2 := newClient(t, s2)
	s2.Inject(Fault{Path: "/user", Status: http.StatusForbidden, Secondary: true, RetryAfter: "30", Times: 1})
	_, _, err = c2.Users.Get(ctx, "")
	var abuse *gh.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.RetryAfter == nil || *abuse.RetryAfter != 30*time.Second {
		t.Fatalf("secondary limit: %v", err)
	}
	s3 := New(Options{})
	defer s3.Close()
	c3 := newClient(t, s3)
	s3.Inject(Fault{Method: "GET", Path: "/search/", Status: 500, Times: 1})
	if _, resp, err := c3.Search.Issues(ctx, "is:open", nil); err == nil || resp.StatusCode != 500 {
		t.Errorf("fault: %v", err)
	}
	if _, _, err := c3.Search.Issues(ctx, "is:open", nil); err != nil {
		t.Errorf("fault used once, still failing: %v", err)
	}
	s3.Inject(Fault{Path: "/user", Delay: time.Second})
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := c3.Users.Get(tctx, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow fault: %v", err)
	}
}

func TestSearchAndPullChecks(t *testing.T) {
	s := New(Options{Login: "me"})
	defer s.Close()
	c := newClient(t, s)
	ctx := context.Background()
	n := s.AddIssue(Issue{Repo: "o/r", PR: true, Title: "Fix", Author: "x", Reviewers: []string{"me"}, HeadSHA: "abc"})
	s.AddIssue(Issue{Repo: "o/r", Title: "Bug", Author: "y", Assignees: []string{"me"}})
	res, _, err := c.Search.Issues(ctx, "is:open is:pr review-requested:@me", &gh.SearchOptions{Sort: "updated"})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetTotal() != 1 || !res.Issues[0].IsPullRequest() || res.Issues[0].GetNumber() != n {
		t.Fatalf("search = %+v", res)
	}
	if _, _, err := c.Search.Issues(ctx, "is:open language:go", nil); err == nil {
		t.Error("an unsupported qualifier was ignored")
	}
	pr, _, err := c.PullRequests.Get(ctx, "o", "r", n)
	if err != nil || pr.GetHead().GetSHA() != "abc" {
		t.Fatalf("pull: %v %v", pr, err)
	}
	s.SetStatuses("abc", Status{Context: "ci", State: "failure"})
	s.SetCheckRuns("abc", CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	st, _, err := c.Repositories.GetCombinedStatus(ctx, "o", "r", "abc", nil)
	if err != nil || st.GetState() != "failure" || st.GetTotalCount() != 1 {
		t.Errorf("status: %+v %v", st, err)
	}
	runs, _, err := c.Checks.ListCheckRunsForRef(ctx, "o", "r", "abc", nil)
	if err != nil || runs.GetTotal() != 1 || runs.CheckRuns[0].GetConclusion() != "success" {
		t.Errorf("check runs: %+v %v", runs, err)
	}
	if _, _, err := c.Repositories.GetCombinedStatus(ctx, "o", "r", "nope", nil); err == nil {
		t.Error("status of an unknown commit answered")
	}
}

func TestCommentsCreateListAndLostResponse(t *testing.T) {
	s := New(Options{Login: "me"})
	defer s.Close()
	c := newClient(t, s)
	ctx := context.Background()
	n := s.AddIssue(Issue{Repo: "o/r", Title: "Bug", Author: "y"})
	s.AddComment(Comment{Repo: "o/r", Number: n, Author: "y", Body: "first"})
	got, resp, err := c.Issues.CreateComment(ctx, "o", "r", n, &gh.IssueComment{Body: gh.String("hello")})
	if err != nil || resp.StatusCode != http.StatusCreated || got.GetUser().GetLogin() != "me" {
		t.Fatalf("create: %v %v", got, err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, "o", "r", 999, &gh.IssueComment{Body: gh.String("x")}); err == nil {
		t.Error("comment on a missing issue accepted")
	}
	if _, _, err := c.Issues.CreateComment(ctx, "o", "r", n, &gh.IssueComment{}); err == nil {
		t.Error("empty comment accepted")
	}
	s.Inject(Fault{Method: "POST", Status: http.StatusBadGateway, AfterEffect: true, Times: 1})
	if _, _, err := c.Issues.CreateComment(ctx, "o", "r", n, &gh.IssueComment{Body: gh.String("lost")}); err == nil {
		t.Error("lost response reported success")
	}
	list, _, err := c.Issues.ListComments(ctx, "o", "r", n, &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 2}})
	if err != nil || len(list) != 2 {
		t.Fatalf("list page 1: %d %v", len(list), err)
	}
	created := s.Created()
	if len(created) != 2 || created[0].Body != "hello" || created[1].Body != "lost" {
		t.Errorf("created = %+v", created)
	}
	if !strings.Contains(list[1].GetHTMLURL(), "#issuecomment-") {
		t.Errorf("html_url = %q", list[1].GetHTMLURL())
	}
}

func TestUnknownParameterRejected(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := newClient(t, s)
	req, _ := c.NewRequest("GET", "notifications?foo=1", nil)
	resp, err := c.Do(context.Background(), req, nil)
	if err == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("unknown parameter: %v", err)
	}
}
