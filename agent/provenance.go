package agent

import (
	"context"
	"strings"
	"sync"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
)

// Provenance is what a tool may learn about the run that calls it: the
// owner's own words and the outside text the run has seen so far. A tool
// whose arguments leave the machine uses it to tell text the owner gave
// from text the model copied out of a mail or a tool result.
type Provenance struct {
	// Request is the owner's words: the task and the owner's earlier
	// turns, without the outside text shown with them.
	Request string
	// Untrusted are the delimited blocks of outside text in the run.
	Untrusted []string
}

type provenanceKey struct{}

// ProvenanceFrom returns the provenance of the run calling a tool; ok is
// false outside a run.
func ProvenanceFrom(ctx context.Context) (Provenance, bool) {
	f, ok := ctx.Value(provenanceKey{}).(func() Provenance)
	if !ok {
		return Provenance{}, false
	}
	return f(), true
}

// withProvenance lets the turn's tools ask for the run's provenance; it
// is worked out once, on first use (the messages do not change while
// the turn's tools run).
func withProvenance(ctx context.Context, st *runState) context.Context {
	return context.WithValue(ctx, provenanceKey{}, sync.OnceValue(func() Provenance { return provenance(st.Messages) }))
}

func provenance(msgs []router.Message) Provenance {
	var p Provenance
	var req strings.Builder
	for _, m := range msgs {
		own, blocks := splitUntrusted(m.Content)
		p.Untrusted = append(p.Untrusted, blocks...)
		if m.Role == router.RoleUser {
			req.WriteString(own)
			req.WriteString("\n")
		}
	}
	p.Request = req.String()
	return p
}

// splitUntrusted separates delimited blocks from the rest of s. An
// unclosed block (a clipped result) runs to the end.
func splitUntrusted(s string) (own string, blocks []string) {
	var b strings.Builder
	for {
		i := strings.Index(s, untrusted.Open)
		if i < 0 {
			b.WriteString(s)
			return b.String(), blocks
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.Index(s, untrusted.Close)
		if j < 0 {
			return b.String(), append(blocks, s)
		}
		blocks = append(blocks, s[:j])
		s = s[j+len(untrusted.Close):]
	}
}

// ApprovalRequired is what a read tool returns instead of a result when
// this call must not run without the owner's approval (its arguments
// would carry outside text off the machine): the agent proposes Draft
// instead, and the call runs only if the owner approves it.
type ApprovalRequired struct {
	Draft approval.Draft
}

func (e *ApprovalRequired) Error() string { return "this call needs the owner's approval" }
