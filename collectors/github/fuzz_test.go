package github

import (
	"encoding/json"
	"testing"

	gh "github.com/google/go-github/v62/github"
)

// FuzzItems feeds arbitrary JSON to the mapping of notifications and
// search results: whatever GitHub (or a proxy) sends, the result is either
// a storable item or an error, never a panic.
func FuzzItems(f *testing.F) {
	f.Add([]byte(`{"id":"1","repository":{"full_name":"o/r","html_url":"https://github.com/o/r"},"subject":{"title":"t","url":"https://api.github.com/repos/o/r/pulls/3","type":"PullRequest"},"reason":"mention","unread":true,"updated_at":"2025-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"number":4,"repository_url":"https://api.github.com/repos/o/r","html_url":"https://github.com/o/r/pull/4","title":"x","user":{"login":"a"},"assignees":[{"login":"b"},{}],"labels":[{}],"pull_request":{},"updated_at":"2025-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"id":"","subject":{"url":"/repos//pulls/-1"}}`))
	f.Add([]byte(`{"repository_url":"https://x/repos/a/b/c","number":1,"updated_at":"2025-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var n gh.Notification
		if json.Unmarshal(data, &n) == nil {
			if it, err := notificationItem(&n); err == nil {
				if err := it.Validate(); err != nil {
					t.Errorf("notification item does not validate: %v", err)
				}
			}
		}
		var is gh.Issue
		if json.Unmarshal(data, &is) == nil {
			if it, err := issueItem(&found{issue: &is, reasons: []string{"mention"}}); err == nil {
				if err := it.Validate(); err != nil {
					t.Errorf("issue item does not validate: %v", err)
				}
			}
		}
	})
}
