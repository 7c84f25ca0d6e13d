package github

import (
	"fmt"
	"strings"
	"time"
)

// The JSON shapes below follow the GitHub REST API documentation (field
// names and nesting), not go-github's structs, so the real client is tested
// against what GitHub sends rather than against itself.

type wireUser struct {
	Login   string `json:"login"`
	ID      int64  `json:"id"`
	NodeID  string `json:"node_id"`
	Type    string `json:"type"`
	Name    string `json:"name,omitempty"`
	URL     string `json:"url"`
	HTMLURL string `json:"html_url"`
}

type wireRepo struct {
	ID       int64    `json:"id"`
	Name     string   `json:"name"`
	FullName string   `json:"full_name"`
	Private  bool     `json:"private"`
	Owner    wireUser `json:"owner"`
	HTMLURL  string   `json:"html_url"`
	URL      string   `json:"url"`
}

type wireSubject struct {
	Title            string  `json:"title"`
	URL              *string `json:"url"`
	LatestCommentURL *string `json:"latest_comment_url"`
	Type             string  `json:"type"`
}

type wireNotification struct {
	ID              string      `json:"id"`
	Repository      wireRepo    `json:"repository"`
	Subject         wireSubject `json:"subject"`
	Reason          string      `json:"reason"`
	Unread          bool        `json:"unread"`
	UpdatedAt       string      `json:"updated_at"`
	LastReadAt      *string     `json:"last_read_at"`
	URL             string      `json:"url"`
	SubscriptionURL string      `json:"subscription_url"`
}

type wireLabel struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Color string `json:"color"`
}

type wirePRLinks struct {
	URL      string `json:"url"`
	HTMLURL  string `json:"html_url"`
	DiffURL  string `json:"diff_url"`
	PatchURL string `json:"patch_url"`
}

type wireIssue struct {
	ID                int64        `json:"id"`
	NodeID            string       `json:"node_id"`
	URL               string       `json:"url"`
	RepositoryURL     string       `json:"repository_url"`
	HTMLURL           string       `json:"html_url"`
	Number            int          `json:"number"`
	State             string       `json:"state"`
	Title             string       `json:"title"`
	Body              *string      `json:"body"`
	User              wireUser     `json:"user"`
	Labels            []wireLabel  `json:"labels"`
	Assignee          *wireUser    `json:"assignee"`
	Assignees         []wireUser   `json:"assignees"`
	Comments          int          `json:"comments"`
	CreatedAt         string       `json:"created_at"`
	UpdatedAt         string       `json:"updated_at"`
	ClosedAt          *string      `json:"closed_at"`
	AuthorAssociation string       `json:"author_association"`
	Draft             *bool        `json:"draft,omitempty"`
	PullRequest       *wirePRLinks `json:"pull_request,omitempty"`
	Score             *float64     `json:"score,omitempty"`
}

type wireSearch struct {
	TotalCount        int   `json:"total_count"`
	IncompleteResults bool  `json:"incomplete_results"`
	Items             []any `json:"items"`
}

type wireRef struct {
	Label string   `json:"label"`
	Ref   string   `json:"ref"`
	SHA   string   `json:"sha"`
	User  wireUser `json:"user"`
	Repo  wireRepo `json:"repo"`
}

type wirePull struct {
	ID                 int64      `json:"id"`
	NodeID             string     `json:"node_id"`
	URL                string     `json:"url"`
	HTMLURL            string     `json:"html_url"`
	IssueURL           string     `json:"issue_url"`
	Number             int        `json:"number"`
	State              string     `json:"state"`
	Locked             bool       `json:"locked"`
	Title              string     `json:"title"`
	Body               *string    `json:"body"`
	User               wireUser   `json:"user"`
	Draft              bool       `json:"draft"`
	Merged             bool       `json:"merged"`
	RequestedReviewers []wireUser `json:"requested_reviewers"`
	Assignees          []wireUser `json:"assignees"`
	Head               wireRef    `json:"head"`
	Base               wireRef    `json:"base"`
	CreatedAt          string     `json:"created_at"`
	UpdatedAt          string     `json:"updated_at"`
	ClosedAt           *string    `json:"closed_at"`
	MergedAt           *string    `json:"merged_at"`
}

type wireStatus struct {
	ID          int64  `json:"id"`
	NodeID      string `json:"node_id"`
	URL         string `json:"url"`
	State       string `json:"state"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
	Context     string `json:"context"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

type wireCombinedStatus struct {
	State      string       `json:"state"`
	Statuses   []wireStatus `json:"statuses"`
	SHA        string       `json:"sha"`
	TotalCount int          `json:"total_count"`
	Repository wireRepo     `json:"repository"`
	CommitURL  string       `json:"commit_url"`
	URL        string       `json:"url"`
}

type wireApp struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
}

type wireCheckRun struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	HeadSHA     string  `json:"head_sha"`
	ExternalID  string  `json:"external_id"`
	URL         string  `json:"url"`
	HTMLURL     string  `json:"html_url"`
	Status      string  `json:"status"`
	Conclusion  *string `json:"conclusion"`
	StartedAt   string  `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Name        string  `json:"name"`
	App         wireApp `json:"app"`
}

type wireCheckRuns struct {
	TotalCount int            `json:"total_count"`
	CheckRuns  []wireCheckRun `json:"check_runs"`
}

type wireComment struct {
	ID                int64    `json:"id"`
	NodeID            string   `json:"node_id"`
	URL               string   `json:"url"`
	HTMLURL           string   `json:"html_url"`
	IssueURL          string   `json:"issue_url"`
	Body              string   `json:"body"`
	User              wireUser `json:"user"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	AuthorAssociation string   `json:"author_association"`
}

type wireError struct {
	Message          string           `json:"message"`
	Errors           []wireErrorEntry `json:"errors,omitempty"`
	DocumentationURL string           `json:"documentation_url"`
	Status           string           `json:"status,omitempty"`
}

type wireErrorEntry struct {
	Resource string `json:"resource"`
	Field    string `json:"field"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// ts formats a time the way GitHub does: RFC 3339, UTC, whole seconds.
func ts(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

func tsPtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := ts(t)
	return &s
}

// userID derives a stable id from a login, so the same login always has
// the same id across calls.
func userID(login string) int64 {
	var h int64 = 1000
	for _, c := range strings.ToLower(login) {
		h = h*31 + int64(c)
	}
	if h < 0 {
		h = -h
	}
	return h%1_000_000_000 + 1
}

func (s *Server) user(login string) wireUser {
	return wireUser{
		Login:   login,
		ID:      userID(login),
		NodeID:  fmt.Sprintf("U_%d", userID(login)),
		Type:    "User",
		URL:     s.apiBase() + "users/" + login,
		HTMLURL: s.webBase() + login,
	}
}

func (s *Server) repo(fullName string) wireRepo {
	owner, name, _ := strings.Cut(fullName, "/")
	return wireRepo{
		ID:       userID(fullName),
		Name:     name,
		FullName: fullName,
		Owner:    s.user(owner),
		HTMLURL:  s.webBase() + fullName,
		URL:      s.apiBase() + "repos/" + fullName,
	}
}
