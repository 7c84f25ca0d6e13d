// Package approval is the gate between what omnibrain proposes and what it
// does: proposals with their exact payload and its hash, compare-and-set
// decisions by the owner only, expiry, and the audit log. Nothing outgoing
// happens except through an executor for an approved, unexpired proposal
// whose payload hash is the one the owner saw.
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Kind is what a proposal would do.
type Kind string

const (
	KindReply           Kind = "reply"            // EmailPayload answering a mail
	KindEmail           Kind = "email"            // EmailPayload, a new mail
	KindForward         Kind = "forward"          // EmailPayload forwarding a mail
	KindCalendarCreate  Kind = "calendar_create"  // CalendarPayload
	KindCalendarUpdate  Kind = "calendar_update"  // CalendarPayload with EventID
	KindCalendarDelete  Kind = "calendar_delete"  // CalendarPayload with EventID
	KindCalendarRespond Kind = "calendar_respond" // CalendarPayload with EventID and Response
	KindGitHubComment   Kind = "github_comment"   // GitHubCommentPayload
	KindPluginAction    Kind = "plugin_action"    // PluginActionPayload
	KindAutomation      Kind = "automation"       // AutomationPayload: a standing rule omnibrain follows from then on
)

// State is where a proposal is in its life.
type State string

const (
	StatePending    State = "pending"
	StateApproved   State = "approved"
	StateExecuting  State = "executing"
	StateExecuted   State = "executed"
	StateFailed     State = "failed"
	StateRejected   State = "rejected"
	StateExpired    State = "expired"
	StateSnoozed    State = "snoozed"
	StateSuperseded State = "superseded"
)

// Proposal is an outgoing action waiting for, or past, the owner's decision.
type Proposal struct {
	ID      string          `json:"id"` // short, opaque; also the Telegram callback id
	Kind    Kind            `json:"kind"`
	State   State           `json:"state"`
	Title   string          `json:"title"`  // one line: "Reply to Alice: Re: Q3 budget"
	Reason  string          `json:"reason"` // why it was proposed
	Origin  string          `json:"origin"` // agent, proactive, owner
	Payload json.RawMessage `json:"payload"`
	// PayloadHash is what the owner approves: the sha256 of the payload
	// and of the warnings shown with it (HashProposal).
	PayloadHash string `json:"payload_hash"`
	// Warnings are what the owner should know before approving, worked
	// out when it was proposed (never after); empty, not null, if none.
	Warnings []Warning `json:"warnings"`
	// Current is the event as the store had it when a calendar update,
	// delete or answer was proposed, shown beside the new values.
	Current   *CalendarPayload `json:"current_event,omitempty"`
	ItemID    int64            `json:"item_id,omitempty"` // the stored item it answers, if any
	Thread    string           `json:"thread,omitempty"`
	Created   time.Time        `json:"created"`
	Expires   time.Time        `json:"expires"`
	Decided   time.Time        `json:"decided,omitzero"`
	DecidedBy string           `json:"decided_by,omitempty"`
	// ExecuteAfter is when an approved proposal may run: the approval plus
	// the send delay. Until it starts, Undo puts it back to pending.
	ExecuteAfter time.Time `json:"execute_after,omitzero"`
	SnoozeUntil  time.Time `json:"snooze_until,omitzero"`
	Supersedes   string    `json:"supersedes,omitempty"` // the proposal an edit replaced
	// SupersededBy is the proposal that replaced this one (an edit or a newer draft).
	SupersededBy string `json:"superseded_by,omitempty"`
	// IdempotencyKey is what execution attempts carry to the remote side
	// (derived from ID and PayloadHash; set when execution starts).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Attempts       int    `json:"attempts,omitempty"`
	RemoteID       string `json:"remote_id,omitempty"` // what the executor created
	Error          string `json:"error,omitempty"`     // why execution failed
}

// Draft is what the agent, the proactive engine or the owner asks to
// propose. The gate stores Payload exactly as marshalled and hashes it.
type Draft struct {
	Kind    Kind
	Title   string
	Reason  string
	Origin  string
	Payload any // one of the *Payload types below, matching Kind
	ItemID  int64
	Thread  string
	// Provenance is where the run that drafted it read what it read (nil
	// when no model drafted it): the gate warns about recipients that came
	// from untrusted content.
	Provenance *Provenance
}

// Warning is something the owner should know before approving.
type Warning struct {
	Code string `json:"code"`
	Text string `json:"text"`
}

// Warning codes.
const (
	// WarnRecipientFromContent: a recipient or attendee the owner did not
	// name, who is not a party to the item answered, and whose address
	// appears in untrusted content.
	WarnRecipientFromContent = "recipient_from_content"
	// WarnNewRecipient: an address the owner has never exchanged mail with.
	WarnNewRecipient = "new_recipient"
	// WarnLookalike: an address or name with confusable, invisible or
	// bidirectional-control characters, or mixed scripts in a domain.
	WarnLookalike = "lookalike"
	// WarnReplyToDiffers: a reply goes to a Reply-To other than the sender,
	// or a display name shows another address than the one it goes to.
	WarnReplyToDiffers = "reply_to_differs"
	// WarnAttendeesChanged: a calendar update changes who is invited.
	WarnAttendeesChanged = "attendees_changed"
	// WarnTextFromContent: a subject, title or line of a new text that the
	// owner did not write stands word for word in untrusted content: a
	// mail or a file dictated it.
	WarnTextFromContent = "text_from_content"
)

// EmailPayload is a mail to send (reply, new mail, forward).
type EmailPayload struct {
	To         []string `json:"to"`
	Cc         []string `json:"cc,omitempty"`
	Bcc        []string `json:"bcc,omitempty"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`                  // plain text, exactly what is sent
	InReplyTo  string   `json:"in_reply_to,omitempty"` // Message-ID answered (reply)
	References []string `json:"references,omitempty"`
	ThreadID   string   `json:"thread_id,omitempty"` // Gmail thread id
}

// CalendarPayload is a calendar change. Attendees get invitations and
// updates, so every calendar change is outgoing.
type CalendarPayload struct {
	CalendarID  string    `json:"calendar_id,omitempty"` // default primary
	EventID     string    `json:"event_id,omitempty"`
	Summary     string    `json:"summary,omitempty"`
	Description string    `json:"description,omitempty"`
	Location    string    `json:"location,omitempty"`
	Start       time.Time `json:"start,omitzero"`
	End         time.Time `json:"end,omitzero"`
	AllDay      bool      `json:"all_day,omitempty"`
	TimeZone    string    `json:"time_zone,omitempty"`
	Attendees   []string  `json:"attendees,omitempty"`
	SendUpdates string    `json:"send_updates,omitempty"` // all (default), externalOnly, none
	Response    string    `json:"response,omitempty"`     // accepted, declined, tentative (respond)
}

// GitHubCommentPayload is a comment on an issue or pull request.
type GitHubCommentPayload struct {
	Owner  string `json:"owner"`
	Repo   string `json:"repo"`
	Number int    `json:"number"`
	Body   string `json:"body"`
}

// PluginActionPayload is a plugin tool call: a local plugin's tool run
// with Arguments, or a chat-tools call, the exact request: Method to
// Endpoint with Body (GET: the arguments are in Endpoint's query).
type PluginActionPayload struct {
	Plugin    string          `json:"plugin"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Method    string          `json:"method,omitempty"`
	Endpoint  string          `json:"endpoint,omitempty"`
	Body      json.RawMessage `json:"body,omitempty"`
}

// Automation rules.
const (
	// RuleRankSender adds Weight to the triage score of Sender's mail:
	// negative mutes (their mail is no longer pushed), positive promotes.
	RuleRankSender = "rank_sender"
)

// AutomationPayload is a standing rule that changes what omnibrain does on
// its own from then on (the proactive engine proposes them from patterns
// it found). Nothing leaves the machine, but it is the owner's call.
type AutomationPayload struct {
	Rule   string `json:"rule"`
	Sender string `json:"sender"`
	Weight int    `json:"weight"` // -30..30, not 0
	Detail string `json:"detail"` // what the rule does, in words
}

// ErrOutcomeUnknown is wrapped by an executor's error when it cannot tell
// whether the attempt reached the remote side (the answer was lost and
// the lookup failed too). The proposal stays executing, and the outbox
// asks Find again on its next passes before anything is retried.
var ErrOutcomeUnknown = errors.New("whether it reached the remote side is not known yet")

// ErrNoLookup is wrapped by an executor's Find when the remote side
// cannot be asked whether an attempt landed (a plugin that does not
// answer lookups). An interrupted attempt is then failed, never retried:
// a retry could do the action twice.
var ErrNoLookup = errors.New("whether an earlier attempt ran cannot be checked")

// Executor performs approved proposals of some kinds. Only the gate calls
// it, and only for a proposal it has moved to executing.
type Executor interface {
	// Execute performs the action once. key is stable for this proposal
	// and payload; the executor records it on the remote side (a
	// Message-ID, an event id, a marker in a comment) so Find can see an
	// earlier attempt after a crash.
	Execute(ctx context.Context, p *Proposal, key string) (remoteID string, err error)
	// Find reports whether an attempt with key already reached the remote side.
	Find(ctx context.Context, p *Proposal, key string) (remoteID string, found bool, err error)
}
