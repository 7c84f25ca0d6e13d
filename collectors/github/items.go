package github

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/omnibrain/omnibrain/store"
)

// notificationItem maps a notification thread to an item: external id
// notification:<id>, thread owner/repo#N when the subject is an issue or a
// pull request.
func notificationItem(n *gh.Notification) (*store.Item, error) {
	id := n.GetID()
	repo := n.GetRepository().GetFullName()
	updated := n.GetUpdatedAt().Time
	switch {
	case id == "":
		return nil, errors.New("notification without id")
	case !validRepo(repo):
		return nil, fmt.Errorf("notification %s: bad repository %q", id, repo)
	case updated.IsZero():
		return nil, fmt.Errorf("notification %s: no updated_at", id)
	}
	subject := n.GetSubject()
	kind, number := subjectRef(subject.GetURL())
	link := n.GetRepository().GetHTMLURL()
	thread := repo
	if number > 0 {
		thread = fmt.Sprintf("%s#%d", repo, number)
		if link != "" {
			link = fmt.Sprintf("%s/%s/%d", link, map[string]string{"pulls": "pull", "issues": "issues"}[kind], number)
		}
	}
	meta := map[string]any{
		"repo":    repo,
		"reason":  n.GetReason(),
		"unread":  n.GetUnread(),
		"updated": updated.UTC().Format(time.RFC3339),
		"type":    subject.GetType(),
	}
	if number > 0 {
		meta["number"] = number
	}
	if link != "" {
		meta["url"] = link
	}
	reason := strings.ReplaceAll(n.GetReason(), "_", " ")
	return &store.Item{
		Source:     Source,
		ExternalID: "notification:" + id,
		Kind:       "notification",
		Thread:     thread,
		Time:       updated,
		Title:      subject.GetTitle(),
		Body:       fmt.Sprintf("GitHub notification (%s): %s %s: %s", reason, subject.GetType(), thread, subject.GetTitle()),
		Meta:       meta,
	}, nil
}

// subjectRef extracts "pulls"/"issues" and the number from a subject API
// URL such as https://api.github.com/repos/o/r/pulls/12.
func subjectRef(u string) (string, int) {
	parts := strings.Split(strings.TrimSuffix(u, "/"), "/")
	if len(parts) < 2 {
		return "", 0
	}
	kind := parts[len(parts)-2]
	n, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil || n <= 0 || (kind != "pulls" && kind != "issues") {
		return "", 0
	}
	return kind, n
}

func validRepo(full string) bool {
	owner, name, ok := strings.Cut(full, "/")
	return ok && owner != "" && name != "" && !strings.Contains(name, "/")
}

var errNoRepo = errors.New("issue without a repository")

// repoOf is an issue's owner/repo, from its repository_url
// (…/repos/owner/repo).
func repoOf(is *gh.Issue) (string, error) {
	if r := is.GetRepository().GetFullName(); validRepo(r) {
		return r, nil
	}
	u := is.GetRepositoryURL()
	i := strings.LastIndex(u, "/repos/")
	if i < 0 || !validRepo(u[i+len("/repos/"):]) {
		return "", fmt.Errorf("%w (repository_url %q)", errNoRepo, u)
	}
	return u[i+len("/repos/"):], nil
}

func issueKey(is *gh.Issue) string {
	repo, _ := repoOf(is)
	kind := "issue"
	if is.IsPullRequest() {
		kind = "pr"
	}
	return fmt.Sprintf("%s:%s#%d", kind, repo, is.GetNumber())
}

// reasonRank orders the reasons an item is shown for: the first is the
// item's reason.
var reasonRank = []string{"review_requested", "assign", "mention", "author"}

// issueItem maps a found issue or pull request: external id
// issue:owner/repo#N or pr:owner/repo#N. Without reasons it is one that
// no longer waits for the owner.
func issueItem(f *found) (*store.Item, error) {
	is := f.issue
	repo, err := repoOf(is)
	if err != nil {
		return nil, err
	}
	updated := is.GetUpdatedAt().Time
	switch {
	case is.GetNumber() <= 0:
		return nil, fmt.Errorf("%s: no number", repo)
	case updated.IsZero():
		return nil, fmt.Errorf("%s#%d: no updated_at", repo, is.GetNumber())
	}
	kind := "issue"
	if is.IsPullRequest() {
		kind = "pr"
	}
	reasons := slices.Clone(f.reasons)
	slices.SortFunc(reasons, func(a, b string) int { return slices.Index(reasonRank, a) - slices.Index(reasonRank, b) })
	reasons = slices.Compact(reasons)

	author := is.GetUser().GetLogin()
	people := []string{}
	if author != "" {
		people = append(people, author)
	}
	var assignees []string
	for _, a := range is.Assignees {
		if l := a.GetLogin(); l != "" {
			assignees = append(assignees, l)
			if !slices.Contains(people, l) {
				people = append(people, l)
			}
		}
	}
	var labels []string
	for _, l := range is.Labels {
		labels = append(labels, l.GetName())
	}
	meta := map[string]any{
		"repo":    repo,
		"number":  is.GetNumber(),
		"url":     is.GetHTMLURL(),
		"state":   is.GetState(),
		"updated": updated.UTC().Format(time.RFC3339),
	}
	if len(reasons) > 0 { // none: no search finds it any more
		meta["reason"], meta["reasons"] = reasons[0], reasons
	}
	if author != "" {
		meta["author"] = author
	}
	if len(assignees) > 0 {
		meta["assignees"] = assignees
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if kind == "pr" {
		meta["draft"] = is.GetDraft()
	}
	if f.checks != "" {
		meta["checks"] = f.checks
	}
	return &store.Item{
		Source:     Source,
		ExternalID: fmt.Sprintf("%s:%s#%d", kind, repo, is.GetNumber()),
		Kind:       kind,
		Thread:     fmt.Sprintf("%s#%d", repo, is.GetNumber()),
		Time:       updated,
		Title:      is.GetTitle(),
		Body:       is.GetBody(),
		Sender:     strings.ToLower(author),
		People:     people,
		Meta:       meta,
	}, nil
}

// checkState combines commit statuses and check runs: failure if anything
// failed, pending if anything is still running, success if something ran
// and all passed, "" when the commit has no checks at all.
func checkState(st *gh.CombinedStatus, runs []*gh.CheckRun) string {
	failed, pending, ran := false, false, false
	if st.GetTotalCount() > 0 {
		ran = true
		switch st.GetState() {
		case "failure", "error":
			failed = true
		case "pending":
			pending = true
		}
	}
	for _, r := range runs {
		ran = true
		if r.GetStatus() != "completed" {
			pending = true
			continue
		}
		switch r.GetConclusion() {
		case "failure", "timed_out", "cancelled", "action_required", "startup_failure":
			failed = true
		}
	}
	switch {
	case failed:
		return "failure"
	case pending:
		return "pending"
	case ran:
		return "success"
	}
	return ""
}
