package search

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Period is a span of time named in a query's text ("yesterday", "in
// March", "last year"), resolved in the owner's timezone.
type Period struct {
	Phrase       string    // the words that named it, lower-cased
	Since, Until time.Time // [Since, Until)
}

const monthRE = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`

const weekdayRE = `(monday|tuesday|wednesday|thursday|friday|saturday|sunday)`

// dateRules are tried in order; the first that matches wins. Each regexp
// works on the lower-cased query.
var dateRules = []struct {
	re      *regexp.Regexp
	resolve func(m []string, now time.Time, future bool) (time.Time, time.Time, bool)
}{
	{regexp.MustCompile(`\b(?:on\s+)?(\d{4})-(\d{1,2})-(\d{1,2})\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		return day(now.Location(), atoi(m[1]), atoi(m[2]), atoi(m[3]))
	}},
	{regexp.MustCompile(`\b(?:on\s+)?` + monthRE + `\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		return dayMaybeYear(now, m[3], monthOf(m[1]), atoi(m[2]))
	}},
	{regexp.MustCompile(`\b(?:on\s+)?(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRE + `(?:,?\s+(\d{4}))?\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		return dayMaybeYear(now, m[3], monthOf(m[2]), atoi(m[1]))
	}},
	{regexp.MustCompile(`\b(?:in|during)\s+` + monthRE + `(?:,?\s+(\d{4}))?\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		return monthMaybeYear(now, m[2], monthOf(m[1]))
	}},
	{regexp.MustCompile(`\b` + monthRE + `,?\s+(\d{4})\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		return monthMaybeYear(now, m[2], monthOf(m[1]))
	}},
	{regexp.MustCompile(`\b(?:in|during)\s+((?:19|20)\d\d)\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		y := atoi(m[1])
		return time.Date(y, 1, 1, 0, 0, 0, 0, now.Location()), time.Date(y+1, 1, 1, 0, 0, 0, 0, now.Location()), true
	}},
	{regexp.MustCompile(`\b(?:the\s+)?day\s+before\s+yesterday\b`), func(_ []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		return relDay(now, -2)
	}},
	{regexp.MustCompile(`\byesterday\b`), func(_ []string, now time.Time, _ bool) (time.Time, time.Time, bool) { return relDay(now, -1) }},
	{regexp.MustCompile(`\btoday\b`), func(_ []string, now time.Time, _ bool) (time.Time, time.Time, bool) { return relDay(now, 0) }},
	{regexp.MustCompile(`\btomorrow\b`), func(_ []string, now time.Time, _ bool) (time.Time, time.Time, bool) { return relDay(now, 1) }},
	{regexp.MustCompile(`\b(?:in\s+the\s+)?(?:last|past)\s+(\d{1,3})\s+(day|week|month)s?\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		n := atoi(m[1])
		start := midnight(now)
		switch m[2] {
		case "day":
			start = start.AddDate(0, 0, -n)
		case "week":
			start = start.AddDate(0, 0, -7*n)
		default:
			start = start.AddDate(0, -n, 0)
		}
		return start, midnight(now).AddDate(0, 0, 1), n > 0
	}},
	{regexp.MustCompile(`\b(this|last|past|previous|next)\s+(week|month|year)\b`), func(m []string, now time.Time, _ bool) (time.Time, time.Time, bool) {
		offset := map[string]int{"this": 0, "last": -1, "past": -1, "previous": -1, "next": 1}[m[1]]
		var start time.Time
		switch m[2] {
		case "week":
			start = weekStart(now).AddDate(0, 0, 7*offset)
			return start, start.AddDate(0, 0, 7), true
		case "month":
			start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location()).AddDate(0, offset, 0)
			return start, start.AddDate(0, 1, 0), true
		default:
			start = time.Date(now.Year()+offset, 1, 1, 0, 0, 0, 0, now.Location())
			return start, start.AddDate(1, 0, 0), true
		}
	}},
	{regexp.MustCompile(`\b(on|last|this|next|coming)\s+` + weekdayRE + `\b`), func(m []string, now time.Time, future bool) (time.Time, time.Time, bool) {
		want := weekdayOf(m[2])
		d := midnight(now)
		switch {
		case m[1] == "next" || m[1] == "coming" || (future && m[1] != "last"):
			// "can we meet on Tuesday?": the Tuesday to come, today only
			// as "this Tuesday".
			ahead := (int(want) - int(d.Weekday()) + 7) % 7
			if ahead == 0 && m[1] != "this" {
				ahead = 7
			}
			d = d.AddDate(0, 0, ahead)
		default:
			back := (int(d.Weekday()) - int(want) + 7) % 7
			if m[1] == "last" && back == 0 {
				back = 7
			}
			d = d.AddDate(0, 0, -back)
		}
		return d, d.AddDate(0, 0, 1), true
	}},
}

// parseDates finds the first date expression in text, resolved in now's
// location, and returns it with the text that remains without it.
func parseDates(text string, now time.Time) (Period, string, bool) {
	// Date words are ASCII: lower-casing only ASCII letters keeps every
	// byte where it was (strings.ToLower turns an invalid byte into three),
	// so the match cuts the original text.
	lower := asciiLower(text)
	future := aboutFuture(lower)
	for _, r := range dateRules {
		loc := r.re.FindStringSubmatchIndex(lower)
		if loc == nil {
			continue
		}
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = lower[loc[2*i]:loc[2*i+1]]
			}
		}
		since, until, ok := r.resolve(m, now, future)
		if !ok {
			continue
		}
		rest := strings.Join(strings.Fields(text[:loc[0]]+" "+text[loc[1]:]), " ")
		return Period{Since: since, Until: until, Phrase: lower[loc[0]:loc[1]]}, rest, true
	}
	return Period{}, text, false
}

// Words that put a request in the future ("can we meet on Tuesday?",
// "who wants dinner on Tuesday?") unless words of the past are there too
// ("what did Anna say she wants on Tuesday").
var (
	futureWords = regexp.MustCompile(`\b(will|shall|going to|gonna|let'?s|can we|could we|should we|can you|could you|wants?|wanna|would like|plan(?:s|ning)? to|upcoming|available|free)\b`)
	pastWords   = regexp.MustCompile(`\b(did|was|were|had|said|sent|wrote|asked|told|mentioned|happened|ago|last|yesterday)\b`)
)

// aboutFuture reports whether a lower-cased request is about what is to
// come, so a bare weekday in it means the next one.
func aboutFuture(lower string) bool {
	return futureWords.MatchString(lower) && !pastWords.MatchString(lower)
}

// asciiLower lower-cases the ASCII letters of s and leaves every other
// byte alone.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func midnight(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

func relDay(now time.Time, days int) (time.Time, time.Time, bool) {
	d := midnight(now).AddDate(0, 0, days)
	return d, d.AddDate(0, 0, 1), true
}

// weekStart is the Monday that starts now's week.
func weekStart(now time.Time) time.Time {
	d := midnight(now)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// day is one calendar day, rejecting dates that do not exist (Feb 30).
func day(loc *time.Location, y, m, d int) (time.Time, time.Time, bool) {
	if y < 1 || m < 1 || m > 12 || d < 1 || d > 31 {
		return time.Time{}, time.Time{}, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)
	if t.Day() != d {
		return time.Time{}, time.Time{}, false
	}
	return t, t.AddDate(0, 0, 1), true
}

// dayMaybeYear resolves "Dec 30" to the most recent Dec 30 that is not in
// the future, or to the given year.
func dayMaybeYear(now time.Time, year string, month time.Month, d int) (time.Time, time.Time, bool) {
	if year != "" {
		return day(now.Location(), atoi(year), int(month), d)
	}
	since, until, ok := day(now.Location(), now.Year(), int(month), d)
	if ok && since.After(now) {
		return day(now.Location(), now.Year()-1, int(month), d)
	}
	return since, until, ok
}

// monthMaybeYear resolves "in March" to the most recent March that has
// begun, or to the given year.
func monthMaybeYear(now time.Time, year string, month time.Month) (time.Time, time.Time, bool) {
	y := now.Year()
	if year != "" {
		y = atoi(year)
	} else if month > now.Month() {
		y--
	}
	start := time.Date(y, month, 1, 0, 0, 0, 0, now.Location())
	return start, start.AddDate(0, 1, 0), y > 0
}

func monthOf(s string) time.Month {
	s = strings.TrimSuffix(s, ".")
	for m := time.January; m <= time.December; m++ {
		if strings.HasPrefix(strings.ToLower(m.String()), s[:min(3, len(s))]) {
			return m
		}
	}
	return 0
}

func weekdayOf(s string) time.Weekday {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.ToLower(d.String()) == s {
			return d
		}
	}
	return time.Sunday
}
