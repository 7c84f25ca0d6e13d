package triage

import (
	"fmt"
	"testing"
	"time"
)

func TestMentionedTimes(t *testing.T) {
	houston, _ := time.LoadLocation("America/Chicago")
	ref := time.Date(2001, 11, 28, 9, 15, 0, 0, houston) // a Wednesday
	for _, tc := range []struct {
		text string
		want string
	}{
		{"Can we meet Thursday at 3pm to go over the filing?", "2001-11-29 15:00 clock"},
		{"How about tomorrow 10am, or Friday?", "2001-11-29 10:00 clock; 2001-11-30 17:00 day"},
		{"Lunch on Dec 3? I sat down with Ann yesterday.", "2001-12-03 17:00 day"},
		{"Please send it by EOD or within 2 hours.", ""},
		{"The meeting is at 2:30 p.m.", "2001-11-28 14:30 clock"},
		{"Sun is out; see you sat 11am", "2001-12-01 11:00 clock"},
		{"The 1999 contract and the 10/3/1998 letter.", ""},
	} {
		var got string
		for i, m := range MentionedTimes(tc.text, ref, houston) {
			if i > 0 {
				got += "; "
			}
			kind := "day"
			if m.Clock {
				kind = "clock"
			}
			got += fmt.Sprintf("%s %s", m.Time.Format("2006-01-02 15:04"), kind)
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.text, got, tc.want)
		}
	}
}
