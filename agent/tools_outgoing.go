package agent

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/store"
)

// The outgoing tools. Each one only builds a draft; the agent hands it to
// the approval gate, and only the owner's approval of that exact payload
// lets the executor act. Their descriptions say so, so the model does not
// tell the owner something was sent. The model's text loses any data
// delimiter it repeated: those are for the model, never for the owner or
// a recipient.

const pendingNote = " Creates a proposal that waits for the owner's approval; nothing is sent or changed until the owner approves it."

type sendEmailArgs struct {
	To      []string `json:"to" jsonschema:"recipient addresses"`
	Cc      []string `json:"cc,omitempty"`
	Subject string   `json:"subject"`
	Body    string   `json:"body" jsonschema:"plain text, exactly what would be sent"`
}

func sendEmailTool() (*Tool, error) {
	return NewProposalTool("send_email", "Propose a new email."+pendingNote,
		func(_ context.Context, a sendEmailArgs) (approval.Draft, error) {
			if err := checkAddresses(a.To, a.Cc); err != nil {
				return approval.Draft{}, err
			}
			if len(a.To) == 0 {
				return approval.Draft{}, errors.New("to needs at least one address")
			}
			return approval.Draft{
				Kind:    approval.KindEmail,
				Title:   fmt.Sprintf("Email to %s: %s", strings.Join(a.To, ", "), a.Subject),
				Payload: &approval.EmailPayload{To: a.To, Cc: a.Cc, Subject: untrusted.Strip(a.Subject), Body: untrusted.Strip(a.Body)},
			}, nil
		})
}

type replyArgs struct {
	ItemID   int64    `json:"item_id" jsonschema:"the mail to answer (its item id)"`
	Body     string   `json:"body" jsonschema:"plain text of the reply, exactly what would be sent"`
	ReplyAll bool     `json:"reply_all,omitempty" jsonschema:"also answer the other recipients"`
	Cc       []string `json:"cc,omitempty"`
}

func replyTool(d ToolDeps) (*Tool, error) {
	return NewProposalTool("reply_email", "Propose a reply to a stored mail."+pendingNote,
		func(ctx context.Context, a replyArgs) (approval.Draft, error) {
			it, err := d.Items.Item(ctx, a.ItemID)
			if err != nil {
				return approval.Draft{}, err
			}
			if it.Kind != "email" {
				return approval.Draft{}, fmt.Errorf("item %d is a %s, not a mail", it.ID, it.Kind)
			}
			if err := checkAddresses(a.Cc); err != nil {
				return approval.Draft{}, err
			}
			to := metaStrings(it, "reply_to")
			if len(to) == 0 && it.Sender != "" {
				to = []string{it.Sender}
			}
			if len(to) == 0 {
				return approval.Draft{}, fmt.Errorf("item %d has no sender to reply to", it.ID)
			}
			cc := a.Cc
			if a.ReplyAll {
				cc = append(cc, append(metaStrings(it, "to"), metaStrings(it, "cc")...)...)
			}
			msgID, _ := it.Meta["message_id"].(string)
			refs := metaStrings(it, "references")
			if msgID != "" {
				refs = append(refs, msgID)
			}
			subject := it.Title
			if !strings.HasPrefix(strings.ToLower(subject), "re:") {
				subject = "Re: " + subject
			}
			p := &approval.EmailPayload{To: to, Cc: dedupe(cc, append(slices.Clone(to), d.OwnerEmails...)), Subject: subject, Body: untrusted.Strip(a.Body), InReplyTo: msgID, References: refs}
			if it.Source == "gmail" {
				p.ThreadID = it.Thread
			}
			return approval.Draft{
				Kind: approval.KindReply, Title: fmt.Sprintf("Reply to %s: %s", to[0], subject),
				Payload: p, ItemID: it.ID, Thread: it.Thread,
			}, nil
		})
}

type forwardArgs struct {
	ItemID int64    `json:"item_id" jsonschema:"the mail to forward (its item id)"`
	To     []string `json:"to" jsonschema:"recipient addresses"`
	Note   string   `json:"note,omitempty" jsonschema:"text above the forwarded mail"`
}

func forwardTool(d ToolDeps) (*Tool, error) {
	return NewProposalTool("forward_email", "Propose forwarding a stored mail."+pendingNote,
		func(ctx context.Context, a forwardArgs) (approval.Draft, error) {
			if err := checkAddresses(a.To); err != nil {
				return approval.Draft{}, err
			}
			if len(a.To) == 0 {
				return approval.Draft{}, errors.New("to needs at least one address")
			}
			it, err := d.Items.Item(ctx, a.ItemID)
			if err != nil {
				return approval.Draft{}, err
			}
			body := strings.TrimSpace(untrusted.Strip(a.Note)) + fmt.Sprintf("\n\n---------- Forwarded message ---------\nFrom: %s\nDate: %s\nSubject: %s\n\n%s",
				it.Sender, it.Time.In(d.Location).Format(time.RFC1123Z), it.Title, it.Body)
			subject := "Fwd: " + it.Title
			return approval.Draft{
				Kind: approval.KindForward, Title: fmt.Sprintf("Forward to %s: %s", strings.Join(a.To, ", "), it.Title),
				Payload: &approval.EmailPayload{To: a.To, Subject: subject, Body: strings.TrimLeft(body, "\n")}, ItemID: it.ID,
			}, nil
		})
}

type eventArgs struct {
	Summary     string   `json:"summary"`
	Start       string   `json:"start" jsonschema:"start (YYYY-MM-DD HH:MM in the owner's timezone, RFC 3339, or YYYY-MM-DD for all-day)"`
	End         string   `json:"end,omitempty" jsonschema:"end; default one hour after start"`
	Attendees   []string `json:"attendees,omitempty" jsonschema:"attendee addresses; they get invitations"`
	Location    string   `json:"location,omitempty"`
	Description string   `json:"description,omitempty"`
}

func (a eventArgs) payload(loc *time.Location) (*approval.CalendarPayload, error) {
	if err := checkAddresses(a.Attendees); err != nil {
		return nil, err
	}
	p := &approval.CalendarPayload{Summary: untrusted.Strip(a.Summary), Location: untrusted.Strip(a.Location), Description: untrusted.Strip(a.Description),
		Attendees: a.Attendees, TimeZone: loc.String()}
	var err error
	if p.Start, err = parseWhen(a.Start, loc); err != nil || p.Start.IsZero() {
		return nil, fmt.Errorf("start: %v", errOr(err, "required"))
	}
	p.AllDay = len(strings.TrimSpace(a.Start)) == len("2006-01-02")
	if p.End, err = parseWhen(a.End, loc); err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if p.End.IsZero() {
		if p.AllDay {
			p.End = p.Start.AddDate(0, 0, 1)
		} else {
			p.End = p.Start.Add(time.Hour)
		}
	}
	if !p.End.After(p.Start) {
		return nil, errors.New("end must be after start")
	}
	return p, nil
}

func createEventTool(d ToolDeps) (*Tool, error) {
	return NewProposalTool("create_event", "Propose a new calendar event (attendees get invitations)."+pendingNote,
		func(_ context.Context, a eventArgs) (approval.Draft, error) {
			p, err := a.payload(d.Location)
			if err != nil {
				return approval.Draft{}, err
			}
			return approval.Draft{Kind: approval.KindCalendarCreate, Title: fmt.Sprintf("New event: %s, %s", a.Summary, p.Start.In(d.Location).Format("Mon 2 Jan 15:04")), Payload: p}, nil
		})
}

type updateEventArgs struct {
	EventID string `json:"event_id" jsonschema:"the calendar event id (the item's id)"`
	eventArgs
}

func updateEventTool(d ToolDeps) (*Tool, error) {
	return NewProposalTool("update_event", "Propose changing a calendar event (attendees get updates)."+pendingNote,
		func(_ context.Context, a updateEventArgs) (approval.Draft, error) {
			if strings.TrimSpace(a.EventID) == "" {
				return approval.Draft{}, errors.New("event_id is required")
			}
			p, err := a.payload(d.Location)
			if err != nil {
				return approval.Draft{}, err
			}
			p.EventID = a.EventID
			return approval.Draft{Kind: approval.KindCalendarUpdate, Title: "Change event: " + a.Summary, Payload: p}, nil
		})
}

type eventIDArgs struct {
	EventID string `json:"event_id" jsonschema:"the calendar event id (the item's id)"`
}

func deleteEventTool() (*Tool, error) {
	return NewProposalTool("delete_event", "Propose deleting a calendar event (attendees are told)."+pendingNote,
		func(_ context.Context, a eventIDArgs) (approval.Draft, error) {
			if strings.TrimSpace(a.EventID) == "" {
				return approval.Draft{}, errors.New("event_id is required")
			}
			return approval.Draft{Kind: approval.KindCalendarDelete, Title: "Delete event " + a.EventID, Payload: &approval.CalendarPayload{EventID: a.EventID}}, nil
		})
}

type respondEventArgs struct {
	EventID  string `json:"event_id" jsonschema:"the calendar event id (the item's id)"`
	Response string `json:"response" jsonschema:"accepted, declined or tentative"`
}

func respondEventTool() (*Tool, error) {
	return NewProposalTool("respond_event", "Propose answering a calendar invitation."+pendingNote,
		func(_ context.Context, a respondEventArgs) (approval.Draft, error) {
			switch a.Response {
			case "accepted", "declined", "tentative":
			default:
				return approval.Draft{}, fmt.Errorf("response must be accepted, declined or tentative, not %q", a.Response)
			}
			if strings.TrimSpace(a.EventID) == "" {
				return approval.Draft{}, errors.New("event_id is required")
			}
			return approval.Draft{Kind: approval.KindCalendarRespond, Title: fmt.Sprintf("Answer %s to event %s", a.Response, a.EventID),
				Payload: &approval.CalendarPayload{EventID: a.EventID, Response: a.Response}}, nil
		})
}

type githubCommentArgs struct {
	Repo   string `json:"repo" jsonschema:"owner/name"`
	Number int    `json:"number" jsonschema:"issue or pull request number"`
	Body   string `json:"body" jsonschema:"the comment, Markdown"`
}

func githubCommentTool() (*Tool, error) {
	return NewProposalTool("github_comment", "Propose a comment on a GitHub issue or pull request."+pendingNote,
		func(_ context.Context, a githubCommentArgs) (approval.Draft, error) {
			owner, repo, ok := strings.Cut(a.Repo, "/")
			if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
				return approval.Draft{}, fmt.Errorf("repo must be owner/name, not %q", a.Repo)
			}
			if a.Number <= 0 || strings.TrimSpace(a.Body) == "" {
				return approval.Draft{}, errors.New("number and body are required")
			}
			return approval.Draft{Kind: approval.KindGitHubComment, Title: fmt.Sprintf("Comment on %s#%d", a.Repo, a.Number),
				Payload: &approval.GitHubCommentPayload{Owner: owner, Repo: repo, Number: a.Number, Body: untrusted.Strip(a.Body)}}, nil
		})
}

func checkAddresses(lists ...[]string) error {
	for _, l := range lists {
		for _, a := range l {
			if _, err := mail.ParseAddress(a); err != nil {
				return fmt.Errorf("%q is not an email address", a)
			}
		}
	}
	return nil
}

func metaStrings(it *store.Item, key string) []string {
	switch v := it.Meta[key].(type) {
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return v
	case string:
		if v != "" {
			return []string{v}
		}
	}
	return nil
}

// dedupe drops from l the addresses in drop and repeats, case-insensitively.
func dedupe(l, drop []string) []string {
	seen := map[string]bool{}
	for _, d := range drop {
		seen[strings.ToLower(d)] = true
	}
	var out []string
	for _, a := range l {
		if k := strings.ToLower(a); !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}

func errOr(err error, msg string) any {
	if err != nil {
		return err
	}
	return msg
}
