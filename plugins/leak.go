package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/omnibrain/omnibrain/agent"
)

// A read call's arguments leave the machine unseen, so a model hijacked
// by a mail could smuggle the mail's (or the inbox's) text out in a
// "search query". Such a call is proposed instead when an argument
// carries text that is in the run's outside content and not in the
// owner's request: an address, a URL, a long number or a run of words.

var (
	emailRe = regexp.MustCompile(`[\p{L}\p{N}._%+\-]+@[\p{L}\p{N}.\-]+\.\p{L}{2,}`)
	urlRe   = regexp.MustCompile(`(?i)\b(?:[a-z][a-z0-9+.\-]*://|www\.)[^\s"'<>]+`)
)

// minNumberDigits is how many digits make a number worth guarding (an
// account, card or phone number, an amount with its cents).
const minNumberDigits = 6

// sentenceWords is how many consecutive words count as copied text.
const sentenceWords = 5

// maxLeaksShown bounds what a proposal lists.
const maxLeaksShown = 4

// leaks lists what in ps came from the run's outside text rather than
// from the owner; nil when the call may run.
func leaks(prov agent.Provenance, ps map[string]json.RawMessage) []string {
	if len(prov.Untrusted) == 0 {
		return nil
	}
	outside := strings.Join(prov.Untrusted, "\n")
	lowOutside, lowOwner := strings.ToLower(outside), strings.ToLower(prov.Request)
	outsideWords, ownerWords := " "+words(outside)+" ", " "+words(prov.Request)+" "
	outsideNums, ownerNums := digitRuns(outside), digitRuns(prov.Request)

	var found []string
	add := func(s string) {
		for _, f := range found {
			if f == s {
				return
			}
		}
		found = append(found, s)
	}
	for _, v := range argStrings(ps) {
		lv := strings.ToLower(v)
		for _, e := range emailRe.FindAllString(lv, -1) {
			if strings.Contains(lowOutside, e) && !strings.Contains(lowOwner, e) {
				add("the address " + e)
			}
		}
		for _, u := range urlRe.FindAllString(lv, -1) {
			u = strings.TrimRight(u, ".,;:!?)]}")
			if strings.Contains(lowOutside, u) && !strings.Contains(lowOwner, u) {
				add("the URL " + u)
			}
		}
		// What is named here is not quoted again as words.
		rest := urlRe.ReplaceAllString(emailRe.ReplaceAllString(lv, " "), " ")
		for _, n := range numbers(v) {
			d := digitsOf(n)
			if strings.Contains(outsideNums, d) && !strings.Contains(ownerNums, d) {
				add("the number " + n)
			}
			rest = strings.ReplaceAll(rest, n, " ")
		}
		ws := strings.Fields(words(rest))
		for i := 0; i+sentenceWords <= len(ws); i++ {
			gram := " " + strings.Join(ws[i:i+sentenceWords], " ") + " "
			if strings.Contains(outsideWords, gram) && !strings.Contains(ownerWords, gram) {
				add(fmt.Sprintf("the words “%s…”", strings.TrimSpace(gram)))
				break // one quote per argument says enough
			}
		}
	}
	if len(found) > maxLeaksShown {
		found = append(found[:maxLeaksShown], fmt.Sprintf("%d more", len(found)-maxLeaksShown))
	}
	return found
}

// argStrings are every string (and number, as written) in the arguments.
func argStrings(ps map[string]json.RawMessage) []string {
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case string:
			out = append(out, y)
		case json.Number:
			out = append(out, y.String())
		case []any:
			for _, e := range y {
				walk(e)
			}
		case map[string]any:
			for _, e := range y {
				walk(e)
			}
		}
	}
	for _, raw := range ps {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if d.Decode(&v) == nil {
			walk(v)
		}
	}
	return out
}

// words is s in lower case with every run of non-letters and non-digits
// made one space.
func words(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// digitRuns lists s's long numbers as bare digits, one per line.
func digitRuns(s string) string {
	var b strings.Builder
	for _, n := range numbers(s) {
		b.WriteString(digitsOf(n))
		b.WriteByte('\n')
	}
	return b.String()
}

// numbers finds runs of at least minNumberDigits digits, where one
// space, dot, dash or slash may stand between two digits ("4111 1111
// 1111 1111", "+31 10 555 0199"). A scan, not a regexp: it runs over
// all of a run's outside text at every read call.
func numbers(s string) []string {
	var out []string
	start, digits := -1, 0
	isDigit := func(i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }
	for i := 0; i <= len(s); i++ {
		switch {
		case isDigit(i):
			if start < 0 {
				start = i
			}
			digits++
			continue
		case start >= 0 && i < len(s) && strings.IndexByte(" .-/", s[i]) >= 0 && isDigit(i-1) && isDigit(i+1):
			continue
		}
		if digits >= minNumberDigits {
			out = append(out, s[start:i])
		}
		start, digits = -1, 0
	}
	return out
}

func digitsOf(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
