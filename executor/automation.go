package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

// Automation carries out approved standing rules (approval.KindAutomation,
// proposed by the proactive engine from patterns it found): it stores the
// rule as the owner's own preference, which triage applies to every later
// mail and which learning never overrides. Nothing leaves the machine.
type Automation struct {
	Store *store.Store
}

// Kinds implements Executor.
func (Automation) Kinds() []approval.Kind { return []approval.Kind{approval.KindAutomation} }

// Execute implements approval.Executor.
func (x Automation) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
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
func (x Automation) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
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
