package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/store"
)

// draftContext is what the gate knows about a draft besides its payload when it
// works out the warnings: the item answered and the event changed, as the
// store has them, and the run's provenance.
type draftContext struct {
	kind    Kind
	prov    *Provenance
	item    *store.Item      // the item answered or forwarded; nil if none
	current *CalendarPayload // the event changed, deleted or answered; nil if none or unknown
}

// recipient is one address a proposal reaches.
type recipient struct {
	field string // to, cc, bcc, attendee
	addr  string // lower-case
	name  string // display name, if given
}

// gather reads what the warnings need from the store. An item or event the
// store does not have is no error: the warnings then say less.
func (g *Gate) gather(ctx context.Context, d Draft, canonical []byte) (draftContext, error) {
	dc := draftContext{kind: d.Kind, prov: d.Provenance}
	if d.ItemID != 0 {
		it, err := g.st.Item(ctx, d.ItemID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return dc, err
		default:
			dc.item = it
		}
	}
	switch d.Kind {
	case KindCalendarUpdate, KindCalendarDelete, KindCalendarRespond:
		var p CalendarPayload
		json.Unmarshal(canonical, &p)
		it, err := g.st.ItemByExternalID(ctx, "calendar", p.EventID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return dc, err
		default:
			dc.current = eventOf(it)
		}
	}
	return dc, nil
}

// eventOf is a stored calendar item as a payload: what the event is now.
func eventOf(it *store.Item) *CalendarPayload {
	c := &CalendarPayload{EventID: it.ExternalID, Summary: it.Title, Start: it.Time.UTC()}
	c.Location, _ = it.Meta["location"].(string)
	c.TimeZone, _ = it.Meta["time_zone"].(string)
	c.CalendarID, _ = it.Meta["calendar_id"].(string)
	c.AllDay, _ = it.Meta["all_day"].(bool)
	if s, _ := it.Meta["end"].(string); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			c.End = t.UTC()
		}
	}
	atts, _ := it.Meta["attendees"].([]any)
	for _, a := range atts {
		if m, ok := a.(map[string]any); ok {
			if e, _ := m["email"].(string); e != "" {
				c.Attendees = append(c.Attendees, e)
			}
		}
	}
	return c
}

// warn works out what the owner should know before approving: who the
// proposal reaches and where those addresses came from (the owner's
// request, the item answered, the owner's correspondence, or untrusted
// content), look-alike addresses, a Reply-To that is not the sender, and
// changed attendees. The result is deterministic for the same inputs, so
// the same draft proposed again hashes the same.
func (g *Gate) warn(ctx context.Context, dc draftContext, canonical []byte) ([]Warning, error) {
	out := []Warning{}
	add := func(code, format string, args ...any) {
		w := Warning{Code: code, Text: fmt.Sprintf(format, args...)}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	textFromContent(dc, canonical, add)
	rs := recipientsOf(dc.kind, canonical)
	if len(rs) == 0 {
		return out, nil
	}
	owners, err := g.st.OwnerAddresses(ctx)
	if err != nil {
		return nil, err
	}
	corr, err := g.st.Correspondents(ctx)
	if err != nil {
		return nil, err
	}
	known := newCorrespondents(owners, corr)
	parties := partiesOf(dc.item)
	invited := map[string]bool{}
	if dc.current != nil {
		for _, a := range dc.current.Attendees {
			invited[strings.ToLower(a)] = true
			parties[strings.ToLower(a)] = true
		}
	}
	for _, r := range rs {
		if why := lookalike(r.addr, r.name, known); why != "" {
			add(WarnLookalike, "Look-alike %s: %s.", r.field, why)
		}
		if dc.prov != nil && !dc.prov.named(r.addr) && !parties[r.addr] {
			if src, ok := dc.prov.source(r.addr); ok {
				add(WarnRecipientFromContent, "%s (%s) was not named by you and is not part of what is answered: the address comes from untrusted content, %s.", r.addr, r.field, src)
			}
		}
		// An event's attendees are invited already: an update is not new
		// to them.
		if !known.has[r.addr] && !invited[r.addr] {
			add(WarnNewRecipient, "You have never exchanged mail with %s (%s).", r.addr, r.field)
		}
		if at := addressIn(r.name); at != "" && at != r.addr {
			add(WarnReplyToDiffers, "The name “%s” shows %s, but the %s is %s.", r.name, at, r.field, r.addr)
		}
	}
	if dc.kind == KindReply && dc.item != nil {
		replyToDiffers(dc.item, rs, add)
	}
	if dc.kind == KindCalendarUpdate {
		attendeesChanged(dc.current, canonical, add)
	}
	return out, nil
}

// Shortest texts compared for copying: a title or subject, a line of a
// body. Shorter ones match content by chance.
const (
	minCopiedTitle = 12
	minCopiedLine  = 24
)

// textFromContent warns when a title, subject or line of a new text is
// word for word in untrusted content the run read and not in the owner's
// words: an injected "send this exact text" is recognisable even when it
// goes to the owner's own address. A reply's subject comes from the mail
// answered and a forward's body is that mail, by design; a reply may quote
// the mail it answers.
func textFromContent(dc draftContext, canonical []byte, add func(code, format string, args ...any)) {
	if dc.prov == nil {
		return
	}
	var title, body string
	switch dc.kind {
	case KindEmail, KindReply:
		var p EmailPayload
		json.Unmarshal(canonical, &p)
		body = p.Body
		if dc.kind == KindEmail {
			title = p.Subject
		}
	case KindCalendarCreate, KindCalendarUpdate:
		var p CalendarPayload
		json.Unmarshal(canonical, &p)
		title, body = p.Summary, p.Description
	case KindGitHubComment:
		var p GitHubCommentPayload
		json.Unmarshal(canonical, &p)
		body = p.Body
	default:
		return
	}
	if utf8.RuneCountInString(fold(title)) >= minCopiedTitle {
		if src, ok := dc.prov.copied(title); ok {
			add(WarnTextFromContent, "The title “%s” was not written by you: it stands word for word in untrusted content, %s.", title, src)
		}
	}
	var quoted string
	if dc.item != nil {
		quoted = fold(dc.item.Body)
	}
	for line := range strings.Lines(body) {
		f := fold(line)
		if utf8.RuneCountInString(f) < minCopiedLine || quoted != "" && strings.Contains(quoted, f) {
			continue
		}
		if src, ok := dc.prov.copied(line); ok {
			add(WarnTextFromContent, "The text “%s” was not written by you: it stands word for word in untrusted content, %s.", strings.TrimSpace(line), src)
			return // one line says it; the owner reads the rest
		}
	}
}

// keepFromContent carries an edited proposal's recipient_from_content
// warnings over to the new version for the recipients it still has: the
// run that found those addresses in content is over, but where they came
// from has not changed. (Each such warning begins with its address.)
func keepFromContent(old, fresh []Warning, rs []recipient) []Warning {
	out := slices.Clone(fresh)
	for _, w := range old {
		if w.Code != WarnRecipientFromContent {
			continue
		}
		addr, _, _ := strings.Cut(w.Text, " ")
		if slices.ContainsFunc(rs, func(r recipient) bool { return r.addr == addr }) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// recipientsOf lists whom a payload reaches: a mail's To, Cc and Bcc, an
// event's attendees.
func recipientsOf(kind Kind, canonical []byte) []recipient {
	var out []recipient
	addAll := func(field string, list []string) {
		for _, s := range list {
			a, err := mail.ParseAddress(s)
			if err != nil {
				continue // Canonical refused it already
			}
			addr := strings.ToLower(a.Address)
			if !slices.ContainsFunc(out, func(r recipient) bool { return r.addr == addr }) {
				out = append(out, recipient{field: field, addr: addr, name: a.Name})
			}
		}
	}
	switch {
	case isEmailKind(kind):
		var p EmailPayload
		json.Unmarshal(canonical, &p)
		addAll("recipient", p.To)
		addAll("Cc recipient", p.Cc)
		addAll("Bcc recipient", p.Bcc)
	case kind == KindCalendarCreate || kind == KindCalendarUpdate:
		var p CalendarPayload
		json.Unmarshal(canonical, &p)
		addAll("attendee", p.Attendees)
	}
	return out
}

// partiesOf are the addresses of the item answered: its sender, Reply-To,
// recipients, organizer and attendees.
func partiesOf(it *store.Item) map[string]bool {
	out := map[string]bool{}
	if it == nil {
		return out
	}
	add := func(s string) {
		if a, err := mail.ParseAddress(s); err == nil {
			out[strings.ToLower(a.Address)] = true
		}
	}
	add(it.Sender)
	for _, k := range []string{"from", "organizer"} {
		if s, ok := it.Meta[k].(string); ok {
			add(s)
		}
	}
	for _, k := range []string{"to", "cc", "reply_to"} {
		for _, s := range metaList(it.Meta[k]) {
			add(s)
		}
	}
	atts, _ := it.Meta["attendees"].([]any)
	for _, a := range atts {
		if m, ok := a.(map[string]any); ok {
			if e, _ := m["email"].(string); e != "" {
				add(e)
			}
		}
	}
	return out
}

func metaList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// addressIn is the first address-like text in a display name ("" if none).
func addressIn(name string) string {
	var first string
	eachAddress(name, func(a string) {
		if first == "" {
			first = a
		}
	})
	return first
}

// replyToDiffers warns when a reply goes to the answered mail's Reply-To
// rather than its sender, or when the sender's name shows an address the
// mail did not come from.
func replyToDiffers(it *store.Item, rs []recipient, add func(code, format string, args ...any)) {
	from := strings.ToLower(it.Sender)
	if s, ok := it.Meta["from"].(string); ok && s != "" {
		from = strings.ToLower(s)
	}
	for _, rt := range metaList(it.Meta["reply_to"]) {
		rt = strings.ToLower(rt)
		if rt != from && slices.ContainsFunc(rs, func(r recipient) bool { return r.addr == rt }) {
			add(WarnReplyToDiffers, "The reply goes to the Reply-To address %s, not to the sender %s.", rt, from)
		}
	}
	if name, _ := it.Meta["from_name"].(string); name != "" {
		if at := addressIn(name); at != "" && at != from {
			add(WarnReplyToDiffers, "The mail answered shows the sender as “%s”, but it came from %s.", name, from)
		}
	}
}

// attendeesChanged warns when an update replaces who is invited.
func attendeesChanged(current *CalendarPayload, canonical []byte, add func(code, format string, args ...any)) {
	var p CalendarPayload
	json.Unmarshal(canonical, &p)
	if len(p.Attendees) == 0 {
		return // the attendees stay as they are
	}
	if current == nil {
		add(WarnAttendeesChanged, "The attendees become %s; who is invited now is not known here.", strings.Join(p.Attendees, ", "))
		return
	}
	norm := func(l []string) []string {
		var out []string
		for _, s := range l {
			if a, err := mail.ParseAddress(s); err == nil {
				out = append(out, strings.ToLower(a.Address))
			}
		}
		return out
	}
	now, next := norm(current.Attendees), norm(p.Attendees)
	var added, removed []string
	for _, a := range next {
		if !slices.Contains(now, a) {
			added = append(added, a)
		}
	}
	for _, a := range now {
		if !slices.Contains(next, a) {
			removed = append(removed, a)
		}
	}
	switch {
	case len(added) > 0 && len(removed) > 0:
		add(WarnAttendeesChanged, "Attendees change: %s invited, %s removed (they are told).", strings.Join(added, ", "), strings.Join(removed, ", "))
	case len(added) > 0:
		add(WarnAttendeesChanged, "Attendees change: %s invited.", strings.Join(added, ", "))
	case len(removed) > 0:
		add(WarnAttendeesChanged, "Attendees change: %s removed (they are told).", strings.Join(removed, ", "))
	}
}
