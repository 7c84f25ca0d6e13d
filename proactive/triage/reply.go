package triage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

// ReplyPayload is the reply to m with body, threaded exactly: it answers
// m's Message-ID (In-Reply-To), carries m's References plus that id, and
// stays in m's Gmail thread. It goes to Reply-To if the mail set one.
func ReplyPayload(m Mail, body string) approval.EmailPayload {
	to := m.ReplyTo
	if len(to) == 0 {
		to = []string{m.From}
	}
	p := approval.EmailPayload{To: slices.Clone(to), Subject: ReplySubject(m.Subject), Body: body}
	if m.MessageID != "" {
		p.InReplyTo = "<" + strings.Trim(m.MessageID, "<>") + ">"
		for _, r := range m.References {
			p.References = append(p.References, "<"+strings.Trim(r, "<>")+">")
		}
		if !slices.Contains(p.References, p.InReplyTo) {
			p.References = append(p.References, p.InReplyTo)
		}
	}
	if m.Source == "gmail" {
		p.ThreadID = m.Thread
	}
	return p
}

// ReplySubject is "Re: subject", without stacking prefixes.
func ReplySubject(subject string) string {
	s := strings.TrimSpace(subject)
	if s == "" {
		return "Re: (no subject)"
	}
	if clean := store.CleanSubject(s); clean != s && strings.HasPrefix(strings.ToLower(s), "re") {
		return "Re: " + clean
	}
	return "Re: " + s
}

// TemplateReply is the acknowledgement proposed when no model can draft:
// plain, honest, and the owner sees it (marked as a template) before it
// can be sent.
func TemplateReply(m Mail, ownerName string, deadline *Deadline, loc *time.Location) string {
	greeting := "Hello,"
	if first := firstName(m.FromName); first != "" {
		greeting = "Hi " + first + ","
	}
	promise := "I will get back to you shortly."
	if deadline != nil {
		promise = fmt.Sprintf("I will get back to you before %s.", deadline.Time.In(loc).Format("Monday, January 2 at 15:04"))
	}
	sign := "Best regards"
	if ownerName != "" {
		sign += ",\n" + ownerName
	}
	return fmt.Sprintf("%s\n\nThank you for your message, I have received it. %s\n\n%s", greeting, promise, sign)
}

// firstName is the first word of a display name ("Carson, Mike" → Mike).
func firstName(display string) string {
	display = strings.Trim(strings.TrimSpace(display), `"'`)
	if display == "" || strings.Contains(display, "@") {
		return ""
	}
	if _, first, ok := strings.Cut(display, ","); ok && strings.TrimSpace(first) != "" {
		display = first // "Last, First"
	}
	f := strings.Fields(display)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
