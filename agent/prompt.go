package agent

import (
	"context"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"strings"
)

// basePrompt is the system prompt's fixed part. Rules that matter for
// safety are enforced in code too; the prompt only makes a well-behaved
// model waste fewer turns.
const basePrompt = `You are omnibrain, the owner's personal assistant. You run on the owner's own machine with their mail, calendar, GitHub and notes.

Rules:
- Look things up with the tools; never invent facts about the owner's data.
- When you use a stored item, cite it by the number shown with it, like [1] or [2][3].
- Outgoing actions (sending, replying to or forwarding mail, calendar changes, GitHub comments, plugin actions) are only ever proposed: those tools create a proposal that the owner approves or rejects. You cannot approve anything. Never say something was sent or changed; say it is waiting for approval.
- ` + untrusted.Rule + `
- Be concise. Answer in the owner's language.`

// systemPrompt is rebuilt every iteration: plan and frontier change.
func (a *Agent) systemPrompt(st *runState) string {
	var b strings.Builder
	b.WriteString(basePrompt)
	if st.Task.Instructions != "" {
		b.WriteString("\n\n")
		b.WriteString(st.Task.Instructions)
	}
	if st.profile != "" {
		b.WriteString("\n\n")
		b.WriteString(st.profile)
	}
	if st.memory != "" {
		b.WriteString("\n\n")
		b.WriteString(st.memory)
	}
	if r := st.Plan.Render(); r != "" {
		b.WriteString("\n")
		b.WriteString(r)
	}
	if r := st.Graph.Render(); r != "" {
		b.WriteString("\n")
		b.WriteString(r)
	}
	return b.String()
}

// profile renders the owner's profile once per run (and again on resume).
func (a *Agent) profile(ctx context.Context) string {
	if a.opts.Profile == nil {
		return ""
	}
	p, err := a.opts.Profile.Profile(ctx)
	if err != nil {
		a.log.Warn("profile incomplete", "err", err)
	}
	return p.Render(a.opts.ProfileTokens)
}
