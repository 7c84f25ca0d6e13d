package untrusted

import (
	"regexp"
	"strings"
)

// marker is a delimiter as a model may repeat it: whole, or its opening
// cut off before ">>>".
var marker = regexp.MustCompile(`(?im)<<<\s*(?:END\s+)?UNTRUSTED\s+DATA(?:[^<>\n]*>>>|[^<>\n]*$)`)

// Strip removes the data delimiters from a model's output before the
// owner sees it or anyone is sent it: they are for the model only. A line
// that held nothing but delimiters (and a list bullet) goes with them.
func Strip(s string) string {
	if !strings.Contains(s, "<<<") {
		return s
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !marker.MatchString(l) {
			out = append(out, l)
			continue
		}
		l = marker.ReplaceAllString(l, "")
		if strings.Trim(l, " \t-*•>") == "" {
			continue
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return strings.Join(out, "\n")
}

// Stripper is Strip for text that arrives in pieces (a streamed answer):
// it holds back what may be the start of a delimiter until it can tell.
type Stripper struct{ held string }

// maxHeld bounds what is held back: a delimiter with its source is short.
const maxHeld = 300

// Write takes the next piece and returns what can be shown now.
func (s *Stripper) Write(piece string) string {
	text := s.held + piece
	s.held = ""
	if i := pendingMarker(text); i >= 0 && len(text)-i <= maxHeld {
		text, s.held = text[:i], text[i:]
	}
	return marker.ReplaceAllString(text, "")
}

// Flush returns what is still held back, without delimiters.
func (s *Stripper) Flush() string {
	text := s.held
	s.held = ""
	return marker.ReplaceAllString(text, "")
}

// Reset forgets what is held (the stream starts over).
func (s *Stripper) Reset() { s.held = "" }

// pendingMarker is where a delimiter may begin that has not ended yet in
// text: the last "<<<" without ">>>" after it, or a "<" or "<<" at the
// very end; -1 if none.
func pendingMarker(text string) int {
	if i := strings.LastIndex(text, "<<<"); i >= 0 && !strings.Contains(text[i:], ">>>") {
		return i
	}
	for _, tail := range []string{"<<", "<"} {
		if strings.HasSuffix(text, tail) {
			return len(text) - len(tail)
		}
	}
	return -1
}
