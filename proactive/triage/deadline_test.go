package triage

import (
	"testing"
	"time"
	"unicode/utf8"
)

func TestFindDeadline(t *testing.T) {
	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	// Thursday 25 October 2001, 10:00 in Houston.
	ref := time.Date(2001, 10, 25, 10, 0, 0, 0, chicago)
	at := func(mo time.Month, d, h, m int) time.Time { return time.Date(2001, mo, d, h, m, 0, 0, chicago) }
	tests := []struct {
		text string
		want time.Time // zero: no deadline
	}{
		{"Please send the numbers by Friday.", at(10, 26, 17, 0)},
		{"Can you get this to me by tomorrow?", at(10, 26, 17, 0)},
		{"I need it by 5pm", at(10, 25, 17, 0)},
		{"I need it by 5:30 p.m. today", at(10, 25, 17, 30)},
		{"need it by 9am", at(10, 26, 9, 0)}, // 9am has passed: tomorrow
		{"due by noon tomorrow", at(10, 26, 12, 0)},
		{"Deadline: October 30th", at(10, 30, 17, 0)},
		{"deadline is Oct. 29, 2001", at(10, 29, 17, 0)},
		{"please respond no later than 10/31", at(10, 31, 17, 0)},
		{"by 11/2/01 please", at(11, 2, 17, 0)},
		{"by Monday at 3pm", at(10, 29, 15, 0)},
		{"by Thursday", at(11, 1, 17, 0)}, // said on a Thursday: next week's
		{"by next Tuesday", at(10, 30, 17, 0)},
		{"by the end of the week", at(10, 26, 17, 0)},
		{"by end of month", at(10, 31, 17, 0)},
		{"within 2 days", at(10, 27, 17, 0)},
		{"within 3 business days", at(10, 30, 17, 0)},
		{"in 4 hours", at(10, 25, 14, 0)},
		{"Let's finish this EOD", at(10, 25, 17, 0)},
		{"by COB tomorrow", at(10, 26, 17, 0)},
		{"before 2001-11-15", at(11, 15, 17, 0)},
		{"by 3pm Friday", at(10, 26, 15, 0)},
		{"Two dates: by Nov 5 or by Friday", at(10, 26, 17, 0)}, // the earliest
		{"I spoke to him today.", time.Time{}},
		{"by the way, nice job", time.Time{}},
		{"due to the weather", time.Time{}},
		{"by 2 people", time.Time{}},
		{"sent by John", time.Time{}},
		{"by October 20", time.Time{}},  // in the past this year; next year is too far to matter? no: next year's
		{"by 13/45", time.Time{}},       // not a date
		{"by February 30", time.Time{}}, // not a date
		{"before 25:00", time.Time{}},   // not a time
		{"until further notice", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, ok := FindDeadline(tt.text, ref, chicago)
			if tt.text == "by October 20" {
				// A date already past this year means next year's.
				if !ok || !got.Time.Equal(time.Date(2002, 10, 20, 17, 0, 0, 0, chicago)) {
					t.Errorf("got %v %v, want 2002-10-20 17:00", got.Time, ok)
				}
				return
			}
			if tt.want.IsZero() {
				if ok {
					t.Errorf("found deadline %s from %q", got.Time, got.Phrase)
				}
				return
			}
			if !ok || !got.Time.Equal(tt.want) {
				t.Errorf("got %v (%q, %v), want %v", got.Time.In(chicago), got.Phrase, ok, tt.want)
			}
		})
	}
}

func TestFindDeadlineIsInTheOwnersZone(t *testing.T) {
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	ref := time.Date(2024, 5, 1, 23, 0, 0, 0, time.UTC) // Thursday 08:00 in Tokyo
	got, ok := FindDeadline("by 5pm", ref, tokyo)
	if want := time.Date(2024, 5, 2, 17, 0, 0, 0, tokyo); !ok || !got.Time.Equal(want) {
		t.Errorf("by 5pm for a Tokyo owner = %v, want %v", got.Time, want)
	}
}

func FuzzFindDeadline(f *testing.F) {
	for _, s := range []string{"by Friday 3pm", "due 10/31/2001", "no later than Oct 30th, 2001", "within 99 business days", "by 12:99 pm", "by next week", "deadline: 2001-02-30"} {
		f.Add(s)
	}
	chicago, _ := time.LoadLocation("America/Chicago")
	ref := time.Date(2001, 10, 25, 10, 0, 0, 0, chicago)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := FindDeadline(s, ref, chicago)
		if !ok {
			return
		}
		if d.Time.Before(ref) || d.Time.After(ref.AddDate(1, 0, 0)) {
			t.Errorf("deadline %v outside [ref, ref+1y] from %q", d.Time, s)
		}
		if !utf8.ValidString(s) {
			return
		}
		if !utf8.ValidString(d.Phrase) {
			t.Errorf("phrase %q is not valid UTF-8", d.Phrase)
		}
	})
}
