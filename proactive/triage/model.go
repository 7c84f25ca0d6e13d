package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/internal/clip"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Model is the router as triage uses it.
type Model interface {
	Chat(ctx context.Context, req router.Request) (*router.Response, error)
}

// maxModelBody bounds the mail text sent to the model: the middle band is
// about who and what, not every word.
const maxModelBody = 2000

const triageSystemPrompt = `You triage one email for its owner. Decide whether the owner should ignore it, be told about it (notify), or answer it (respond), and how important it is from 0 to 100.
` + untrusted.Rule + `
Answer with one JSON object and nothing else: {"decision":"ignore|notify|respond","priority":0-100,"reason":"one short sentence"}`

// modelVerdict is the model's answer.
type modelVerdict struct {
	Decision string `json:"decision"`
	Priority *int   `json:"priority"`
	Reason   string `json:"reason"`
}

// consult asks the model to settle a mail the heuristics could not. It
// returns the verdict and the tokens used; a verdict that does not parse
// is an error and the heuristic decision stands.
func consult(ctx context.Context, model Model, m Mail, r Result) (*modelVerdict, *router.Response, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Heuristic score %d of 100 (uncertain). Signals:\n", r.Score)
	for _, f := range r.Factors {
		if f.Name == "base" || f.Detail == "" {
			continue
		}
		fmt.Fprintf(&b, "- %s (%+d): %s\n", f.Name, f.Points, f.Detail)
	}
	b.WriteString("\n" + untrusted.Wrap("email", fmt.Sprintf("From: %s <%s>\nTo: %s\nCc: %s\nSubject: %s\n\n%s", m.FromName, m.From,
		strings.Join(m.To, ", "), strings.Join(m.Cc, ", "), m.Subject, clip.Text(m.Body, maxModelBody))))
	temp := 0.0
	resp, err := model.Chat(ctx, router.Request{
		Task: router.TaskTriage,
		Messages: []router.Message{
			{Role: router.RoleSystem, Content: triageSystemPrompt},
			{Role: router.RoleUser, Content: b.String()},
		},
		MaxTokens:   120,
		Temperature: &temp,
	})
	if err != nil {
		return nil, nil, err
	}
	v, err := parseVerdict(resp.Content)
	return v, resp, err
}

func parseVerdict(s string) (*modelVerdict, error) {
	s = strings.TrimSpace(s)
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var v modelVerdict
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("model verdict is not JSON: %w", err)
	}
	switch Decision(v.Decision) {
	case Ignore, Notify, Respond:
	default:
		return nil, fmt.Errorf("model verdict has decision %q", v.Decision)
	}
	if v.Priority == nil || *v.Priority < 0 || *v.Priority > 100 {
		return nil, errors.New("model verdict has no priority in 0..100")
	}
	v.Reason = strings.Join(strings.Fields(v.Reason), " ")
	if len(v.Reason) > 200 {
		v.Reason = v.Reason[:200]
	}
	return &v, nil
}

// applyVerdict settles the middle band with the model's verdict. The
// model moves the score by at most ±15 and can never make a mail critical
// or turn spam and bulk into something that interrupts: those stay the
// heuristics' call.
func applyVerdict(r *Result, m Mail, v *modelVerdict) {
	delta := max(-15, min(15, *v.Priority-r.Score))
	r.Score = max(0, min(100, r.Score+delta))
	r.Factors = append(r.Factors, store.Factor{Name: "model", Points: delta, Detail: fmt.Sprintf("model says %s (%d): %s", v.Decision, *v.Priority, v.Reason)})
	switch Decision(v.Decision) {
	case Respond:
		if r.Category == Personal {
			r.Decision, r.Request = Respond, true
		} else {
			r.Decision = Notify
		}
	case Notify:
		r.Decision = Notify
	case Ignore:
		r.Decision = Ignore
	}
	r.Level = levelFor(r.Decision, r.Score)
	r.Uncertain = false
	r.Reason = r.summary(m)
}
