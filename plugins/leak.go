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
	emailRe  = regexp.MustCompile(`[\p{L}\p{N}._%+\-]+@[\p{L}\p{N}.\-]+\.\p{L}{2,}`)
	urlRe    = regexp.MustCompile(`(?i)\b(?:[a-z][a-z0-9+.\-]*://|www\.)[^\s"'<>]+`)
	numberRe = regexp.MustCompile(`\d(?:[ .\-/]?\d){5,}`)
)

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
		for _, n := range numberRe.FindAllString(v, -1) {
			d := digitsOf(n)
			if strings.Contains(outsideNums, d) && !strings.Contains(ownerNums, d) {
				add("the number " + n)
			}
		}
		// What was named above is not quoted again as words.
		rest := urlRe.ReplaceAllString(emailRe.ReplaceAllString(lv, " "), " ")
		ws := strings.Fields(words(numberRe.ReplaceAllString(rest, " ")))
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
	for _, n := range numberRe.FindAllString(s, -1) {
		b.WriteString(digitsOf(n))
		b.WriteByte('\n')
	}
	return b.String()
}

func digitsOf(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
