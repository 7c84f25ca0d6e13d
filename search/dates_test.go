package search

import (
	"testing"
	"time"
)

func TestParseDates(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// A Wednesday evening in Berlin, just after midnight UTC would be the next day.
	now := time.Date(2026, 3, 11, 23, 30, 0, 0, berlin)
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, berlin) }
	tests := []struct {
		in           string
		since, until time.Time
		rest         string
	}{
		{"budget mail yesterday", d(2026, 3, 10), d(2026, 3, 11), "budget mail"},
		{"what came in today", d(2026, 3, 11), d(2026, 3, 12), "what came in"},
		{"meetings tomorrow", d(2026, 3, 12), d(2026, 3, 13), "meetings"},
		{"the day before yesterday invoice", d(2026, 3, 9), d(2026, 3, 10), "invoice"},
		{"notes from last week", d(2026, 3, 2), d(2026, 3, 9), "notes from"},
		{"this week standup", d(2026, 3, 9), d(2026, 3, 16), "standup"},
		{"report this month", d(2026, 3, 1), d(2026, 4, 1), "report"},
		{"report last month", d(2026, 2, 1), d(2026, 3, 1), "report"},
		{"taxes last year", d(2025, 1, 1), d(2026, 1, 1), "taxes"},
		{"party on Dec 30", d(2025, 12, 30), d(2025, 12, 31), "party"},
		{"party on December 30th, 2001", d(2001, 12, 30), d(2001, 12, 31), "party"},
		{"call on March 2", d(2026, 3, 2), d(2026, 3, 3), "call"},
		{"call on 14 May 2023", d(2023, 5, 14), d(2023, 5, 15), "call"},
		{"what happened on 1 February, 2023?", d(2023, 2, 1), d(2023, 2, 2), "what happened ?"},
		{"trip in March", d(2026, 3, 1), d(2026, 4, 1), "trip"},
		{"trip in April", d(2025, 4, 1), d(2025, 5, 1), "trip"},
		{"setback in October 2023", d(2023, 10, 1), d(2023, 11, 1), "setback"},
		{"enron 2001-05-14 deal", d(2001, 5, 14), d(2001, 5, 15), "enron deal"},
		{"things in 2019", d(2019, 1, 1), d(2020, 1, 1), "things"},
		{"last 3 days", d(2026, 3, 8), d(2026, 3, 12), ""},
		{"on friday lunch", d(2026, 3, 6), d(2026, 3, 7), "lunch"},
		{"last wednesday", d(2026, 3, 4), d(2026, 3, 5), ""},
		{"on wednesday", d(2026, 3, 11), d(2026, 3, 12), ""},
		// Requests about the future look ahead (issue 16).
		{"can we meet on Tuesday?", d(2026, 3, 17), d(2026, 3, 18), "can we meet ?"},
		{"who wants dinner on Tuesday?", d(2026, 3, 17), d(2026, 3, 18), "who wants dinner ?"},
		{"can we meet on Wednesday?", d(2026, 3, 18), d(2026, 3, 19), "can we meet ?"},
		{"will you be free this Wednesday", d(2026, 3, 11), d(2026, 3, 12), "will you be free"},
		{"standup next friday", d(2026, 3, 13), d(2026, 3, 14), "standup"},
		{"what did Anna say she wants on Tuesday", d(2026, 3, 10), d(2026, 3, 11), "what did Anna say she wants"},
		{"dinner on Tuesday", d(2026, 3, 10), d(2026, 3, 11), "dinner"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			r, rest, ok := parseDates(tc.in, now)
			if !ok {
				t.Fatalf("no date found")
			}
			if !r.Since.Equal(tc.since) || !r.Until.Equal(tc.until) {
				t.Errorf("range [%v, %v), want [%v, %v)", r.Since, r.Until, tc.since, tc.until)
			}
			if rest != tc.rest {
				t.Errorf("rest %q, want %q", rest, tc.rest)
			}
		})
	}
	for _, in := range []string{"invoice 2001", "you may want this", "2001-02-30 is not a day", "in 1066", "route 66 march", "the 45th of may"} {
		if r, _, ok := parseDates(in, now); ok {
			t.Errorf("%q: found a date %v – %v", in, r.Since, r.Until)
		}
	}
}

func FuzzParseDates(f *testing.F) {
	for _, s := range []string{"yesterday", "on Dec 30", "in March 2001", "2001-05-14", "last 999 months", "on 31 feb", "İstanbul in may"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		r, rest, ok := parseDates(s, now)
		if !ok {
			return
		}
		if !r.Since.Before(r.Until) {
			t.Fatalf("%q: empty range %v – %v", s, r.Since, r.Until)
		}
		if len(rest) > len(s)+1 {
			t.Fatalf("%q: rest %q longer than input", s, rest)
		}
	})
}
