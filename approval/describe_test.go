package approval

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestEventTimeIsHonest(t *testing.T) {
	utc := time.UTC
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, utc) }
	cases := []struct {
		name string
		c    CalendarPayload
		want string
	}{
		{"same day", CalendarPayload{Start: at(2026, 3, 2, 10, 0), End: at(2026, 3, 2, 11, 0)}, "Mon 2 Mar 2026 10:00–11:00 UTC"},
		{"a year apart on the same date", CalendarPayload{Start: at(2026, 3, 2, 10, 0), End: at(2027, 3, 2, 11, 0)},
			"Mon 2 Mar 2026 10:00 – Tue 2 Mar 2027 11:00 UTC"},
		{"over midnight", CalendarPayload{Start: at(2026, 3, 2, 23, 0), End: at(2026, 3, 3, 1, 0)}, "Mon 2 Mar 2026 23:00 – Tue 3 Mar 2026 01:00 UTC"},
		{"one all-day day", CalendarPayload{Start: at(2026, 3, 2, 0, 0), End: at(2026, 3, 3, 0, 0), AllDay: true}, "Mon 2 Mar 2026 (all day)"},
		{"28 all-day days", CalendarPayload{Start: at(2026, 3, 1, 0, 0), End: at(2026, 3, 29, 0, 0), AllDay: true},
			"Sun 1 Mar 2026 – Sat 28 Mar 2026 (all day, 28 days)"},
		{"all-day across a DST change", CalendarPayload{Start: time.Date(2026, 3, 28, 0, 0, 0, 0, mustZone(t, "Europe/Berlin")),
			End: time.Date(2026, 3, 30, 0, 0, 0, 0, mustZone(t, "Europe/Berlin")), AllDay: true, TimeZone: "Europe/Berlin"},
			"Sat 28 Mar 2026 – Sun 29 Mar 2026 (all day, 2 days)"},
		{"in the event's zone", CalendarPayload{Start: at(2026, 3, 10, 14, 0), End: at(2026, 3, 10, 15, 30), TimeZone: "Europe/Berlin"},
			"Tue 10 Mar 2026 15:00–16:30 CET"},
	}
	for _, c := range cases {
		if got := EventTime(c.c, utc); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A change, delete or answer shows the event as it is beside the new
// values; an update without a start shows the time it will really have.
func TestDescribeCalendarChanges(t *testing.T) {
	start := time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)
	cur := &CalendarPayload{EventID: "ev1", Summary: "Planning", Start: start, End: start.Add(time.Hour), Attendees: []string{"alice@example.com", "bob@example.org"}}
	show := func(kind Kind, c CalendarPayload, cur *CalendarPayload) string {
		raw, _ := json.Marshal(c)
		fields, _ := Describe(&Proposal{Kind: kind, Payload: raw, Current: cur}, time.UTC)
		var b strings.Builder
		for _, f := range fields {
			b.WriteString(f.Name + ": " + f.Value + "\n")
		}
		return b.String()
	}
	cases := []struct {
		name string
		got  string
		want []string
	}{
		{"retitle only", show(KindCalendarUpdate, CalendarPayload{EventID: "ev1", Summary: "Planning (moved)"}, cur),
			[]string{"Event now: Planning\n", "When now: Tue 3 Mar 2026 10:00–11:00 UTC\n", "Attendees now: alice@example.com, bob@example.org\n",
				"New title: Planning (moved)\n", "New time: unchanged (Tue 3 Mar 2026 10:00–11:00 UTC)\n", "New attendees: unchanged (alice@example.com, bob@example.org)\n"}},
		{"moved: the end follows", show(KindCalendarUpdate, CalendarPayload{EventID: "ev1", Start: start.AddDate(0, 0, 1)}, cur),
			[]string{"New time: Wed 4 Mar 2026 10:00–11:00 UTC\n"}},
		{"delete", show(KindCalendarDelete, CalendarPayload{EventID: "ev1"}, cur),
			[]string{"Event now: Planning\n", "When now: Tue 3 Mar 2026 10:00–11:00 UTC\n", "Change: delete the event\n", "Cancellations sent to: all attendees\n"}},
		{"answer", show(KindCalendarRespond, CalendarPayload{EventID: "ev1", Response: "declined"}, cur),
			[]string{"Event now: Planning\n", "Your answer: declined\n"}},
		{"unknown event", show(KindCalendarDelete, CalendarPayload{EventID: "ev9"}, nil),
			[]string{"Event: ev9 (not in the local store: its title, time and attendees are not known here)\n"}},
	}
	for _, c := range cases {
		for _, w := range c.want {
			if !strings.Contains(c.got, w) {
				t.Errorf("%s lacks %q:\n%s", c.name, w, c.got)
			}
		}
	}
}
