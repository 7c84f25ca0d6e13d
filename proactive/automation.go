package proactive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

// automationFor is the standing rule a confirmed pattern suggests, if any:
// muting a sender the owner always archives unanswered, promoting one the
// owner always answers fast. The engine only proposes it; it takes effect
// when the owner approves it.
func automationFor(ob *store.Observation) (approval.Draft, bool) {
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

// AutomationExecutor carries out approved automation proposals
// (approval.KindAutomation): it stores the rule as the owner's own
// preference, which triage applies to every later mail and which
// learning never overrides. Only the gate calls it.
type AutomationExecutor struct {
	Store *store.Store
}

// Execute implements approval.Executor.
func (x AutomationExecutor) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	a, err := automationPayload(p)
	if err != nil {
		return "", err
	}
	pref := store.Preference{Key: "sender:" + a.Sender, Weight: float64(a.Weight), Source: store.PreferenceOwner,
		Detail: fmt.Sprintf("%s (rule %s you approved)", a.Detail, p.ID)}
	if err := x.Store.SetPreference(ctx, pref); err != nil {
		return "", fmt.Errorf("automation: %w", err)
	}
	return pref.Key, nil
}

// Find implements approval.Executor: the rule is in place if the owner's
// preference for the sender is the one this proposal set.
func (x AutomationExecutor) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	a, err := automationPayload(p)
	if err != nil {
		return "", false, err
	}
	k := "sender:" + a.Sender
	prefs, err := x.Store.PreferencesFor(ctx, k)
	if err != nil {
		return "", false, fmt.Errorf("automation: %w", err)
	}
	got, ok := prefs[k]
	if !ok || got.Source != store.PreferenceOwner || got.Weight != float64(a.Weight) || !strings.Contains(got.Detail, p.ID) {
		return "", false, nil
	}
	return k, true, nil
}

func automationPayload(p *approval.Proposal) (approval.AutomationPayload, error) {
	var a approval.AutomationPayload
	if p.Kind != approval.KindAutomation {
		return a, fmt.Errorf("automation: cannot execute a %s proposal", p.Kind)
	}
	if err := json.Unmarshal(p.Payload, &a); err != nil {
		return a, fmt.Errorf("automation: payload: %w", err)
	}
	if a.Rule != approval.RuleRankSender || a.Sender == "" {
		return a, errors.New("automation: unknown rule " + a.Rule)
	}
	return a, nil
}
