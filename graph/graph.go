// Package graph is the agent's reasoning graph: what it believes about a
// situation (a mail that may need an answer, a meeting to prepare) as nodes
// in states, edges that say which node follows which and which tools move
// it, and the frontier of nodes worth working on next, which goes into the
// model's prompt.
package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/omnibrain/omnibrain/internal/clip"
)

// State is how much the agent knows about a node.
type State string

const (
	Unknown   State = "unknown"   // not looked at yet
	Suspected State = "suspected" // some evidence, not established
	Confirmed State = "confirmed" // established by evidence
	Acted     State = "acted"     // something was done about it (a proposal, an answer)
	Failed    State = "failed"    // tried and could not be established or done
)

// rank orders the forward states; a finding never moves a node backwards.
var rank = map[State]int{Unknown: 0, Suspected: 1, Confirmed: 2, Acted: 3}

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	_, ok := rank[s]
	return ok || s == Failed
}

// done reports whether a node in state s satisfies a prerequisite.
func (s State) done() bool { return s == Confirmed || s == Acted }

// Node is one thing the agent reasons about.
type Node struct {
	ID       string   `json:"id"`
	Label    string   `json:"label"` // what establishing the node means, for the model
	State    State    `json:"state"`
	Evidence []string `json:"evidence,omitempty"`
	// ToolHints are tools that establish a node no edge leads to.
	ToolHints []string `json:"tool_hints,omitempty"`
}

// Edge says To follows From: To is worth working on once From (and every
// node in Requires) is confirmed or acted.
type Edge struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	ToolHints []string `json:"tool_hints,omitempty"` // tools that establish To
	Requires  []string `json:"requires,omitempty"`   // further prerequisites of To
}

// Finding is evidence that moves a node to a new state.
type Finding struct {
	Node     string `json:"node"`
	State    State  `json:"state"`
	Evidence string `json:"evidence"`
}

// Graph holds nodes and edges. The zero value is empty and usable. It is
// not safe for concurrent use: the agent applies findings between turns.
type Graph struct {
	Nodes []*Node `json:"nodes"`
	Edges []Edge  `json:"edges"`
}

// maxEvidence and maxEvidenceLen bound the evidence kept per node, and
// so the prompt the frontier is rendered into, whatever a model writes.
const (
	maxEvidence    = 5
	maxEvidenceLen = 300 // bytes of one piece of evidence
)

// ErrUnknownNode is returned for a finding about a node that does not exist.
var ErrUnknownNode = errors.New("no such node")

// Node returns the node with id, or nil.
func (g *Graph) Node(id string) *Node {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// AddNode adds a node in state Unknown; adding an existing id is a no-op.
func (g *Graph) AddNode(id, label string) *Node {
	if n := g.Node(id); n != nil {
		return n
	}
	n := &Node{ID: id, Label: label, State: Unknown}
	g.Nodes = append(g.Nodes, n)
	return n
}

// AddEdge links two existing nodes.
func (g *Graph) AddEdge(e Edge) error {
	for _, id := range append([]string{e.From, e.To}, e.Requires...) {
		if g.Node(id) == nil {
			return fmt.Errorf("graph: edge %s→%s: %w: %s", e.From, e.To, ErrUnknownNode, id)
		}
	}
	g.Edges = append(g.Edges, e)
	return nil
}

// Apply records a finding. A node moves forward (unknown → suspected →
// confirmed → acted) or to failed; a failed node may be retried with new
// evidence. A node can only be acted on once its prerequisites are met, so
// the model cannot claim to have answered a mail it has not read.
func (g *Graph) Apply(f Finding) error {
	n := g.Node(f.Node)
	if n == nil {
		return fmt.Errorf("graph: finding for %q: %w (known: %s)", f.Node, ErrUnknownNode, strings.Join(g.ids(), ", "))
	}
	if !f.State.Valid() {
		return fmt.Errorf("graph: finding for %s: state %q is not one of unknown, suspected, confirmed, acted, failed", f.Node, f.State)
	}
	switch {
	case f.State == Failed, n.State == Failed:
	case rank[f.State] < rank[n.State]:
		return fmt.Errorf("graph: %s is already %s; a finding cannot move it back to %s", n.ID, n.State, f.State)
	}
	if f.State == Acted {
		if missing := g.unmet(n.ID); len(missing) > 0 {
			return fmt.Errorf("graph: cannot act on %s before %s", n.ID, strings.Join(missing, ", "))
		}
	}
	n.State = f.State
	if ev := strings.TrimSpace(f.Evidence); ev != "" {
		n.Evidence = append(n.Evidence, clip.Text(ev, maxEvidenceLen))
		if len(n.Evidence) > maxEvidence {
			n.Evidence = n.Evidence[len(n.Evidence)-maxEvidence:]
		}
	}
	return nil
}

// unmet lists the prerequisites of id that are not yet confirmed or acted.
func (g *Graph) unmet(id string) []string {
	var missing []string
	for _, e := range g.Edges {
		if e.To != id {
			continue
		}
		for _, p := range append([]string{e.From}, e.Requires...) {
			if n := g.Node(p); n != nil && !n.State.done() && !slices.Contains(missing, p) {
				missing = append(missing, p)
			}
		}
	}
	return missing
}

// Frontier is a node worth working on now, with the tools that move it.
type Frontier struct {
	Node      *Node
	ToolHints []string
}

// Frontier returns the nodes still unknown or suspected whose
// prerequisites are all met, in insertion order.
func (g *Graph) Frontier() []Frontier {
	var out []Frontier
	for _, n := range g.Nodes {
		if n.State != Unknown && n.State != Suspected {
			continue
		}
		if len(g.unmet(n.ID)) > 0 {
			continue
		}
		hints := slices.Clone(n.ToolHints)
		for _, e := range g.Edges {
			if e.To == n.ID {
				for _, h := range e.ToolHints {
					if !slices.Contains(hints, h) {
						hints = append(hints, h)
					}
				}
			}
		}
		out = append(out, Frontier{Node: n, ToolHints: hints})
	}
	return out
}

// Render writes the frontier for the system prompt; "" when there is none
// (or no graph).
func (g *Graph) Render() string {
	if g == nil {
		return ""
	}
	fr := g.Frontier()
	if len(fr) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Reasoning frontier (establish these next; record what you learn with record_finding):\n")
	for _, f := range fr {
		fmt.Fprintf(&b, "- %s [%s]: %s", f.Node.ID, f.Node.State, f.Node.Label)
		if len(f.ToolHints) > 0 {
			fmt.Fprintf(&b, " (tools: %s)", strings.Join(f.ToolHints, ", "))
		}
		if len(f.Node.Evidence) > 0 {
			fmt.Fprintf(&b, " — so far: %s", f.Node.Evidence[len(f.Node.Evidence)-1])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (g *Graph) ids() []string {
	ids := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		ids[i] = n.ID
	}
	return ids
}
