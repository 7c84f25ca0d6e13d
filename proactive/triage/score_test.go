package triage

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
