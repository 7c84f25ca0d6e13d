package telegram

import (
	"errors"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/approval"
)

// Action is what a proposal button asks for.
type Action string

const (
	ActSend    Action = "send"
	ActEdit    Action = "edit"
	ActRedraft Action = "redraft"
	ActReject  Action = "reject"
	ActSnooze  Action = "snooze"
	ActUndo    Action = "undo" // take back an approval during its send delay
)

// hashPrefixLen is how much of the payload hash a button carries: it ties
// the press to the payload the message showed.
const hashPrefixLen = 12

// Callback is the decoded data of a proposal button.
type Callback struct {
	Action     Action
	ProposalID string
	HashPrefix string
}

// String encodes the callback data: "action:id:hashprefix" (at most 31
// bytes; Telegram allows 64).
func (c Callback) String() string {
	return string(c.Action) + ":" + c.ProposalID + ":" + c.HashPrefix
}

var errBadCallback = errors.New("not a proposal button")

// ParseCallback decodes callback data strictly: anything else than what
// String produces is refused (the data comes from outside).
func ParseCallback(data string) (Callback, error) {
	if len(data) > 64 {
		return Callback{}, errBadCallback
	}
	parts := strings.Split(data, ":")
	if len(parts) != 3 {
		return Callback{}, errBadCallback
	}
	c := Callback{Action: Action(parts[0]), ProposalID: parts[1], HashPrefix: parts[2]}
	switch c.Action {
	case ActSend, ActEdit, ActRedraft, ActReject, ActSnooze, ActUndo:
	default:
		return Callback{}, fmt.Errorf("%w: unknown action", errBadCallback)
	}
	if !approval.ValidID(c.ProposalID) {
		return Callback{}, fmt.Errorf("%w: bad proposal id", errBadCallback)
	}
	if len(c.HashPrefix) != hashPrefixLen || strings.Trim(c.HashPrefix, "0123456789abcdef") != "" {
		return Callback{}, fmt.Errorf("%w: bad hash", errBadCallback)
	}
	return c, nil
}

// buttons are the approval buttons of a proposal.
func buttons(p *approval.Proposal) [][]button {
	return [][]button{
		{{"✅ Send", callback(p, ActSend)}, {"✏️ Edit", callback(p, ActEdit)}, {"💬 Redraft", callback(p, ActRedraft)}},
		{{"❌ Reject", callback(p, ActReject)}, {"⏰ Snooze", callback(p, ActSnooze)}},
	}
}

// undoButton is what an approval waiting out its send delay shows.
func undoButton(p *approval.Proposal) [][]button {
	return [][]button{{{"↩️ Undo", callback(p, ActUndo)}}}
}

func callback(p *approval.Proposal, a Action) string {
	return Callback{Action: a, ProposalID: p.ID, HashPrefix: p.PayloadHash[:hashPrefixLen]}.String()
}

type button struct{ text, data string }
