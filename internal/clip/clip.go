// Package clip shortens text for prompts, logs and messages.
package clip

import "unicode/utf8"

// Text cuts s to at most n bytes, on a rune boundary, and marks the cut
// with "…"; s itself if it fits.
func Text(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
