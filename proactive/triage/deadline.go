package triage

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Deadline is a time limit read from a mail's text.
type Deadline struct {
	Time   time.Time
	Phrase string // the words it was read from
}

// endOfDay is when "by Friday" or "today" ends: the close of business.
const endOfDay = 17

// deadlineTrigger finds the words that announce a deadline; the target
// after it is parsed by parseWhen.
var deadlineTrigger = regexp.MustCompile(`(?i)\b(no later than|not later than|deadline(?: is)?:?|due(?: by| on| date:?)?|before|by|until|within|in)\s+`)

// bareDeadline finds deadlines that need no trigger word. "today" and
// "tomorrow" alone are not deadlines ("I saw him today").
var bareDeadline = regexp.MustCompile(`(?i)\b(eod|cob|end of (?:the )?day|close of business)\b`)

// FindDeadline returns the earliest deadline in text that is not before
// ref (the mail's time), read in loc, the owner's timezone. Relative words
// ("Friday", "tomorrow", "5pm") are relative to ref.
func FindDeadline(text string, ref time.Time, loc *time.Location) (Deadline, bool) {
	if loc == nil {
		loc = time.UTC
	}
	ref = ref.In(loc)
	if len(text) > 20000 {
		text = text[:20000]
	}
	var best Deadline
	consider := func(t time.Time, phrase string) {
		if t.IsZero() || t.Before(ref) || t.After(ref.AddDate(1, 0, 0)) {
			return
		}
		if best.Time.IsZero() || t.Before(best.Time) {
			best = Deadline{Time: t, Phrase: strings.TrimSpace(phrase)}
		}
	}
	var spans [][2]int // text read as part of a triggered deadline
	for _, m := range deadlineTrigger.FindAllStringSubmatchIndex(text, 50) {
		rest := text[m[1]:min(len(text), m[1]+60)]
		if t, n := parseWhen(rest, ref, loc); n > 0 {
			consider(t, text[m[0]:m[1]+n])
			spans = append(spans, [2]int{m[0], m[1] + n})
		}
	}
	for _, m := range bareDeadline.FindAllStringIndex(text, 50) {
		if inSpans(spans, m[0]) {
			continue
		}
		if t, n := parseWhen(text[m[0]:min(len(text), m[0]+60)], ref, loc); n > 0 {
			consider(t, text[m[0]:m[0]+n])
		}
	}
	return best, !best.Time.IsZero()
}

func inSpans(spans [][2]int, at int) bool {
	for _, sp := range spans {
		if at >= sp[0] && at < sp[1] {
			return true
		}
	}
	return false
}

var (
	reRelDay  = regexp.MustCompile(`(?i)^(eod|cob|end of (?:the )?day|close of business|today|tonight|this morning|this afternoon|this evening|tomorrow(?:\s+(?:morning|afternoon|evening|eod|cob))?)\b`)
	reWeekday = regexp.MustCompile(`(?i)^(?:(this|next|coming)\s+)?(mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\b\.?`)
	reEndOf   = regexp.MustCompile(`(?i)^(?:the\s+)?end\s+of\s+(?:the\s+)?(week|month|day)\b|^(week|month)(?:'s)?\s+end\b`)
	reNext    = regexp.MustCompile(`(?i)^next\s+(week|month)\b`)
	reMonth   = regexp.MustCompile(`(?i)^(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?`)
	reDayMon  = regexp.MustCompile(`(?i)^(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\b(?:,?\s+(\d{4}))?`)
	reNumeric = regexp.MustCompile(`^(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?\b`)
	reISO     = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})\b`)
	reClock   = regexp.MustCompile(`(?i)^(?:at\s+)?(noon|midnight|(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)?)`)
	reWithin  = regexp.MustCompile(`(?i)^(?:within\s+|in\s+)?(\d{1,3}|an?|one|two|three)\s+(hours?|days?|business days?|weeks?)\b`)
	reSep     = regexp.MustCompile(`(?i)^(?:,|\s)*(?:at\s+|by\s+|@\s*)?`)
	reEOD     = regexp.MustCompile(`(?i)^(eod|cob|end of (?:the )?day|close of business)$`)
	reOn      = regexp.MustCompile(`(?i)^(?:,|\s)*(?:on\s+|this\s+)?`)
)

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12}

var weekdays = map[string]time.Weekday{"mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday, "sun": time.Sunday}

// parseWhen reads a point in time at the start of s. It returns the time
// and how many bytes it used (0: nothing recognised).
func parseWhen(s string, ref time.Time, loc *time.Location) (time.Time, int) {
	day, n, hasDay := parseDay(s, ref, loc)
	if hasDay && reEOD.MatchString(s[:n]) {
		// "COB tomorrow", "EOD Friday": the close of that day.
		rest := s[n:]
		sep := reOn.FindStringIndex(rest)
		if d, j, ok := parseDay(rest[sep[1]:], ref, loc); ok && !reEOD.MatchString(rest[sep[1]:sep[1]+j]) {
			return d, n + sep[1] + j
		}
	}
	if hasDay {
		// "Friday at 3pm", "tomorrow 10am", "10/30 noon"
		rest := s[n:]
		sep := reSep.FindStringIndex(rest)
		if h, m, k := parseClock(rest[sep[1]:]); k > 0 {
			return time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc), n + sep[1] + k
		}
		return day, n
	}
	if h, m, k := parseClock(s); k > 0 {
		// "5pm", "noon": today, or tomorrow if it has passed; then "5pm Friday"
		t := time.Date(ref.Year(), ref.Month(), ref.Day(), h, m, 0, 0, loc)
		rest := s[k:]
		sep := reOn.FindStringIndex(rest)
		if d, j, ok := parseDay(rest[sep[1]:], ref, loc); ok {
			return time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, loc), k + sep[1] + j
		}
		if t.Before(ref) {
			t = t.AddDate(0, 0, 1)
		}
		return t, k
	}
	if m := reWithin.FindStringSubmatch(s); m != nil {
		n := 1
		switch strings.ToLower(m[1]) {
		case "a", "an", "one":
		case "two":
			n = 2
		case "three":
			n = 3
		default:
			n, _ = strconv.Atoi(m[1])
		}
		unit := strings.ToLower(m[2])
		switch {
		case strings.HasPrefix(unit, "hour"):
			return ref.Add(time.Duration(n) * time.Hour), len(m[0])
		case strings.HasPrefix(unit, "business"):
			return endOf(addBusinessDays(ref, n), loc), len(m[0])
		case strings.HasPrefix(unit, "week"):
			return endOf(ref.AddDate(0, 0, 7*n), loc), len(m[0])
		default:
			return endOf(ref.AddDate(0, 0, n), loc), len(m[0])
		}
	}
	return time.Time{}, 0
}

// parseDay reads a day at the start of s; the time is its close of business.
func parseDay(s string, ref time.Time, loc *time.Location) (time.Time, int, bool) {
	at := func(d time.Time, hour int) time.Time {
		return time.Date(d.Year(), d.Month(), d.Day(), hour, 0, 0, 0, loc)
	}
	if m := reRelDay.FindString(s); m != "" {
		w := strings.ToLower(strings.Join(strings.Fields(m), " "))
		switch w {
		case "this morning":
			return at(ref, 12), len(m), true
		case "tonight", "this evening":
			return at(ref, 21), len(m), true
		case "tomorrow morning":
			return at(ref.AddDate(0, 0, 1), 12), len(m), true
		case "tomorrow evening":
			return at(ref.AddDate(0, 0, 1), 21), len(m), true
		}
		if strings.HasPrefix(w, "tomorrow") {
			return at(ref.AddDate(0, 0, 1), endOfDay), len(m), true
		}
		return at(ref, endOfDay), len(m), true
	}
	if m := reWeekday.FindStringSubmatch(s); m != nil {
		wd := weekdays[strings.ToLower(m[2])[:3]]
		ahead := (int(wd) - int(ref.Weekday()) + 7) % 7
		if ahead == 0 {
			ahead = 7 // "by Monday" said on a Monday is next week's
		}
		if strings.EqualFold(m[1], "next") && ahead < 7 && int(ref.Weekday()) != 0 && wd > ref.Weekday() {
			// "next Friday" said on a Tuesday: the Friday of next week.
			ahead += 7
		}
		return at(ref.AddDate(0, 0, ahead), endOfDay), len(m[0]), true
	}
	if m := reEndOf.FindStringSubmatch(s); m != nil {
		unit := strings.ToLower(m[1] + m[2])
		switch unit {
		case "day":
			return at(ref, endOfDay), len(m[0]), true
		case "week":
			ahead := (int(time.Friday) - int(ref.Weekday()) + 7) % 7
			return at(ref.AddDate(0, 0, ahead), endOfDay), len(m[0]), true
		default:
			last := time.Date(ref.Year(), ref.Month()+1, 0, 0, 0, 0, 0, loc)
			return at(last, endOfDay), len(m[0]), true
		}
	}
	if m := reNext.FindStringSubmatch(s); m != nil {
		if strings.EqualFold(m[1], "week") {
			ahead := (int(time.Monday) - int(ref.Weekday()) + 7) % 7
			if ahead == 0 {
				ahead = 7
			}
			return at(ref.AddDate(0, 0, ahead), 9), len(m[0]), true
		}
		first := time.Date(ref.Year(), ref.Month()+1, 1, 9, 0, 0, 0, loc)
		return first, len(m[0]), true
	}
	if m := reMonth.FindStringSubmatch(s); m != nil {
		d, _ := strconv.Atoi(m[2])
		if t, ok := makeDate(m[3], months[strings.ToLower(m[1])], d, ref, loc); ok {
			return t, len(m[0]), true
		}
	}
	if m := reDayMon.FindStringSubmatch(s); m != nil {
		d, _ := strconv.Atoi(m[1])
		if t, ok := makeDate(m[3], months[strings.ToLower(m[2])], d, ref, loc); ok {
			return t, len(m[0]), true
		}
	}
	if m := reISO.FindStringSubmatch(s); m != nil {
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		if t, ok := makeDate(m[1], time.Month(mo), d, ref, loc); ok {
			return t, len(m[0]), true
		}
	}
	if m := reNumeric.FindStringSubmatch(s); m != nil {
		// US order (month/day), as in the mail this is tuned on; a first
		// number over 12 can only be a day.
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		mo, d := a, b
		if a > 12 {
			mo, d = b, a
		}
		if t, ok := makeDate(m[3], time.Month(mo), d, ref, loc); ok {
			return t, len(m[0]), true
		}
	}
	return time.Time{}, 0, false
}

// makeDate builds a valid date's close of business; without a year, the
// next such date on or after ref.
func makeDate(year string, mo time.Month, d int, ref time.Time, loc *time.Location) (time.Time, bool) {
	if mo < 1 || mo > 12 || d < 1 || d > 31 {
		return time.Time{}, false
	}
	y := ref.Year()
	explicit := year != ""
	if explicit {
		y, _ = strconv.Atoi(year)
		if y < 100 {
			y += 2000
		}
	}
	t := time.Date(y, mo, d, endOfDay, 0, 0, 0, loc)
	if t.Day() != d {
		return time.Time{}, false // Feb 30
	}
	if !explicit && t.Before(time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, loc)) {
		t = t.AddDate(1, 0, 0)
	}
	return t, true
}

// parseClock reads a clock time: "5pm", "5:30 p.m.", "17:00", "noon".
// A bare number without am/pm or minutes is not a time.
func parseClock(s string) (hour, minute, n int) {
	m := reClock.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, 0
	}
	switch strings.ToLower(m[1]) {
	case "noon":
		return 12, 0, len(m[0])
	case "midnight":
		return 23, 59, len(m[0])
	}
	if m[3] == "" && m[4] == "" {
		return 0, 0, 0
	}
	h, _ := strconv.Atoi(m[2])
	mi, _ := strconv.Atoi(m[3])
	ampm := strings.ToLower(strings.ReplaceAll(m[4], ".", ""))
	switch {
	case h > 23 || mi > 59:
		return 0, 0, 0
	case ampm == "pm" && h < 12:
		h += 12
	case ampm == "am" && h == 12:
		h = 0
	case ampm != "" && h > 12:
		return 0, 0, 0
	}
	return h, mi, len(m[0])
}

func endOf(d time.Time, loc *time.Location) time.Time {
	return time.Date(d.Year(), d.Month(), d.Day(), endOfDay, 0, 0, 0, loc)
}

func addBusinessDays(t time.Time, n int) time.Time {
	for n > 0 {
		t = t.AddDate(0, 0, 1)
		if wd := t.Weekday(); wd != time.Saturday && wd != time.Sunday {
			n--
		}
	}
	return t
}

// Mention is a day or time a mail names ("Thursday at 3pm", "Nov 29").
type Mention struct {
	Time   time.Time
	Clock  bool   // a time of day was named, not only a day
	Phrase string // the words it was read from
}

// maxMentions bounds the days a mail is checked against the calendar for.
const maxMentions = 3

// MentionedTimes returns the first days and times text names (at most
// three, one per day, a named time of day winning over the day alone),
// between the day before ref and 60 days after it, read in loc. Bare
// three-letter weekdays ("sat", "sun") need a time after them: they are
// also words. Durations ("in 2 hours") and deadline words (EOD) are not
// mentions of a time to meet.
func MentionedTimes(text string, ref time.Time, loc *time.Location) []Mention {
	if loc == nil {
		loc = time.UTC
	}
	ref = ref.In(loc)
	if len(text) > 20000 {
		text = text[:20000]
	}
	lo, hi := ref.AddDate(0, 0, -1), ref.AddDate(0, 0, 60)
	var out []Mention
	for i := 0; i < len(text) && len(out) < maxMentions*4; i++ {
		if i > 0 && isWordByte(text[i-1]) || !isWordByte(text[i]) {
			continue
		}
		s := text[i:min(len(text), i+60)]
		if reWithin.MatchString(s) || bareDeadline.MatchString(s) {
			continue
		}
		t, n := parseWhen(s, ref, loc)
		if n == 0 || t.Before(lo) || t.After(hi) {
			continue
		}
		phrase := strings.TrimSpace(s[:n])
		_, _, hasDay := parseDay(s, ref, loc)
		clock := !hasDay || len(phrase) > dayLen(s, ref, loc)
		if !clock && len(phrase) <= 3 && reWeekday.MatchString(phrase) {
			continue // "sat", "sun", "wed" alone
		}
		out = addMention(out, Mention{Time: t, Clock: clock, Phrase: phrase})
		i += n - 1
	}
	if len(out) > maxMentions {
		out = out[:maxMentions]
	}
	return out
}

// dayLen is how many bytes of s name the day alone.
func dayLen(s string, ref time.Time, loc *time.Location) int {
	_, n, _ := parseDay(s, ref, loc)
	return len(strings.TrimSpace(s[:n]))
}

// addMention keeps one mention per day, the one with a time of day.
func addMention(ms []Mention, m Mention) []Mention {
	y, mo, d := m.Time.Date()
	for i, x := range ms {
		if xy, xm, xd := x.Time.Date(); xy == y && xm == mo && xd == d {
			if m.Clock && !x.Clock {
				ms[i] = m
			}
			return ms
		}
	}
	return append(ms, m)
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}
