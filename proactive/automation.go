package proactive

import (
	"fmt"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

// AutomationFor is the standing rule a confirmed pattern suggests, if any:
// muting a sender the owner always archives unanswered, promoting one the
// owner always answers fast. The engine only proposes it; it takes effect
// when the owner approves it.
func AutomationFor(ob *store.Observation) (approval.Draft, bool) {
	var p approval.AutomationPayload
	var title string
	switch ob.Kind {
	case PatternAlwaysArchives:
		p = approval.AutomationPayload{Rule: approval.RuleRankSender, Sender: ob.Key, Weight: -30,
			Detail: fmt.Sprintf("Mail from %s is ranked 30 lower, so it is no longer pushed to you.", ob.Key)}
		title = "Mute mail from " + ob.Key
	case PatternAnswersFast:
		p = approval.AutomationPayload{Rule: approval.RuleRankSender, Sender: ob.Key, Weight: 20,
			Detail: fmt.Sprintf("Mail from %s is ranked 20 higher, so you hear about it at once.", ob.Key)}
		title = "Always tell me about mail from " + ob.Key
	default:
		return approval.Draft{}, false
	}
	return approval.Draft{Kind: approval.KindAutomation, Title: title, Origin: "proactive", Payload: p,
		Reason: fmt.Sprintf("Pattern (confidence %.0f%%, %d examples): %s", 100*ob.Confidence, len(ob.Evidence), ob.Summary)}, true
}
