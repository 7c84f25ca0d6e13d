package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func validation(resource, field, code, msg string) reply {
	return reply{status: http.StatusUnprocessableEntity, body: wireError{
		Message:          "Validation Failed",
		Errors:           []wireErrorEntry{{Resource: resource, Field: field, Code: code, Message: msg}},
		DocumentationURL: "https://docs.github.com/rest",
	}}
}

func notFound() reply {
	return reply{status: http.StatusNotFound, body: wireError{Message: "Not Found", DocumentationURL: "https://docs.github.com/rest"}}
}

func (s *Server) getUser(r *http.Request) reply {
	u := s.user(s.opts.Login)
	u.Name = "The " + s.opts.Login
	hdr := http.Header{}
	if s.opts.Scopes != nil {
		hdr.Set("X-OAuth-Scopes", strings.Join(s.opts.Scopes, ", "))
		hdr.Set("X-Accepted-OAuth-Scopes", "")
	}
	return reply{status: http.StatusOK, body: u, header: hdr}
}

func parseTimeParam(q string) (time.Time, error) {
	if q == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, q)
}

func (s *Server) listNotifications(r *http.Request) reply {
	q := r.URL.Query()
	since, err := parseTimeParam(q.Get("since"))
	if err != nil {
		return validation("Notification", "since", "invalid", "since must be an ISO 8601 timestamp")
	}
	before, err := parseTimeParam(q.Get("before"))
	if err != nil {
		return validation("Notification", "before", "invalid", "before must be an ISO 8601 timestamp")
	}
	all := q.Get("all") == "true"
	participating := q.Get("participating") == "true"

	s.mu.Lock()
	defer s.mu.Unlock()
	lastMod := s.notesChanged.UTC().Truncate(time.Second)
	hdr := http.Header{}
	hdr.Set("Last-Modified", lastMod.Format(http.TimeFormat))
	hdr.Set("X-Poll-Interval", strconv.Itoa(int(s.opts.PollInterval/time.Second)))
	if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !lastMod.After(ims) {
		return reply{status: http.StatusNotModified, header: hdr}
	}

	var sel []*Notification
	for _, n := range s.notifications {
		if n.Read && !all {
			continue
		}
		if participating && !slices.Contains([]string{"assign", "author", "comment", "mention", "review_requested", "team_mention", "state_change"}, n.Reason) {
			continue
		}
		if !since.IsZero() && n.Updated.Before(since) {
			continue
		}
		if !before.IsZero() && !n.Updated.Before(before) {
			continue
		}
		sel = append(sel, n)
	}
	sortByUpdatedDesc(sel, func(n *Notification) time.Time { return n.Updated })
	items := make([]any, 0, len(sel)+len(s.rawNotes))
	for _, n := range sel {
		items = append(items, s.wireNotification(n))
	}
	for _, raw := range s.rawNotes {
		items = append(items, raw)
	}
	return reply{status: http.StatusOK, body: page(s, r, items, 50, 50, hdr), header: hdr}
}

func (s *Server) wireNotification(n *Notification) wireNotification {
	var subjectURL *string
	if n.Number > 0 {
		kind := "issues"
		if n.Type == "PullRequest" {
			kind = "pulls"
		}
		u := fmt.Sprintf("%srepos/%s/%s/%d", s.apiBase(), n.Repo, kind, n.Number)
		subjectURL = &u
	}
	var lastRead *string
	if n.Read {
		lastRead = tsPtr(n.Updated)
	}
	return wireNotification{
		ID:              n.ID,
		Repository:      s.repo(n.Repo),
		Subject:         wireSubject{Title: n.Title, URL: subjectURL, LatestCommentURL: subjectURL, Type: n.Type},
		Reason:          n.Reason,
		Unread:          !n.Read,
		UpdatedAt:       ts(n.Updated),
		LastReadAt:      lastRead,
		URL:             s.apiBase() + "notifications/threads/" + n.ID,
		SubscriptionURL: s.apiBase() + "notifications/threads/" + n.ID + "/subscription",
	}
}

// searchIssues implements the subset of the issue search syntax omnibrain
// uses; other qualifiers are refused with 422 rather than ignored, so a
// query the fake does not understand never passes silently.
func (s *Server) searchIssues(r *http.Request) reply {
	q := r.URL.Query()
	query := strings.TrimSpace(q.Get("q"))
	if query == "" {
		return validation("Search", "q", "missing", "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var preds []func(*Issue) bool
	var words []string
	for _, tok := range strings.Fields(query) {
		key, val, ok := strings.Cut(tok, ":")
		if !ok {
			words = append(words, strings.ToLower(tok))
			continue
		}
		if val == "@me" {
			val = s.opts.Login
		}
		val = strings.ToLower(val)
		has := func(list []string) bool {
			return slices.ContainsFunc(list, func(l string) bool { return strings.EqualFold(l, val) })
		}
		switch key {
		case "is", "type", "state":
			switch val {
			case "open", "closed":
				preds = append(preds, func(i *Issue) bool { return i.State == val })
			case "pr":
				preds = append(preds, func(i *Issue) bool { return i.PR })
			case "issue":
				preds = append(preds, func(i *Issue) bool { return !i.PR })
			default:
				return validation("Search", "q", "invalid", "unknown value "+tok)
			}
		case "review-requested", "user-review-requested":
			preds = append(preds, func(i *Issue) bool { return i.PR && has(i.Reviewers) })
		case "assignee":
			preds = append(preds, func(i *Issue) bool { return has(i.Assignees) })
		case "mentions":
			preds = append(preds, func(i *Issue) bool { return has(i.Mentions) })
		case "author":
			preds = append(preds, func(i *Issue) bool { return strings.EqualFold(i.Author, val) })
		case "involves":
			preds = append(preds, func(i *Issue) bool {
				return strings.EqualFold(i.Author, val) || has(i.Assignees) || has(i.Mentions) || has(i.Reviewers)
			})
		case "repo":
			preds = append(preds, func(i *Issue) bool { return strings.EqualFold(i.Repo, val) })
		case "archived":
		default:
			return validation("Search", "q", "invalid", "unsupported qualifier "+key)
		}
	}
	var sel []*Issue
	for _, is := range s.issues {
		ok := true
		for _, p := range preds {
			ok = ok && p(is)
		}
		text := strings.ToLower(is.Title + " " + is.Body)
		for _, w := range words {
			ok = ok && strings.Contains(text, w)
		}
		if ok {
			sel = append(sel, is)
		}
	}
	switch q.Get("sort") {
	case "", "updated":
		sortByUpdatedDesc(sel, func(i *Issue) time.Time { return i.Updated })
	case "created":
		sortByUpdatedDesc(sel, func(i *Issue) time.Time { return i.Created })
	default:
		return validation("Search", "sort", "invalid", "")
	}
	if q.Get("order") == "asc" {
		slices.Reverse(sel)
	}
	if len(sel) > 1000 {
		sel = sel[:1000]
	}
	items := make([]any, len(sel))
	for i, is := range sel {
		items[i] = s.wireIssue(is)
	}
	hdr := http.Header{}
	pg := page(s, r, items, 30, 100, hdr)
	return reply{status: http.StatusOK, body: wireSearch{TotalCount: len(sel), Items: pg}, header: hdr}
}

func (s *Server) users(logins []string) []wireUser {
	out := make([]wireUser, 0, len(logins))
	for _, l := range logins {
		out = append(out, s.user(l))
	}
	return out
}

func (s *Server) wireIssue(is *Issue) wireIssue {
	api := fmt.Sprintf("%srepos/%s/issues/%d", s.apiBase(), is.Repo, is.Number)
	html := fmt.Sprintf("%s%s/issues/%d", s.webBase(), is.Repo, is.Number)
	var body *string
	if is.Body != "" {
		b := is.Body
		body = &b
	}
	labels := make([]wireLabel, 0, len(is.Labels))
	for _, l := range is.Labels {
		labels = append(labels, wireLabel{ID: userID(l), Name: l, Color: "ededed"})
	}
	w := wireIssue{
		ID:                userID(is.Repo) + int64(is.Number),
		NodeID:            fmt.Sprintf("I_%s_%d", strings.ReplaceAll(is.Repo, "/", "_"), is.Number),
		URL:               api,
		RepositoryURL:     s.apiBase() + "repos/" + is.Repo,
		Number:            is.Number,
		State:             is.State,
		Title:             is.Title,
		Body:              body,
		User:              s.user(is.Author),
		Labels:            labels,
		Assignees:         s.users(is.Assignees),
		CreatedAt:         ts(is.Created),
		UpdatedAt:         ts(is.Updated),
		AuthorAssociation: "CONTRIBUTOR",
	}
	if len(is.Assignees) > 0 {
		a := s.user(is.Assignees[0])
		w.Assignee = &a
	}
	if is.State == "closed" {
		w.ClosedAt = tsPtr(is.Updated)
	}
	score := 1.0
	w.Score = &score
	if is.PR {
		html = fmt.Sprintf("%s%s/pull/%d", s.webBase(), is.Repo, is.Number)
		draft := is.Draft
		w.Draft = &draft
		w.PullRequest = &wirePRLinks{
			URL:      fmt.Sprintf("%srepos/%s/pulls/%d", s.apiBase(), is.Repo, is.Number),
			HTMLURL:  html,
			DiffURL:  html + ".diff",
			PatchURL: html + ".patch",
		}
	}
	w.HTMLURL = html
	return w
}

func (s *Server) issueFromPath(r *http.Request, param string) (*Issue, bool) {
	n, err := strconv.Atoi(r.PathValue(param))
	if err != nil {
		return nil, false
	}
	is := s.findIssue(r.PathValue("owner")+"/"+r.PathValue("repo"), n)
	return is, is != nil
}

// getIssue serves an issue or a pull request (as an issue, with its
// pull_request links), open or closed.
func (s *Server) getIssue(r *http.Request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueFromPath(r, "issue_number")
	if !ok {
		return notFound()
	}
	return reply{status: http.StatusOK, body: s.wireIssue(is)}
}

func (s *Server) getPull(r *http.Request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueFromPath(r, "pull_number")
	if !ok || !is.PR {
		return notFound()
	}
	wi := s.wireIssue(is)
	ref := func(branch, sha string) wireRef {
		return wireRef{Label: is.Repo + ":" + branch, Ref: branch, SHA: sha, User: s.user(strings.Split(is.Repo, "/")[0]), Repo: s.repo(is.Repo)}
	}
	return reply{status: http.StatusOK, body: wirePull{
		ID:                 wi.ID,
		NodeID:             "PR_" + wi.NodeID,
		URL:                wi.PullRequest.URL,
		HTMLURL:            wi.HTMLURL,
		IssueURL:           wi.URL,
		Number:             is.Number,
		State:              is.State,
		Title:              is.Title,
		Body:               wi.Body,
		User:               wi.User,
		Draft:              is.Draft,
		RequestedReviewers: s.users(is.Reviewers),
		Assignees:          wi.Assignees,
		Head:               ref(fmt.Sprintf("pr-%d", is.Number), is.HeadSHA),
		Base:               ref("main", strings.Repeat("0", 40)),
		CreatedAt:          wi.CreatedAt,
		UpdatedAt:          wi.UpdatedAt,
		ClosedAt:           wi.ClosedAt,
	}}
}

// knownRef reports whether the fake knows a commit; GitHub answers 422 for
// a SHA it has never seen.
func (s *Server) knownRef(repo, sha string) bool {
	if _, ok := s.statuses[sha]; ok {
		return true
	}
	if _, ok := s.checks[sha]; ok {
		return true
	}
	return slices.ContainsFunc(s.issues, func(i *Issue) bool { return i.Repo == repo && i.HeadSHA == sha })
}

func (s *Server) combinedStatus(r *http.Request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, sha := r.PathValue("owner")+"/"+r.PathValue("repo"), r.PathValue("ref")
	if !s.knownRef(repo, sha) {
		return reply{status: http.StatusUnprocessableEntity, body: wireError{Message: "No commit found for SHA: " + sha, DocumentationURL: "https://docs.github.com/rest/commits/statuses#get-the-combined-status-for-a-specific-reference"}}
	}
	all := s.statuses[sha]
	// The combined state: failure if any context failed or errored, pending
	// if any is pending or there are none, else success.
	state := "success"
	if len(all) == 0 {
		state = "pending"
	}
	for _, st := range all {
		switch st.State {
		case "failure", "error":
			state = "failure"
		case "pending":
			if state != "failure" {
				state = "pending"
			}
		}
	}
	ws := make([]wireStatus, len(all))
	for i, st := range all {
		ws[i] = wireStatus{
			ID: int64(i + 1), NodeID: fmt.Sprintf("SC_%d", i+1),
			URL:   s.apiBase() + "repos/" + repo + "/statuses/" + sha,
			State: st.State, Description: st.Description, Context: st.Context,
			CreatedAt: ts(s.setAt[sha]), UpdatedAt: ts(s.setAt[sha]),
		}
	}
	hdr := http.Header{}
	return reply{status: http.StatusOK, header: hdr, body: wireCombinedStatus{
		State:      state,
		Statuses:   page(s, r, ws, 30, 100, hdr),
		SHA:        sha,
		TotalCount: len(all),
		Repository: s.repo(repo),
		CommitURL:  s.apiBase() + "repos/" + repo + "/commits/" + sha,
		URL:        s.apiBase() + "repos/" + repo + "/commits/" + sha + "/status",
	}}
}

func (s *Server) listCheckRuns(r *http.Request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, sha := r.PathValue("owner")+"/"+r.PathValue("repo"), r.PathValue("ref")
	if !s.knownRef(repo, sha) {
		return reply{status: http.StatusUnprocessableEntity, body: wireError{Message: "No commit found for SHA: " + sha, DocumentationURL: "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference"}}
	}
	q := r.URL.Query()
	var sel []wireCheckRun
	for i, c := range s.checks[sha] {
		if v := q.Get("status"); v != "" && v != c.Status {
			continue
		}
		if v := q.Get("check_name"); v != "" && v != c.Name {
			continue
		}
		var concl, completed *string
		if c.Status == "completed" {
			cc := c.Conclusion
			concl, completed = &cc, tsPtr(s.setAt[sha])
		}
		id := int64(i+1) + userID(sha)
		sel = append(sel, wireCheckRun{
			ID: id, NodeID: fmt.Sprintf("CR_%d", id), HeadSHA: sha,
			URL:     fmt.Sprintf("%srepos/%s/check-runs/%d", s.apiBase(), repo, id),
			HTMLURL: fmt.Sprintf("%s%s/runs/%d", s.webBase(), repo, id),
			Status:  c.Status, Conclusion: concl, StartedAt: ts(s.setAt[sha]), CompletedAt: completed,
			Name: c.Name, App: wireApp{ID: 15368, Slug: "github-actions", Name: "GitHub Actions"},
		})
	}
	hdr := http.Header{}
	return reply{status: http.StatusOK, header: hdr, body: wireCheckRuns{TotalCount: len(sel), CheckRuns: page(s, r, sel, 30, 100, hdr)}}
}

func (s *Server) wireComment(c *Comment) wireComment {
	return wireComment{
		ID:                c.ID,
		NodeID:            fmt.Sprintf("IC_%d", c.ID),
		URL:               fmt.Sprintf("%srepos/%s/issues/comments/%d", s.apiBase(), c.Repo, c.ID),
		HTMLURL:           fmt.Sprintf("%s%s/issues/%d#issuecomment-%d", s.webBase(), c.Repo, c.Number, c.ID),
		IssueURL:          fmt.Sprintf("%srepos/%s/issues/%d", s.apiBase(), c.Repo, c.Number),
		Body:              c.Body,
		User:              s.user(c.Author),
		CreatedAt:         ts(c.Created),
		UpdatedAt:         ts(c.Updated),
		AuthorAssociation: "OWNER",
	}
}

func (s *Server) listComments(r *http.Request) reply {
	since, err := parseTimeParam(r.URL.Query().Get("since"))
	if err != nil {
		return validation("IssueComment", "since", "invalid", "since must be an ISO 8601 timestamp")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueFromPath(r, "issue_number")
	if !ok {
		return notFound()
	}
	var sel []wireComment
	for _, c := range s.comments {
		if c.Repo != is.Repo || c.Number != is.Number {
			continue
		}
		if !since.IsZero() && c.Updated.Before(since) {
			continue
		}
		sel = append(sel, s.wireComment(c))
	}
	hdr := http.Header{}
	return reply{status: http.StatusOK, header: hdr, body: page(s, r, sel, 30, 100, hdr)}
}

func (s *Server) createComment(r *http.Request) reply {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return reply{status: http.StatusBadRequest, body: wireError{Message: "Problems parsing JSON", DocumentationURL: "https://docs.github.com/rest/issues/comments#create-an-issue-comment"}}
	}
	if in.Body == nil || *in.Body == "" {
		return validation("IssueComment", "body", "missing_field", "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueFromPath(r, "issue_number")
	if !ok {
		return notFound()
	}
	c := s.addComment(Comment{Repo: is.Repo, Number: is.Number, Author: s.opts.Login, Body: *in.Body})
	s.created = append(s.created, *c)
	w := s.wireComment(c)
	hdr := http.Header{}
	hdr.Set("Location", w.URL)
	return reply{status: http.StatusCreated, header: hdr, body: w}
}
