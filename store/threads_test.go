package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func threadKeys(ths []*Thread) []string {
	var out []string
	for _, th := range ths {
		out = append(out, th.Thread)
	}
	return out
}

func TestThreadState(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	seedMail(t, s)

	th, err := s.Thread(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if th.Subject != "Plan" || th.Messages != 3 || th.Inbound != 2 || th.Outbound != 1 ||
		!th.FirstTime.Equal(t0) || !th.LastTime.Equal(t0.Add(5*time.Hour)) || th.LastSender != "alice@x.com" ||
		th.AwaitingReply || !th.OwesReply || !slices.Equal(th.Participants, []string{"alice@x.com", "me@example.com"}) {
		t.Fatalf("t1 = %+v", th)
	}
	if _, err := s.Thread(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing thread: %v", err)
	}

	day := t0.Add(24 * time.Hour)
	awaiting, err := s.ThreadsAwaitingReply(ctx, day, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := threadKeys(awaiting); !slices.Equal(got, []string{"t2"}) {
		t.Fatalf("awaiting = %v, want [t2]", got)
	}
	owing, err := s.ThreadsOwingReply(ctx, day, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Oldest first; the newsletter (t3) owes nothing.
	if got := threadKeys(owing); !slices.Equal(got, []string{"t4", "t1"}) {
		t.Fatalf("owing = %v, want [t4 t1]", got)
	}
	// The cutoff is "older than": nothing is older than t0.
	if none, _ := s.ThreadsAwaitingReply(ctx, t0, 0); len(none) != 0 {
		t.Fatalf("awaiting before t0 = %v", threadKeys(none))
	}
	if one, _ := s.ThreadsOwingReply(ctx, day, 1); len(one) != 1 || one[0].Thread != "t4" {
		t.Fatalf("limit 1 = %v", threadKeys(one))
	}

	// Forwarding Alice's mail to Bob does not answer Alice.
	putMail(t, s, mailFixture{id: "f1", thread: "t7", subject: "Numbers", from: alice, to: []Address{me}, at: t0})
	putMail(t, s, mailFixture{id: "f2", thread: "t7", subject: "FW: Numbers", from: me, to: []Address{bob}, at: t0.Add(10 * time.Minute)})
	if a, _ := s.Contact(ctx, "alice@x.com"); a.OwnerReplies != 1 || a.OwnerReplyMedian != 2*time.Hour {
		t.Fatalf("a forward counted as answering alice: %+v", a)
	}

	// An out-of-office answer neither owes a reply nor counts as one.
	dan := Address{Email: "dan@z.com"}
	putMail(t, s, mailFixture{id: "o1", thread: "t6", subject: "Lunch?", from: me, to: []Address{dan}, at: t0})
	putMail(t, s, mailFixture{id: "o2", thread: "t6", subject: "Out of office", from: dan, to: []Address{me}, at: t0.Add(time.Minute),
		meta: map[string]any{"auto_submitted": "auto-replied"}})
	if th, _ := s.Thread(ctx, "t6"); th.OwesReply || th.AwaitingReply {
		t.Fatalf("t6 after an auto-reply = %+v", th)
	}
	if d, _ := s.Contact(ctx, "dan@z.com"); d.TheirReplies != 0 {
		t.Fatalf("an auto-reply counted as dan answering: %+v", d)
	}

	// Bob answers: the owner no longer waits.
	putMail(t, s, mailFixture{id: "b2", thread: "t2", subject: "RE: Invoice", from: bob, to: []Address{me}, at: t0.Add(30 * time.Minute)})
	if th, _ := s.Thread(ctx, "t2"); th.AwaitingReply || !th.OwesReply || th.Messages != 2 {
		t.Fatalf("t2 after bob's answer = %+v", th)
	}
	if b, _ := s.Contact(ctx, "bob@y.com"); b.TheirReplies != 1 || b.TheirReplyMedian != 30*time.Minute {
		t.Fatalf("bob = %+v", b)
	}
}

// Imports arrive in any order: the reply stored before the mail it answers
// still gets its reply time, and the thread's latest mail stays the latest.
func TestThreadOutOfOrder(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.AddOwnerAddresses(ctx, "config", "me@example.com"); err != nil {
		t.Fatal(err)
	}
	putMail(t, s, mailFixture{id: "r2", thread: "t5", subject: "RE: Q", from: me, to: []Address{alice}, at: t0.Add(90 * time.Minute)})
	putMail(t, s, mailFixture{id: "r1", thread: "t5", subject: "Q", from: alice, to: []Address{me}, at: t0})
	a, err := s.Contact(ctx, "alice@x.com")
	if err != nil {
		t.Fatal(err)
	}
	if a.OwnerReplies != 1 || a.OwnerReplyMedian != 90*time.Minute || a.TheirReplies != 0 {
		t.Fatalf("alice = %+v", a)
	}
	th, _ := s.Thread(ctx, "t5")
	if th.Subject != "Q" || !th.AwaitingReply || th.OwesReply || !th.LastTime.Equal(t0.Add(90*time.Minute)) || th.LastSender != "me@example.com" {
		t.Fatalf("t5 = %+v", th)
	}

	// A mail slotted between them re-pairs both reply times.
	putMail(t, s, mailFixture{id: "r1b", thread: "t5", subject: "RE: Q", from: alice, to: []Address{me}, at: t0.Add(30 * time.Minute)})
	a, _ = s.Contact(ctx, "alice@x.com")
	if a.OwnerReplies != 1 || a.OwnerReplyMedian != time.Hour || a.TheirReplies != 0 {
		t.Fatalf("after the middle mail: %+v", a)
	}

	// Months later is a new topic, not a reply.
	putMail(t, s, mailFixture{id: "r3", thread: "t5", subject: "RE: Q", from: alice, to: []Address{me}, at: t0.Add(60 * 24 * time.Hour)})
	if a, _ := s.Contact(ctx, "alice@x.com"); a.TheirReplies != 0 {
		t.Fatalf("a mail two months later counted as a reply: %+v", a)
	}
}

func TestCleanSubject(t *testing.T) {
	for in, want := range map[string]string{
		"RE: re: FW: Budget":         "Budget",
		"Re[2]: Budget":              "Budget",
		"[ILUG] Re: Hayes Accura":    "Hayes Accura",
		"AW: WG: Termin":             "Termin",
		"Fwd:Budget":                 "Budget",
		"Reply to all: not a prefix": "Reply to all: not a prefix",
	} {
		if got := CleanSubject(in); got != want {
			t.Errorf("CleanSubject(%q) = %q, want %q", in, got, want)
		}
	}
}
