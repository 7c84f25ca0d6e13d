package proactive

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

func followupKeys(t *testing.T, st *store.Store) []string {
	t.Helper()
	fs, err := st.OpenFollowups(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		who := f.Contact
		out = append(out, f.Kind+":"+who)
	}
	sort.Strings(out)
	return out
}

func TestFollowups(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2001, 10, 25, 9, 0, 0, 0, houston)
	w := newWorld(t, now)
	day := 24 * time.Hour
	w.mail(t, "o1@example.com", "Owen <"+ownerAddr+">", "Alice <alice@example.com>", "Contract draft", now.Add(-4*day), "Here is the draft. Comments?")
	w.mail(t, "o2@example.com", "Owen <"+ownerAddr+">", "bob@example.com", "Quick one", now.Add(-1*day), "Are you in tomorrow?")
	w.mail(t, "o3@example.com", "Owen <"+ownerAddr+">", "carol@example.com", "Ancient", now.Add(-40*day), "Long ago")
	w.mail(t, "b1@example.com", "Big Boss <boss@example.com>", ownerAddr, "Plan review", now.Add(-3*day), "Please review the plan.")
	w.mail(t, "u1@example.com", "Stranger <stranger@example.net>", ownerAddr, "Hello there", now.Add(-3*day), "Do you have a minute?")
	for i, d := range []int{80, 60, 45, 30} {
		w.mail(t, "d"+string(rune('a'+i))+"@example.com", "Dave <dave@example.com>", ownerAddr, "Update "+string(rune('A'+i)), now.Add(-time.Duration(d)*day), "News.")
	}
	w.mail(t, "od@example.com", "Owen <"+ownerAddr+">", "dave@example.com", "Re: Update D", now.Add(-20*day), "Thanks.")

	res, err := w.engine.Followups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"awaiting_reply:alice@example.com", "gone_quiet:dave@example.com", "owes_reply:boss@example.com"}
	if got := followupKeys(t, w.st); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("open follow-ups %v, want %v", got, want)
	}
	if len(res.Opened) != 3 || res.Nudges != 0 {
		t.Errorf("first pass opened %d, nudged %d; want 3 and 0 (alice waits 4 days, nudges come after 5)", len(res.Opened), res.Nudges)
	}
	fyi := 0
	for _, n := range w.notifications(t) {
		if strings.HasPrefix(n.Key, "followup:") {
			fyi++
			if n.Level != "fyi" {
				t.Errorf("follow-up %s is %s, want fyi", n.Key, n.Level)
			}
		}
	}
	if fyi != 3 {
		t.Errorf("%d follow-up notifications, want 3", fyi)
	}

	// Two days later: alice still silent → one nudge, threaded under the
	// owner's mail, proposed once.
	w.clock.Set(now.Add(2 * day))
	res, err = w.engine.Followups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Opened) != 0 || res.Nudges != 1 {
		t.Fatalf("second pass opened %d, nudged %d; want 0 and 1", len(res.Opened), res.Nudges)
	}
	props, _ := w.gate.List(ctx, approval.ListOptions{})
	var nudge *approval.Proposal
	for _, p := range props {
		if strings.HasPrefix(p.Title, "Nudge") {
			nudge = p
		}
	}
	if nudge == nil {
		t.Fatal("no nudge proposal")
	}
	var pl approval.EmailPayload
	json.Unmarshal(nudge.Payload, &pl)
	if pl.To[0] != "alice@example.com" || pl.InReplyTo != "<o1@example.com>" || pl.Subject != "Re: Contract draft" || !strings.Contains(pl.Body, "following up") {
		t.Errorf("nudge payload %+v", pl)
	}
	if res, _ := w.engine.Followups(ctx); res.Nudges != 0 {
		t.Error("a second nudge for the same wait")
	}
	// Alice answers: her follow-up closes.
	w.mail(t, "a2@example.com", "Alice <alice@example.com>", ownerAddr, "Re: Contract draft", now.Add(2*day+time.Hour), "Looks good.")
	w.clock.Set(now.Add(2*day + 2*time.Hour))
	if _, err := w.engine.Followups(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range followupKeys(t, w.st) {
		if strings.HasPrefix(k, "awaiting_reply:alice") {
			t.Error("alice answered but her follow-up is still open")
		}
	}
}
