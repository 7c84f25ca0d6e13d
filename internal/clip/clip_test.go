package clip

import "testing"

func TestText(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"a longer text", 8, "a longer…"},
		{"Grüße", 3, "Gr…"}, // ü is two bytes: not split
		{"日本語", 4, "日…"},
		{"abc", 0, "…"},
	}
	for _, tt := range tests {
		if got := Text(tt.s, tt.n); got != tt.want {
			t.Errorf("Text(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
