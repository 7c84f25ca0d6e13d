package telegram

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/approval"
)

// MaxMessage is Telegram's limit for a message's text, in UTF-16 code
// units after entity parsing.
const MaxMessage = 4096

// outcomeRoom is kept free in the last part of a proposal message so the
// outcome line fits when the message is edited after the decision.
const outcomeRoom = 400

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// esc escapes text for Telegram's HTML parse mode.
func esc(s string) string { return htmlEscaper.Replace(s) }

// searchMark is a query match as search marks it in a snippet, «word»:
// the owner sees it in bold, not the marks.
var searchMark = regexp.MustCompile(`«([^«»\s]+)»`)

var kindLabel = map[approval.Kind]string{
	approval.KindReply:           "📧 Reply",
	approval.KindEmail:           "📧 New email",
	approval.KindForward:         "📧 Forward",
	approval.KindCalendarCreate:  "📅 New event",
	approval.KindCalendarUpdate:  "📅 Change event",
	approval.KindCalendarDelete:  "📅 Delete event",
	approval.KindCalendarRespond: "📅 Answer invitation",
	approval.KindGitHubComment:   "💬 GitHub comment",
	approval.KindPluginAction:    "🔌 Plugin action",
	approval.KindAutomation:      "⚙️ Standing rule",
}

// renderProposal shows the whole payload — every recipient, the subject
// and the full body; the event's times with their dates and the event as
// it is beside a change (approval.Describe) — never a summary, then every
// warning as a ⚠️ line just above the buttons. It depends only on fields
// that never change, so it can be rendered again to edit the message after
// the decision.
func renderProposal(p *approval.Proposal, loc *time.Location) string {
	var b strings.Builder
	label := kindLabel[p.Kind]
	if label == "" {
		label = string(p.Kind)
	}
	fmt.Fprintf(&b, "<b>%s</b> — %s\n", esc(label), esc(p.Title))
	fields, text := approval.Describe(p, loc)
	for _, f := range fields {
		fmt.Fprintf(&b, "<b>%s:</b> %s\n", esc(f.Name), esc(f.Value))
	}
	if text != "" {
		b.WriteString("\n")
		b.WriteString(esc(text))
		b.WriteString("\n")
	}
	if p.Reason != "" {
		fmt.Fprintf(&b, "\n<i>Why:</i> %s\n", esc(p.Reason))
	}
	if len(p.Warnings) > 0 {
		b.WriteString("\n")
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "⚠️ %s\n", esc(w.Text))
		}
	}
	fmt.Fprintf(&b, "\n<code>%s</code> · expires %s · hash <code>%s</code>", p.ID, p.Expires.In(loc).Format("Mon 15:04"), p.PayloadHash[:12])
	return b.String()
}

// outcome is the line a decided proposal's message ends with.
func outcome(p *approval.Proposal, loc *time.Location) string {
	switch p.State {
	case approval.StateApproved:
		return "✅ <b>Approved</b> — sending…"
	case approval.StateExecuting:
		return "⏳ <b>Approved</b> — sending now…"
	case approval.StateExecuted:
		if p.Kind == approval.KindReply || p.Kind == approval.KindEmail || p.Kind == approval.KindForward {
			return "✅ <b>Sent</b>"
		}
		return "✅ <b>Done</b>"
	case approval.StateFailed:
		return "⚠️ <b>Failed</b>: " + esc(p.Error) + " (not retried)"
	case approval.StateRejected:
		return "❌ <b>Rejected</b>"
	case approval.StateExpired:
		return "⌛ <b>Expired</b> — nothing was sent"
	case approval.StateSnoozed:
		return "⏰ <b>Snoozed</b> until " + p.SnoozeUntil.In(loc).Format("Mon 15:04")
	case approval.StateSuperseded:
		if p.SupersededBy != "" {
			return "↪️ <b>Replaced</b> by a new draft (<code>" + esc(p.SupersededBy) + "</code>) — this one will not be sent"
		}
		return "↪️ <b>Superseded</b> — you already answered; this will not be sent"
	}
	return "<b>" + esc(string(p.State)) + "</b>"
}

// token is one indivisible piece of HTML text.
type token struct {
	s       string
	visible int    // UTF-16 units it shows
	open    string // tag name opened by this token
	close   string // tag name closed by this token
}

func tokenize(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				end = len(s) - i - 1
			}
			t := s[i : i+end+1]
			tok := token{s: t}
			if strings.HasPrefix(t, "</") {
				tok.close = strings.TrimSuffix(t[2:], ">")
			} else {
				name, _, _ := strings.Cut(strings.TrimSuffix(t[1:], ">"), " ")
				tok.open = name
			}
			out = append(out, tok)
			i += end + 1
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 || end > 10 {
				end = 0
			}
			out = append(out, token{s: s[i : i+end+1], visible: 1})
			i += end + 1
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			out = append(out, token{s: s[i : i+n], visible: len(utf16.Encode([]rune{r}))})
			i += n
		}
	}
	return out
}

// splitHTML cuts an HTML message into parts of at most limit visible
// UTF-16 units, preferring line breaks, then spaces; tags open at a cut
// are closed at the end of one part and opened again in the next, and no
// entity is ever cut.
func splitHTML(s string, limit int) []string {
	toks := tokenize(s)
	var parts []string
	type openTag struct{ name, src string }
	var stack []openTag
	start := 0
	for start < len(toks) {
		prefix := ""
		for _, o := range stack {
			prefix += o.src
		}
		// Find the furthest end that fits.
		visible, end, lastNL, lastSpace := 0, start, -1, -1
		for end < len(toks) && visible+toks[end].visible <= limit {
			visible += toks[end].visible
			if toks[end].s == "\n" {
				lastNL = end
			} else if toks[end].s == " " {
				lastSpace = end
			}
			end++
		}
		if end < len(toks) {
			switch {
			case lastNL > start:
				end = lastNL + 1
			case lastSpace > start:
				end = lastSpace + 1
			case end == start:
				end = start + 1 // a single token wider than the limit
			}
		}
		var b strings.Builder
		b.WriteString(prefix)
		for _, t := range toks[start:end] {
			b.WriteString(t.s)
			switch {
			case t.open != "":
				stack = append(stack, openTag{name: t.open, src: t.s})
			case t.close != "" && len(stack) > 0:
				stack = stack[:len(stack)-1]
			}
		}
		for i := len(stack) - 1; i >= 0; i-- {
			if end < len(toks) {
				b.WriteString("</" + stack[i].name + ">")
			}
		}
		part := strings.TrimRight(b.String(), " \n")
		if strings.TrimSpace(stripTags(part)) != "" {
			parts = append(parts, part)
		}
		start = end
	}
	if len(parts) == 0 {
		parts = []string{s}
	}
	return parts
}

func stripTags(s string) string {
	var b strings.Builder
	for _, t := range tokenize(s) {
		if t.open == "" && t.close == "" {
			b.WriteString(t.s)
		}
	}
	return b.String()
}
