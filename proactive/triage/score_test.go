package triage

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/store"
)

// Each mass-mail signal that mail without list headers (an Exchange
// server's announcements, a distribution list) still carries, and the
// history that keeps a correspondent's mail personal in spite of them.
func TestBulkSignalsWithoutListHeaders(t *testing.T) {
	owner := "owner@example.com"
	many := func(n int) []string {
		out := []string{owner}
		for i := range n - 1 {
			out = append(out, fmt.Sprintf("colleague%d@example.com", i))
		}
		return out
	}
	base := Mail{From: "pat@example.com", To: []string{owner}, Subject: "Quarterly numbers", Body: "The numbers are in the shared folder.",
		Time: time.Date(2001, 10, 25, 9, 0, 0, 0, houston)}
	tests := []struct {
		name    string
		edit    func(*Mail)
		contact *store.Contact
		want    Category
		factor  string // in the bulk evidence
	}{
		{"a colleague to the owner", func(*Mail) {}, nil, Personal, ""},
		{"no visible recipient", func(m *Mail) { m.To = nil }, nil, Bulk, "no visible recipient"},
		{"a distribution list", func(m *Mail) { m.To = []string{"dl-ga-all_enron_houston@example.com"} }, nil, Bulk, "sent to the list dl-ga-all_enron_houston@example.com"},
		{"a team mailbox", func(m *Mail) { m.From, m.To = "outlook-migration-team@example.com", []string{"someone@example.com"} }, nil, Bulk, "team or role mailbox"},
		{"a role mailbox", func(m *Mail) { m.From, m.To = "public.relations@example.com", []string{"someone@example.com"} }, nil, Bulk, "team or role mailbox"},
		{"a mass mailing", func(m *Mail) { m.To = many(60) }, nil, Bulk, "a mass mailing to 60 recipients"},
		{"a list tag", func(m *Mail) {
			m.Subject = "[EDIS] Fire weather bulletin"
			m.Body += "\nPlease do not reply to this message."
		}, nil, Bulk, "list tag [EDIS]"},
		{"a footer split off as quoted text", func(m *Mail) {
			m.Quoted = "You received these headlines because you requested them. To unsubscribe, manage your subscription here."
		}, nil, Bulk, "list footer"},
		{"a one-way sender to a group", func(m *Mail) { m.To = many(16) }, &store.Contact{Address: "pat@example.com", Inbound: 9}, Bulk, "you never wrote to them"},
		{"a one-way sender to the owner alone", func(*Mail) {}, &store.Contact{Address: "pat@example.com", Inbound: 9}, Personal, ""},
		{"a correspondent's mass mailing", func(m *Mail) { m.To = many(60) }, &store.Contact{Address: "pat@example.com", Inbound: 9, Outbound: 3}, Personal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			m.To = append([]string(nil), base.To...)
			tt.edit(&m)
			r := Score(m, Context{Owner: []string{owner}, Location: houston, Contact: tt.contact})
			if r.Category != tt.want {
				t.Errorf("category %s (bulk evidence %d), want %s: %v", r.Category, r.BulkScore, tt.want, r.Factors)
			}
			if tt.factor != "" && !hasFactor(r, "bulk_evidence", tt.factor) {
				t.Errorf("the bulk evidence does not say %q: %v", tt.factor, r.Factors)
			}
		})
	}
}

func hasFactor(r Result, name, detail string) bool {
	for _, f := range r.Factors {
		if f.Name == name && strings.Contains(f.Detail, detail) {
			return true
		}
	}
	return false
}

// Gmail's labels, as the collector (label ids) and a Takeout import
// (label names) store them, reach the score: spam and trash are ignored
// whoever sent them, a Promotions tab mail is bulk.
func TestGmailLabels(t *testing.T) {
	owner := "owner@example.com"
	vip := &store.Contact{Address: "boss@example.com", Inbound: 20, Outbound: 12}
	raw := "From: Boss <boss@example.com>\r\nTo: " + owner + "\r\nSubject: Contract today\r\nDate: Thu, 25 Oct 2001 09:00:00 -0500\r\n" +
		"Message-ID: <c@example.com>\r\n\r\nUrgent: can you sign the contract by 5pm today?\r\n"
	msg, err := mailparse.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		labels   []string
		category Category
		decision Decision
		factor   string
	}{
		{[]string{"INBOX", "UNREAD"}, Personal, Respond, "request"},
		{[]string{"SPAM", "UNREAD"}, Spam, Ignore, "gmail_spam"},
		{[]string{"Spam"}, Spam, Ignore, "gmail_spam"}, // Takeout
		{[]string{"TRASH"}, Personal, Ignore, "gmail_trash"},
		{[]string{"INBOX", "CATEGORY_PROMOTIONS"}, Personal, Respond, "correspondent"}, // a correspondent's mail stays personal
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.labels, ","), func(t *testing.T) {
			it, _ := msg.Item(mailparse.ItemOptions{Source: "gmail", ExternalID: "m1", Labels: tt.labels})
			r := Score(MailFromItem(it), Context{Owner: []string{owner}, Location: houston, Contact: vip})
			if r.Category != tt.category || r.Decision != tt.decision || !hasFactor(r, tt.factor, "") {
				t.Errorf("%s/%s (score %d), want %s/%s with %s: %v", r.Category, r.Decision, r.Score, tt.category, tt.decision, tt.factor, r.Factors)
			}
		})
	}

	// A stranger's promotion is bulk on Gmail's word alone.
	promo := "From: Shop <deals@shop.example>\r\nTo: " + owner + "\r\nSubject: Your weekend picks\r\nDate: Thu, 25 Oct 2001 09:00:00 -0500\r\n\r\nFresh picks for you.\r\n"
	pm, err := mailparse.Parse([]byte(promo))
	if err != nil {
		t.Fatal(err)
	}
	for labels, want := range map[string]Category{"INBOX": Personal, "INBOX,CATEGORY_PROMOTIONS": Bulk, "Inbox,Category Promotions": Bulk} {
		it, _ := pm.Item(mailparse.ItemOptions{Source: "gmail", ExternalID: "p1", Labels: strings.Split(labels, ",")})
		if r := Score(MailFromItem(it), Context{Owner: []string{owner}, Location: houston}); r.Category != want {
			t.Errorf("labels %s: %s (bulk evidence %d), want %s: %v", labels, r.Category, r.BulkScore, want, r.Factors)
		}
	}
}
