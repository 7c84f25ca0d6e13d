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
	case ActSend, ActEdit, ActRedraft, ActReject, ActSnooze:
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
	cb := func(a Action) string {
		return Callback{Action: a, ProposalID: p.ID, HashPrefix: p.PayloadHash[:hashPrefixLen]}.String()
	}
	return [][]button{
		{{"✅ Send", cb(ActSend)}, {"✏️ Edit", cb(ActEdit)}, {"💬 Redraft", cb(ActRedraft)}},
		{{"❌ Reject", cb(ActReject)}, {"⏰ Snooze", cb(ActSnooze)}},
	}
}

type button struct{ text, data string }
