package embedder

import "strings"

// Chunks splits text into pieces of at most size bytes, breaking at a
// paragraph, line, sentence or word boundary where one lies in the second
// half of the piece, so long mails are embedded piece by piece instead of
// being blurred into one vector. At most max chunks are returned (max <= 0:
// no limit); the full text stays searchable by keywords either way.
func Chunks(text string, size, max int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if size <= 0 {
		return []string{text}
	}
	var out []string
	for text != "" && (max <= 0 || len(out) < max) {
		if len(text) <= size {
			out = append(out, text)
			break
		}
		cut := breakPoint(text[:size])
		out = append(out, strings.TrimSpace(text[:cut]))
		text = strings.TrimSpace(text[cut:])
	}
	return out
}

// breakPoint picks where to end a chunk inside s.
func breakPoint(s string) int {
	half := len(s) / 2
	for _, sep := range []string{"\n\n", "\n", ". ", "? ", "! ", " "} {
		if i := strings.LastIndex(s, sep); i >= half {
			return i + len(sep)
		}
	}
	// No boundary: cut at a rune boundary.
	i := len(s)
	for i > 0 && (s[i-1]&0xC0) == 0x80 {
		i--
	}
	if i > 0 && s[i-1] >= 0xC0 { // do not split a multi-byte rune
		i--
	}
	if i == 0 {
		return len(s)
	}
	return i
}
