package proactive

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// A change is a trend only past a minimum count: "+100% (2 vs 1)" is noise.
func TestTrendsNeedAMinimum(t *testing.T) {
	tests := []struct {
		now, before int
		want        string // "" for no trend
	}{
		{2, 1, ""},
		{9, 3, ""},
		{12, 0, "mail received: 12 (none the week before)"},
		{3, 0, ""},
		{20, 10, "mail received +100% (20 vs 10)"},
		{8, 12, "mail received -33% (8 vs 12)"},
		{11, 10, ""}, // +10% is no trend at any size
	}
	for _, tc := range tests {
		got := trends(&WeekStats{Mail: store.MailStats{Inbound: tc.now}, PrevMail: store.MailStats{Inbound: tc.before}})
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%d vs %d: trends %v, want none", tc.now, tc.before, got)
		case tc.want != "" && !slices.Contains(got, tc.want):
			t.Errorf("%d vs %d: trends %v, want %q", tc.now, tc.before, got, tc.want)
		}
	}
	// Reply speed is compared only with enough replies in both weeks.
	few := &WeekStats{Mail: store.MailStats{OwnerReplies: 2, OwnerReplyMedian: 5 * time.Hour}, PrevMail: store.MailStats{OwnerReplies: 9, OwnerReplyMedian: time.Hour}}
	if got := trends(few); len(got) != 0 {
		t.Errorf("two replies make a trend: %v", got)
	}
	enough := &WeekStats{Mail: store.MailStats{OwnerReplies: 6, OwnerReplyMedian: 5 * time.Hour}, PrevMail: store.MailStats{OwnerReplies: 9, OwnerReplyMedian: time.Hour}}
	if got := trends(enough); !slices.Contains(got, "you answered slower: median 5 hours (was 60 minutes)") {
		t.Errorf("trends %v", got)
	}
}

// The weekly review's counts add up: received is personal + bulk + other.
func TestWeeklyMailCountsAddUp(t *testing.T) {
	d := &BriefingData{Kind: KindWeekly, Day: "2026-11-23",
		PeriodStart: time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), PeriodEnd: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
		Week: &WeekStats{Mail: store.MailStats{Inbound: 5, Personal: 2, Bulk: 1, Outbound: 1},
			Triage: map[string]int{"decision:respond": 1, "decision:notify": 1, "decision:ignore": 3}}}
	text := Render(d, time.UTC)
	for _, want := range []string{
		"Weekly review — Monday, November 16 to Sunday, November 22\n",
		"Mail: 5 received (2 personal, 1 bulk, 2 other), 1 sent",
		"Triage: 5 decided — 1 need you, 1 worth knowing, 3 ignored",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("weekly review lacks %q:\n%s", want, text)
		}
	}
}
