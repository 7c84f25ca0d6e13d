package suggest

import "testing"

func TestClosest(t *testing.T) {
	cmds := []string{"run", "status", "search", "import", "briefing", "notifications", "chat"}
	tests := []struct{ word, want string }{
		{"stauts", "status"}, // a swap
		{"serach", "search"}, // a swap
		{"briefings", "briefing"},
		{"notification", "notifications"},
		{"Status", "status"},
		{"bogus", ""},
		{"xyz", ""},
		{"rn", "run"},
		{"ab", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := Closest(tc.word, cmds); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := Closest("degub", []string{"debug", "info", "warn", "error"}); got != "debug" {
		t.Errorf("degub: %q", got)
	}
	if got := Closest("mial", []string{"mail", "calendar", "github", "patterns"}); got != "mail" {
		t.Errorf("mial: %q", got)
	}
	if got := Closest("tokn", []string{"token", "token_file", "api_url", "owner_id"}); got != "token" {
		t.Errorf("tokn: %q", got)
	}
}
