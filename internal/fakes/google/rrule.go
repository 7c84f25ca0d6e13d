package fakegoogle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file expands RFC 5545 recurrence rules the way Calendar does for
// singleEvents=true: in the event's own time zone, so a 09:00 weekly
// meeting stays at 09:00 local time across a DST change.

type rrule struct {
	freq       string
	interval   int
	count      int
	until      time.Time
	untilDate  bool
	byDay      []byDay
	byMonthDay []int
	byMonth    []int
}

type byDay struct {
	n   int // 0: every such weekday; 1..5 / -1..-5: the nth in the month
	day time.Weekday
}

var weekdays = map[string]time.Weekday{"MO": time.Monday, "TU": time.Tuesday, "WE": time.Wednesday, "TH": time.Thursday, "FR": time.Friday, "SA": time.Saturday, "SU": time.Sunday}

func parseRRule(line string, loc *time.Location) (*rrule, error) {
	body, ok := strings.CutPrefix(line, "RRULE:")
	if !ok {
		return nil, fmt.Errorf("not an RRULE: %q", line)
	}
	r := &rrule{interval: 1}
	for _, kv := range strings.Split(body, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("bad RRULE part %q", kv)
		}
		switch k {
		case "FREQ":
			switch v {
			case "DAILY", "WEEKLY", "MONTHLY", "YEARLY":
				r.freq = v
			default:
				return nil, fmt.Errorf("unsupported FREQ %q", v)
			}
		case "INTERVAL":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad INTERVAL %q", v)
			}
			r.interval = n
		case "COUNT":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad COUNT %q", v)
			}
			r.count = n
		case "UNTIL":
			t, dateOnly, err := parseICalTime(v, loc)
			if err != nil {
				return nil, fmt.Errorf("bad UNTIL: %w", err)
			}
			r.until, r.untilDate = t, dateOnly
		case "BYDAY":
			for _, d := range strings.Split(v, ",") {
				name := d[max(0, len(d)-2):]
				wd, ok := weekdays[name]
				if !ok {
					return nil, fmt.Errorf("bad BYDAY %q", d)
				}
				n := 0
				if pre := d[:len(d)-2]; pre != "" {
					var err error
					if n, err = strconv.Atoi(strings.TrimPrefix(pre, "+")); err != nil || n == 0 || n < -5 || n > 5 {
						return nil, fmt.Errorf("bad BYDAY %q", d)
					}
				}
				r.byDay = append(r.byDay, byDay{n: n, day: wd})
			}
		case "BYMONTHDAY":
			for _, d := range strings.Split(v, ",") {
				n, err := strconv.Atoi(d)
				if err != nil || n == 0 || n < -31 || n > 31 {
					return nil, fmt.Errorf("bad BYMONTHDAY %q", d)
				}
				r.byMonthDay = append(r.byMonthDay, n)
			}
		case "BYMONTH":
			for _, d := range strings.Split(v, ",") {
				n, err := strconv.Atoi(d)
				if err != nil || n < 1 || n > 12 {
					return nil, fmt.Errorf("bad BYMONTH %q", d)
				}
				r.byMonth = append(r.byMonth, n)
			}
		case "WKST":
			if v != "MO" {
				return nil, fmt.Errorf("fake calendar supports only WKST=MO")
			}
		default:
			return nil, fmt.Errorf("fake calendar does not support RRULE part %s", k)
		}
	}
	if r.freq == "" {
		return nil, fmt.Errorf("RRULE without FREQ")
	}
	return r, nil
}

// parseICalTime reads 20240108T090000Z, 20240108T090000 (in loc) or 20240108.
func parseICalTime(v string, loc *time.Location) (time.Time, bool, error) {
	switch {
	case len(v) == 8:
		t, err := time.ParseInLocation("20060102", v, loc)
		return t, true, err
	case strings.HasSuffix(v, "Z"):
		t, err := time.Parse("20060102T150405Z", v)
		return t, false, err
	default:
		t, err := time.ParseInLocation("20060102T150405", v, loc)
		return t, false, err
	}
}

// parseExdates reads the EXDATE lines of a recurrence.
func parseExdates(lines []string, loc *time.Location) ([]time.Time, error) {
	var out []time.Time
	for _, l := range lines {
		if !strings.HasPrefix(l, "EXDATE") {
			continue
		}
		props, vals, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("bad EXDATE %q", l)
		}
		zone := loc
		for _, p := range strings.Split(props, ";")[1:] {
			if tz, ok := strings.CutPrefix(p, "TZID="); ok {
				z, err := time.LoadLocation(tz)
				if err != nil {
					return nil, fmt.Errorf("EXDATE zone: %w", err)
				}
				zone = z
			}
		}
		for _, v := range strings.Split(vals, ",") {
			t, _, err := parseICalTime(v, zone)
			if err != nil {
				return nil, fmt.Errorf("bad EXDATE %q: %w", v, err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// occurrences returns the starts of the recurrence (dtstart in its zone)
// that begin before to, at most limit of them. allDay compares dates only.
func occurrences(recurrence []string, dtstart time.Time, allDay bool, to time.Time, limit int) ([]time.Time, error) {
	loc := dtstart.Location()
	var rule *rrule
	for _, l := range recurrence {
		if strings.HasPrefix(l, "RRULE:") {
			r, err := parseRRule(l, loc)
			if err != nil {
				return nil, err
			}
			rule = r
		} else if !strings.HasPrefix(l, "EXDATE") {
			return nil, fmt.Errorf("fake calendar does not support recurrence line %q", l)
		}
	}
	if rule == nil {
		return []time.Time{dtstart}, nil
	}
	exdates, err := parseExdates(recurrence, loc)
	if err != nil {
		return nil, err
	}
	excluded := func(t time.Time) bool {
		return slices.ContainsFunc(exdates, func(x time.Time) bool {
			if allDay {
				return x.Format("20060102") == t.Format("20060102")
			}
			return x.Equal(t)
		})
	}
	h, mi, sec := dtstart.Clock()
	y0, m0, d0 := dtstart.Date()
	var out []time.Time
	n := 0
	for period := 0; period < 100000; period++ {
		var days []time.Time // candidate dates (midnight, loc) of this period
		switch rule.freq {
		case "DAILY":
			days = []time.Time{time.Date(y0, m0, d0+period*rule.interval, 0, 0, 0, 0, loc)}
		case "WEEKLY":
			monday := time.Date(y0, m0, d0-(int(dtstart.Weekday())+6)%7+7*period*rule.interval, 0, 0, 0, 0, loc)
			wds := rule.byDay
			if len(wds) == 0 {
				wds = []byDay{{day: dtstart.Weekday()}}
			}
			for _, bd := range wds {
				days = append(days, monday.AddDate(0, 0, (int(bd.day)+6)%7))
			}
		case "MONTHLY":
			first := time.Date(y0, m0+time.Month(period*rule.interval), 1, 0, 0, 0, 0, loc)
			days = monthDays(first, rule, d0)
		case "YEARLY":
			months := rule.byMonth
			if len(months) == 0 {
				months = []int{int(m0)}
			}
			for _, mo := range months {
				first := time.Date(y0+period*rule.interval, time.Month(mo), 1, 0, 0, 0, 0, loc)
				days = append(days, monthDays(first, rule, d0)...)
			}
		}
		slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
		for _, day := range days {
			if rule.freq == "DAILY" && len(rule.byDay) > 0 && !slices.ContainsFunc(rule.byDay, func(b byDay) bool { return b.day == day.Weekday() }) {
				continue
			}
			t := time.Date(day.Year(), day.Month(), day.Day(), h, mi, sec, 0, loc)
			if t.Before(dtstart) {
				continue
			}
			if !rule.until.IsZero() {
				if rule.untilDate && t.Format("20060102") > rule.until.Format("20060102") {
					return out, nil
				}
				if !rule.untilDate && t.After(rule.until) {
					return out, nil
				}
			}
			if rule.count > 0 && n >= rule.count {
				return out, nil
			}
			n++
			if !t.Before(to) || len(out) >= limit {
				return out, nil
			}
			if !excluded(t) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// monthDays lists the candidate days of one month for MONTHLY/YEARLY rules.
func monthDays(first time.Time, r *rrule, defaultDay int) []time.Time {
	last := first.AddDate(0, 1, -1).Day()
	var out []time.Time
	add := func(d int) {
		if d >= 1 && d <= last {
			out = append(out, first.AddDate(0, 0, d-1))
		}
	}
	switch {
	case len(r.byMonthDay) > 0:
		for _, d := range r.byMonthDay {
			if d < 0 {
				d = last + 1 + d
			}
			add(d)
		}
	case len(r.byDay) > 0:
		for _, bd := range r.byDay {
			var matches []int
			for d := 1; d <= last; d++ {
				if first.AddDate(0, 0, d-1).Weekday() == bd.day {
					matches = append(matches, d)
				}
			}
			switch {
			case bd.n == 0:
				for _, d := range matches {
					add(d)
				}
			case bd.n > 0 && bd.n <= len(matches):
				add(matches[bd.n-1])
			case bd.n < 0 && -bd.n <= len(matches):
				add(matches[len(matches)+bd.n])
			}
		}
	default:
		add(defaultDay)
	}
	return out
}
