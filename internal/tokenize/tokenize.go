// Package tokenize is omnibrain's one tokenizer: the words that query
// building, search snippets and the built-in embedder all agree on.
package tokenize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is one word of a text: its byte range in the text and the word
// lower-cased.
type Span struct {
	Start, End int
	Word       string
}

// Spans splits text into words of letters and digits, with their places.
// An apostrophe ends a word ("caroline's" gives "caroline", "s"), so
// possessives match their names.
func Spans(text string) []Span {
	var out []Span
	eachWord(text, func(start, end int) {
		out = append(out, Span{start, end, strings.ToLower(text[start:end])})
	})
	return out
}

// Words is the lower-cased words of text (Spans without the places).
func Words(text string) []string {
	out := make([]string, 0, len(text)/6+1) // a word and its space are about six bytes
	eachWord(text, func(start, end int) { out = append(out, strings.ToLower(text[start:end])) })
	return out
}

// ContentWords returns the words of text that carry meaning: no stop words,
// no single letters.
func ContentWords(text string) []string {
	out := make([]string, 0, len(text)/8+1)
	EachWord(text, func(word string) {
		if w := strings.ToLower(word); !StopWord(w) {
			out = append(out, w)
		}
	})
	return out
}

// EachWord calls f with each word of text as it is written, not lower-cased:
// for a caller that keeps what it learns of each word (the built-in
// embedder), a word seen before costs nothing to convert.
func EachWord(text string, f func(word string)) {
	eachWord(text, func(start, end int) { f(text[start:end]) })
}

// eachWord calls f with the byte range of each word of text. The embedder
// tokenizes every stored text, so this avoids building spans it does not
// need, and runs through an ASCII word a byte at a time without decoding
// runes (about 6% fewer instructions in embedding bench mails;
// FuzzEachWord holds it to the rune-by-rune definition).
func eachWord(text string, f func(start, end int)) {
	start := -1
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if !asciiWordByte[c] {
				if start >= 0 {
					f(start, i)
					start = -1
				}
				i++
				continue
			}
			if start < 0 {
				start = i
			}
			// The rest of an ASCII word at once.
			for i++; i < len(text) && text[i] < utf8.RuneSelf && asciiWordByte[text[i]]; i++ {
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			f(start, i)
			start = -1
		}
		i += size
	}
	if start >= 0 {
		f(start, len(text))
	}
}

// asciiWordByte says which ASCII characters are letters or digits.
var asciiWordByte = func() (t [utf8.RuneSelf]bool) {
	for r := range utf8.RuneSelf {
		t[r] = unicode.IsLetter(rune(r)) || unicode.IsDigit(rune(r))
	}
	return t
}()

// StopWord reports whether w (lower case) is too common to mean anything
// in a search: English function words, question words and single letters.
func StopWord(w string) bool {
	if len(w) < 2 {
		return true
	}
	_, ok := stopWords[w]
	return ok
}

var stopWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`
a about above after again against all am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn
it its itself just ll let me more most mustn my myself no nor not now of off on once only or other ought our ours
ourselves out over own re same shan she should shouldn so some such than that the their theirs them themselves
then there these they this those through to too under until up ve very was wasn we were weren what when where
which while who whom why will with won would wouldn you your yours yourself yourselves
also anything something everything nothing get got gets getting go goes going gone went make made
really much many may might must shall us ever even still yet yes ok okay oh hey hi hello thanks thank
tell told know knew say said like via per etc s t d m
`) {
		m[w] = struct{}{}
	}
	return m
}()

// Stem reduces an English word to a stem with a few conservative suffix
// rules (plurals, -ing, -ed), so "painted", "painting" and "paints" meet.
// Character n-grams in the built-in embedder cover what it misses.
func Stem(w string) string {
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 && hasVowel(w[:len(w)-len(suf)]) {
			w = w[:len(w)-len(suf)]
			// running -> runn -> run; hoped -> hop (not "hope": both sides agree).
			if n := len(w); n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
				w = w[:n-1]
			}
			break
		}
	}
	if strings.HasSuffix(w, "e") && len(w) > 4 {
		w = w[:len(w)-1] // dance/danced/dancing all become "danc"
	}
	return w
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// unspacedRanges are the scripts written without spaces between words
// (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) and Korean, whose words
// carry their particles: a word is found inside a run of text only by
// substring. Migration 0019 of the store names the same ranges in a GLOB.
var unspacedRanges = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x0E00, 0x0EFF, 1}, // Thai, Lao
		{0x1000, 0x109F, 1}, // Myanmar
		{0x1780, 0x17FF, 1}, // Khmer
		{0x3040, 0x30FF, 1}, // Hiragana, Katakana
		{0x3400, 0x4DBF, 1}, // CJK extension A
		{0x4E00, 0x9FFF, 1}, // CJK unified ideographs
		{0xAC00, 0xD7AF, 1}, // Hangul syllables
		{0xF900, 0xFAFF, 1}, // CJK compatibility ideographs
		{0xFF66, 0xFF9F, 1}, // half-width Katakana
	},
	R32: []unicode.Range32{
		{0x20000, 0x2FFFF, 1}, // CJK extensions B and later
	},
}

// IsUnspaced reports whether r belongs to a script written without
// spaces between words.
func IsUnspaced(r rune) bool { return unicode.Is(unspacedRanges, r) }

// HasUnspaced reports whether text holds any letter of a script written
// without spaces between words.
func HasUnspaced(text string) bool {
	for _, r := range text {
		if r >= 0x0E00 && IsUnspaced(r) {
			return true
		}
	}
	return false
}
