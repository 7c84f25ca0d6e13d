package triage

import (
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// Mail is what triage reads from a mail item (see the item conventions).
type Mail struct {
	ItemID     int64
	Source     string
	ExternalID string
	Thread     string
	Time       time.Time

	From, FromName string
	To, Cc         []string
	ReplyTo        []string
	Subject        string
	Body           string // the new text, without quotes and signature
	Quoted         string // quoted replies, signature and list footer

	MessageID  string
	InReplyTo  string
	References []string

	ListID, ListUnsubscribe, Precedence, AutoSubmitted string
	HTML                                               bool
	Attachments                                        int
	Labels                                             []string
	Outbound                                           bool
}

// MailFromItem reads a mail item; it works on items as stored (meta lists
// come back from JSON as []any) and as built by the collectors.
func MailFromItem(it *store.Item) Mail {
	m := Mail{
		ItemID: it.ID, Source: it.Source, ExternalID: it.ExternalID, Thread: it.Thread, Time: it.Time,
		From: strings.ToLower(strings.TrimSpace(it.Sender)), Subject: it.Title, Body: it.Body, Quoted: it.Quoted,
	}
	meta := it.Meta
	if m.From == "" {
		m.From = strings.ToLower(metaString(meta, "from"))
	}
	m.FromName = metaString(meta, "from_name")
	m.To = lowerAll(metaList(meta, "to"))
	m.Cc = lowerAll(metaList(meta, "cc"))
	m.ReplyTo = lowerAll(metaList(meta, "reply_to"))
	m.MessageID = metaString(meta, "message_id")
	m.InReplyTo = metaString(meta, "in_reply_to")
	m.References = metaList(meta, "references")
	m.ListID = metaString(meta, "list_id")
	m.ListUnsubscribe = metaString(meta, "list_unsubscribe")
	m.Precedence = strings.ToLower(metaString(meta, "precedence"))
	m.AutoSubmitted = strings.ToLower(metaString(meta, "auto_submitted"))
	m.HTML = metaBool(meta, "html")
	m.Outbound = metaBool(meta, "outbound")
	m.Labels = metaList(meta, "labels")
	if a, ok := meta["attachments"].([]any); ok {
		m.Attachments = len(a)
	}
	return m
}

func metaString(meta map[string]any, key string) string {
	s, _ := meta[key].(string)
	return strings.TrimSpace(s)
}

func metaBool(meta map[string]any, key string) bool {
	b, _ := meta[key].(bool)
	return b
}

func metaList(meta map[string]any, key string) []string {
	switch v := meta[key].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		if v != "" {
			return []string{v}
		}
	}
	return nil
}

func lowerAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Recipients is everyone the mail was sent to.
func (m Mail) Recipients() int { return len(m.To) + len(m.Cc) }

// HasLabel reports whether the mail carries a Gmail label, given as the
// API's label id ("SPAM", "CATEGORY_PROMOTIONS"). A Takeout export names
// the same labels "Spam" and "Category Promotions".
func (m Mail) HasLabel(id string) bool {
	return slices.ContainsFunc(m.Labels, func(l string) bool {
		return strings.EqualFold(strings.ReplaceAll(strings.TrimSpace(l), " ", "_"), id)
	})
}
