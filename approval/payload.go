package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
)

// Canonical returns the payload as the gate stores it: decoded strictly
// into the kind's payload type, checked, and marshalled again, so the same
// action always has the same bytes and hash.
func Canonical(kind Kind, payload any) ([]byte, error) {
	if payload == nil {
		return nil, errors.New("proposal has no payload")
	}
	switch kind {
	case KindReply, KindEmail, KindForward:
		var p EmailPayload
		if err := decodeInto(payload, &p); err != nil {
			return nil, err
		}
		if err := p.check(kind); err != nil {
			return nil, err
		}
		return json.Marshal(p)
	case KindCalendarCreate, KindCalendarUpdate, KindCalendarDelete, KindCalendarRespond:
		var p CalendarPayload
		if err := decodeInto(payload, &p); err != nil {
			return nil, err
		}
		if err := p.check(kind); err != nil {
			return nil, err
		}
		return json.Marshal(p)
	case KindGitHubComment:
		var p GitHubCommentPayload
		if err := decodeInto(payload, &p); err != nil {
			return nil, err
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		return json.Marshal(p)
	case KindPluginAction:
		var p PluginActionPayload
		if err := decodeInto(payload, &p); err != nil {
			return nil, err
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		return json.Marshal(p)
	case KindAutomation:
		var p AutomationPayload
		if err := decodeInto(payload, &p); err != nil {
			return nil, err
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		return json.Marshal(p)
	default:
		return nil, fmt.Errorf("unknown proposal kind %q", kind)
	}
}

// HashPayload is the sha256 (hex) of canonical payload bytes.
func HashPayload(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// HashProposal is the hash the owner approves: of the payload alone when
// there are no warnings (HashPayload), else of the payload and the
// warnings' JSON, so the warnings shown can never change without the hash
// changing.
func HashProposal(canonical []byte, warnings []Warning) string {
	if len(warnings) == 0 {
		return HashPayload(canonical)
	}
	w, err := json.Marshal(warnings)
	if err != nil {
		panic(err) // two strings per warning always marshal
	}
	h := sha256.New()
	h.Write(canonical)
	h.Write([]byte{0})
	h.Write(w)
	return hex.EncodeToString(h.Sum(nil))
}

// IdempotencyKey is the key an execution of this proposal and payload
// carries to the remote side: the same for every attempt, different for an
// edited payload.
func IdempotencyKey(id, payloadHash string) string {
	sum := sha256.Sum256([]byte("omnibrain-outbox\x00" + id + "\x00" + payloadHash))
	return hex.EncodeToString(sum[:16])
}

// decodeInto fills dst from a typed payload, a pointer to one, JSON bytes
// or any value that marshals to the payload's JSON; unknown fields are an
// error so nothing the owner did not see can ride along.
func decodeInto(payload any, dst any) error {
	var raw []byte
	switch v := payload.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	case string:
		raw = []byte(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if dec.More() {
		return errors.New("payload: trailing data after the JSON object")
	}
	return nil
}

// noBreak rejects line breaks in header-bound fields: a CR or LF there
// would let a draft add headers (recipients!) the owner never saw.
func noBreak(field, v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("payload: %s must be one line", field)
	}
	return nil
}

func checkAddresses(field string, list []string) error {
	for _, a := range list {
		if err := noBreak(field, a); err != nil {
			return err
		}
		if _, err := mail.ParseAddress(a); err != nil {
			return fmt.Errorf("payload: %s: %q is not an email address: %v", field, a, err)
		}
	}
	return nil
}

func (p *EmailPayload) check(kind Kind) error {
	if len(p.To) == 0 {
		return errors.New("payload: an email needs at least one recipient (to)")
	}
	for field, list := range map[string][]string{"to": p.To, "cc": p.Cc, "bcc": p.Bcc} {
		if err := checkAddresses(field, list); err != nil {
			return err
		}
	}
	for field, v := range map[string]string{"subject": p.Subject, "in_reply_to": p.InReplyTo, "thread_id": p.ThreadID} {
		if err := noBreak(field, v); err != nil {
			return err
		}
	}
	for _, r := range p.References {
		if err := noBreak("references", r); err != nil {
			return err
		}
	}
	if strings.TrimSpace(p.Body) == "" {
		return errors.New("payload: the email body is empty")
	}
	if kind == KindReply && p.InReplyTo == "" && p.ThreadID == "" {
		return errors.New("payload: a reply needs in_reply_to or thread_id")
	}
	return nil
}

func (p *CalendarPayload) check(kind Kind) error {
	for field, v := range map[string]string{"calendar_id": p.CalendarID, "event_id": p.EventID, "summary": p.Summary, "location": p.Location, "time_zone": p.TimeZone} {
		if err := noBreak(field, v); err != nil {
			return err
		}
	}
	if err := checkAddresses("attendees", p.Attendees); err != nil {
		return err
	}
	switch p.SendUpdates {
	case "", "all", "externalOnly", "none":
	default:
		return fmt.Errorf("payload: send_updates %q: want all, externalOnly or none", p.SendUpdates)
	}
	switch kind {
	case KindCalendarCreate:
		if strings.TrimSpace(p.Summary) == "" || p.Start.IsZero() || p.End.IsZero() {
			return errors.New("payload: a new event needs summary, start and end")
		}
	default:
		if p.EventID == "" {
			return fmt.Errorf("payload: %s needs event_id", kind)
		}
	}
	if !p.Start.IsZero() && !p.End.IsZero() && !p.End.After(p.Start) {
		return errors.New("payload: the event must end after it starts")
	}
	if kind == KindCalendarRespond {
		switch p.Response {
		case "accepted", "declined", "tentative":
		default:
			return fmt.Errorf("payload: response %q: want accepted, declined or tentative", p.Response)
		}
	}
	return nil
}

// githubName is what GitHub allows in an owner or repository name. The
// names go into the request path unescaped, so anything else ("?", "#",
// "..", "%2F") could send the comment to another endpoint than the issue
// the owner approved.
var githubName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

func validGitHubName(s string) bool {
	return githubName.MatchString(s) && s != "." && s != ".."
}

func (p *GitHubCommentPayload) check() error {
	switch {
	case !validGitHubName(p.Owner) || !validGitHubName(p.Repo):
		return fmt.Errorf("payload: a GitHub comment needs owner and repo (letters, digits, '.', '_', '-'), not %q/%q", p.Owner, p.Repo)
	case p.Number <= 0:
		return errors.New("payload: a GitHub comment needs the issue or pull request number")
	case strings.TrimSpace(p.Body) == "":
		return errors.New("payload: the comment body is empty")
	}
	return nil
}

func (p *PluginActionPayload) check() error {
	if p.Plugin == "" || p.Tool == "" {
		return errors.New("payload: a plugin action needs plugin and tool")
	}
	if p.Endpoint != "" {
		if p.Method == "" {
			return errors.New("payload: a plugin call needs its method")
		}
		if len(p.Body) > 0 && !json.Valid(p.Body) {
			return errors.New("payload: a plugin call's body is not valid JSON")
		}
		return nil
	}
	if len(bytes.TrimSpace(p.Arguments)) == 0 {
		p.Arguments = json.RawMessage("{}")
	}
	if !json.Valid(p.Arguments) {
		return errors.New("payload: plugin arguments are not valid JSON")
	}
	return nil
}

func (p *AutomationPayload) check() error {
	if p.Rule != RuleRankSender {
		return fmt.Errorf("payload: unknown automation rule %q (want %s)", p.Rule, RuleRankSender)
	}
	p.Sender = strings.ToLower(strings.TrimSpace(p.Sender))
	if p.Sender == "" {
		return errors.New("payload: the rule needs a sender")
	}
	if err := checkAddresses("sender", []string{p.Sender}); err != nil {
		return err
	}
	if p.Weight == 0 || p.Weight < -30 || p.Weight > 30 {
		return fmt.Errorf("payload: weight %d is not in -30..30 or is 0", p.Weight)
	}
	if strings.TrimSpace(p.Detail) == "" {
		return errors.New("payload: the rule needs a detail saying what it does")
	}
	return noBreak("detail", p.Detail)
}

// defaultTitle names a proposal from its payload when the proposer gave no title.
func defaultTitle(kind Kind, canonical []byte) string {
	switch kind {
	case KindReply, KindEmail, KindForward:
		var p EmailPayload
		json.Unmarshal(canonical, &p)
		verb := map[Kind]string{KindReply: "Reply to", KindEmail: "Email to", KindForward: "Forward to"}[kind]
		return fmt.Sprintf("%s %s: %s", verb, strings.Join(p.To, ", "), p.Subject)
	case KindCalendarCreate, KindCalendarUpdate, KindCalendarDelete, KindCalendarRespond:
		var p CalendarPayload
		json.Unmarshal(canonical, &p)
		verb := map[Kind]string{KindCalendarCreate: "Create event", KindCalendarUpdate: "Update event", KindCalendarDelete: "Delete event", KindCalendarRespond: "Answer invitation"}[kind]
		if p.Summary != "" {
			return verb + ": " + p.Summary
		}
		return verb + " " + p.EventID
	case KindGitHubComment:
		var p GitHubCommentPayload
		json.Unmarshal(canonical, &p)
		return fmt.Sprintf("Comment on %s/%s#%d", p.Owner, p.Repo, p.Number)
	case KindPluginAction:
		var p PluginActionPayload
		json.Unmarshal(canonical, &p)
		return fmt.Sprintf("Run %s/%s", p.Plugin, p.Tool)
	case KindAutomation:
		var p AutomationPayload
		json.Unmarshal(canonical, &p)
		return fmt.Sprintf("Rule: %s %s %+d", p.Rule, p.Sender, p.Weight)
	}
	return string(kind)
}

// HasText reports whether a kind has free text the owner can edit or
// have redrafted (WithBody replaces it).
func HasText(kind Kind) bool {
	switch kind {
	case KindReply, KindEmail, KindForward, KindCalendarCreate, KindCalendarUpdate, KindGitHubComment:
		return true
	}
	return false
}

// WithBody returns the payload with its free text replaced: the body of a
// mail or comment, the description of an event.
func WithBody(kind Kind, canonical []byte, body string) (any, error) {
	switch kind {
	case KindReply, KindEmail, KindForward:
		var p EmailPayload
		if err := json.Unmarshal(canonical, &p); err != nil {
			return nil, err
		}
		p.Body = body
		return p, nil
	case KindCalendarCreate, KindCalendarUpdate:
		var p CalendarPayload
		if err := json.Unmarshal(canonical, &p); err != nil {
			return nil, err
		}
		p.Description = body
		return p, nil
	case KindGitHubComment:
		var p GitHubCommentPayload
		if err := json.Unmarshal(canonical, &p); err != nil {
			return nil, err
		}
		p.Body = body
		return p, nil
	}
	return nil, fmt.Errorf("a %s proposal has no text to edit; give the whole payload instead", kind)
}

// Body returns the free text WithBody replaces ("" for kinds without one).
func Body(kind Kind, canonical []byte) string {
	switch kind {
	case KindReply, KindEmail, KindForward:
		var p EmailPayload
		json.Unmarshal(canonical, &p)
		return p.Body
	case KindCalendarCreate, KindCalendarUpdate:
		var p CalendarPayload
		json.Unmarshal(canonical, &p)
		return p.Description
	case KindGitHubComment:
		var p GitHubCommentPayload
		json.Unmarshal(canonical, &p)
		return p.Body
	}
	return ""
}
