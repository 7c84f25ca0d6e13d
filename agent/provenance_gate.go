package agent

import (
	"slices"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/router"
)

// What the approval gate is told about a run (approval.Provenance): the
// owner's own words, and the untrusted content the run read and where it
// came from, so the gate can warn about a recipient that only content
// named. It is rebuilt from the run's state when the loop starts (a
// resumed run too) and fed with every tool result as the run goes. The
// objective counts as the owner's request: a background job puts outside
// text in its items or prefetched results, never in its objective.

// recordProvenance builds the record from what the run holds so far: the
// owner's words are the user turns without their delimited blocks.
func (st *runState) recordProvenance() {
	p := approval.NewProvenance()
	for _, it := range slices.Concat(st.Task.Items, st.Cites) {
		p.Content(approval.Source{ItemID: it.ItemID, Title: it.Title}, it.From, it.Title, it.Text)
	}
	for _, m := range st.Messages {
		switch m.Role {
		case router.RoleUser:
			own, blocks := splitUntrusted(m.Content)
			p.Request(own)
			p.Content(approval.Source{Title: "data shown with the request"}, blocks...)
		case router.RoleTool:
			p.Content(approval.Source{Tool: m.Name}, m.Content)
		case router.RoleAssistant: // may repeat what content said
			p.Echo(approval.Source{Title: "an earlier answer"}, m.Content)
		}
	}
	st.prov = p
}

// recordResult feeds one tool call's result: its items first, so an
// address is traced to the item it came from, then all it showed. A
// proposal's result repeats the run's own draft: its words are no
// content's (a second mail with the same subject was not dictated).
func (st *runState) recordResult(o *callOutcome, content string) {
	for _, it := range o.res.Items {
		st.prov.Content(approval.Source{Tool: o.call.Name, ItemID: it.ItemID, Title: it.Title}, it.From, it.Title, it.Text)
	}
	if o.proposal != nil {
		st.prov.Echo(approval.Source{Tool: o.call.Name}, content)
		return
	}
	st.prov.Content(approval.Source{Tool: o.call.Name}, content)
}
