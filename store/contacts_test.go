package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2001, 7, 2, 9, 0, 0, 0, time.UTC)

// mailFixture is one mail for the contact and thread tests.
type mailFixture struct {
	id, thread, subject string
	from                Address
	to                  []Address
	at                  time.Time
	outbound            bool
	meta                map[string]any
	source              string
}

func putMail(t *testing.T, s *Store, f mailFixture) UpsertResult {
	t.Helper()
	src := f.source
	if src == "" {
		src = "maildir"
	}
	meta := map[string]any{"message_id": f.id}
	for k, v := range f.meta {
		meta[k] = v
	}
	it := &Item{Source: src, ExternalID: f.id, Kind: "email", Thread: f.thread, Time: f.at, Title: f.subject, Body: "text of " + f.id, Sender: f.from.Email, Meta: meta}
	var res UpsertResult
	err := s.Tx(context.Background(), func(tx *Tx) error {
		var err error
		res, err = tx.UpsertMail(it, Mail{MessageID: f.id, From: f.from, To: f.to, Outbound: f.outbound}, UpsertOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("upsert %s: %v", f.id, err)
	}
	return res
}

var (
	me    = Address{Email: "Me@Example.com", Name: "Owner"}
	alice = Address{Email: "alice@x.com", Name: "Alice"}
	bob   = Address{Email: "bob@y.com", Name: "Bob"}
	carol = Address{Email: "carol@vip.example", Name: "Carol"}
)

// seedMail stores a small mailbox: a thread with Alice going back and
// forth, a mail to Bob not yet answered, a newsletter, and a mail from a
// VIP not yet answered.
func seedMail(t *testing.T, s *Store) {
	ctx := context.Background()
	if err := s.AddOwnerAddresses(ctx, "config", "me@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVIPRules(ctx, []string{"@VIP.example"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []mailFixture{
		{id: "a1", thread: "t1", subject: "Plan", from: alice, to: []Address{me}, at: t0},
		{id: "a2", thread: "t1", subject: "Re: Plan", from: me, to: []Address{alice}, at: t0.Add(2 * time.Hour)}, // owner from address: outbound
		{id: "a3", thread: "t1", subject: "Re: Plan", from: alice, to: []Address{me}, at: t0.Add(5 * time.Hour)},
		{id: "b1", thread: "t2", subject: "Invoice", from: me, to: []Address{bob, {Email: "ALICE@x.com"}}, at: t0, outbound: true},
		{id: "n1", thread: "t3", subject: "Weekly news", from: Address{Email: "news@list.example"}, to: []Address{me}, at: t0, meta: map[string]any{"list_id": "<news.list.example>"}},
		{id: "c1", thread: "t4", subject: "Board meeting", from: carol, to: []Address{me}, at: t0.Add(time.Hour)},
	} {
		if res := putMail(t, s, f); !res.Created {
			t.Fatalf("%s not created", f.id)
		}
	}
}

func TestUpsertMailCountsContacts(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	seedMail(t, s)

	a, err := s.Contact(ctx, "ALICE@X.COM")
	if err != nil {
		t.Fatal(err)
	}
	want := Contact{Address: "alice@x.com", Name: "Alice", Names: []string{"Alice"}, Inbound: 2, Outbound: 2,
		FirstSeen: t0, LastSeen: t0.Add(5 * time.Hour), LastInbound: t0.Add(5 * time.Hour), LastOutbound: t0.Add(2 * time.Hour),
		OwnerReplies: 1, OwnerReplyMedian: 2 * time.Hour, TheirReplies: 1, TheirReplyMedian: 3 * time.Hour}
	if !contactEqual(*a, want) {
		t.Fatalf("alice = %+v\nwant    %+v", *a, want)
	}
	if _, err := s.Contact(ctx, "me@example.com"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the owner became a contact: %v", err)
	}
	it, err := s.ItemByExternalID(ctx, "maildir", "a2")
	if err != nil {
		t.Fatal(err)
	}
	if it.Meta["outbound"] != true {
		t.Fatalf("mail from an owner address not marked outbound: %v", it.Meta)
	}
	if it, _ := s.ItemByExternalID(ctx, "maildir", "a1"); it.Meta["outbound"] != nil {
		t.Fatalf("inbound mail marked outbound: %v", it.Meta)
	}

	top, err := s.TopContacts(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range top {
		order = append(order, c.Address)
	}
	// VIPs first, then outbound counts double: alice 2*2+2, bob 2*1, news 1.
	if want := []string{"carol@vip.example", "alice@x.com", "bob@y.com", "news@list.example"}; !slices.Equal(order, want) {
		t.Fatalf("top contacts = %v, want %v", order, want)
	}
	if !top[0].VIP || top[1].VIP {
		t.Fatalf("vip flags: %+v %+v", top[0], top[1])
	}
}

func TestUpsertMailNeverCountsTwice(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	seedMail(t, s)
	before, _ := s.Contact(ctx, "alice@x.com")

	// The same item again, and the same Message-ID from another source.
	if res := putMail(t, s, mailFixture{id: "a3", thread: "t1", subject: "Re: Plan", from: alice, to: []Address{me}, at: t0.Add(5 * time.Hour)}); res.Created || res.Changed {
		t.Fatalf("re-upsert = %+v", res)
	}
	if res := putMail(t, s, mailFixture{id: "a3", source: "gmail", thread: "t1", subject: "Re: Plan", from: alice, to: []Address{me}, at: t0.Add(5 * time.Hour)}); !res.Created {
		t.Fatal("the gmail copy was not stored as its own item")
	}
	after, _ := s.Contact(ctx, "alice@x.com")
	if !contactEqual(*before, *after) {
		t.Fatalf("counts changed:\n%+v\n%+v", *before, *after)
	}
	th, err := s.Thread(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if th.Messages != 3 {
		t.Fatalf("thread counts %d messages, want 3", th.Messages)
	}
}

func TestVIPRulesAndManualVIP(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	seedMail(t, s)
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.SetVIP("BOB@y.com", true) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.SetVIP("dora@z.com", true) }); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVIPRules(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{"bob@y.com": true, "dora@z.com": true, "carol@vip.example": false, "alice@x.com": false} {
		c, err := s.Contact(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if c.VIP != want {
			t.Errorf("%s vip = %v, want %v", addr, c.VIP, want)
		}
	}
	// A contact known only as a VIP gets real dates from its first mail.
	putMail(t, s, mailFixture{id: "d1", thread: "t9", subject: "Hi", from: Address{Email: "dora@z.com"}, to: []Address{me}, at: t0})
	if d, _ := s.Contact(ctx, "dora@z.com"); !d.FirstSeen.Equal(t0) || !d.LastSeen.Equal(t0) || d.Inbound != 1 || !d.VIP {
		t.Fatalf("dora = %+v", d)
	}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.SetVIP("not an address", true) }); err == nil {
		t.Fatal("SetVIP accepted a non-address")
	}
}

func TestOwnerAddresses(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.AddOwnerAddresses(ctx, "config", "B@example.com", "a@example.com", "b@example.com"); err != nil {
		t.Fatal(err)
	}
	got, err := s.OwnerAddresses(ctx)
	if err != nil || !slices.Equal(got, []string{"a@example.com", "b@example.com"}) {
		t.Fatalf("owner addresses = %v, %v", got, err)
	}
	if err := s.AddOwnerAddresses(ctx, "config", "nobody"); err == nil {
		t.Fatal("accepted an address without @")
	}
}

func contactEqual(a, b Contact) bool {
	return a.Address == b.Address && a.Name == b.Name && slices.Equal(a.Names, b.Names) && a.Inbound == b.Inbound &&
		a.Outbound == b.Outbound && a.FirstSeen.Equal(b.FirstSeen) && a.LastSeen.Equal(b.LastSeen) &&
		a.LastInbound.Equal(b.LastInbound) && a.LastOutbound.Equal(b.LastOutbound) && a.VIP == b.VIP &&
		a.OwnerReplies == b.OwnerReplies && a.OwnerReplyMedian == b.OwnerReplyMedian &&
		a.TheirReplies == b.TheirReplies && a.TheirReplyMedian == b.TheirReplyMedian
}

// A mail to more recipients than one statement may bind still counts
// every one of them.
func TestUpsertMailHugeRecipientList(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.AddOwnerAddresses(ctx, "config", "me@example.com"); err != nil {
		t.Fatal(err)
	}
	var to []Address
	for i := 0; i < 3000; i++ {
		to = append(to, Address{Email: fmt.Sprintf("r%d@example.org", i), Name: fmt.Sprintf("R %d", i)})
	}
	putMail(t, s, mailFixture{id: "all-hands", thread: "h", subject: "All hands", from: me, to: to, at: t0})
	for _, addr := range []string{"r0@example.org", "r777@example.org", "r2999@example.org"} {
		c, err := s.Contact(ctx, addr)
		if err != nil || c.Outbound != 1 {
			t.Fatalf("%s: %+v, %v", addr, c, err)
		}
	}
	th, err := s.Thread(ctx, "h")
	if err != nil || len(th.Participants) != 3001 {
		t.Fatalf("participants %d, %v", len(th.Participants), err)
	}
}
