package graph

import (
	"fmt"
	"sort"
)

// Chain is a named sequence of steps the agent commonly reasons through.
type Chain struct {
	Name  string
	Steps []ChainStep
}

// ChainStep is one node of a chain and the tools that establish it.
type ChainStep struct {
	Key       string
	Label     string
	ToolHints []string
}

// The named chains. Tool hints use the agent's standard tool names.
var chains = map[string]Chain{
	"email_response": {Name: "email_response", Steps: []ChainStep{
		{Key: "email", Label: "the mail is identified and read", ToolHints: []string{"search", "get_item"}},
		{Key: "needs_reply", Label: "whether the mail needs an answer from the owner", ToolHints: []string{"get_item", "thread"}},
		{Key: "context", Label: "what the answer depends on (earlier mail, calendar, facts)", ToolHints: []string{"search", "thread", "calendar"}},
		{Key: "response", Label: "a reply is proposed for the owner's approval", ToolHints: []string{"reply_email"}},
	}},
	"meeting_brief": {Name: "meeting_brief", Steps: []ChainStep{
		{Key: "meeting", Label: "the meeting is identified (time, attendees)", ToolHints: []string{"calendar", "get_item"}},
		{Key: "attendees", Label: "who the attendees are and the recent history with them", ToolHints: []string{"search"}},
		{Key: "open_items", Label: "open questions and commitments related to the meeting", ToolHints: []string{"search", "thread"}},
		{Key: "brief", Label: "a brief is written for the owner", ToolHints: nil},
	}},
	"issue_fix": {Name: "issue_fix", Steps: []ChainStep{
		{Key: "issue", Label: "the issue or pull request is identified and read", ToolHints: []string{"search", "get_item"}},
		{Key: "cause", Label: "what the problem or requested change is", ToolHints: []string{"get_item", "search"}},
		{Key: "fix", Label: "what should be done about it", ToolHints: []string{"search"}},
		{Key: "proposed", Label: "a comment or action is proposed for the owner's approval", ToolHints: []string{"github_comment"}},
	}},
	"pattern_automation": {Name: "pattern_automation", Steps: []ChainStep{
		{Key: "pattern", Label: "a recurring pattern is noticed", ToolHints: []string{"search"}},
		{Key: "confirmed", Label: "the pattern holds over enough occurrences", ToolHints: []string{"search"}},
		{Key: "automation", Label: "an automation is suggested to the owner", ToolHints: nil},
	}},
}

// ChainNames lists the named chains, sorted.
func ChainNames() []string {
	names := make([]string, 0, len(chains))
	for n := range chains {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupChain returns the named chain.
func LookupChain(name string) (Chain, bool) {
	c, ok := chains[name]
	return c, ok
}

// AddChain instantiates the named chain for a subject (a mail id, a
// meeting, "" for the situation at hand): nodes "<subject>.<key>" (or just
// "<key>" without a subject) linked in order. It returns the node ids.
func (g *Graph) AddChain(name, subject string) ([]string, error) {
	c, ok := chains[name]
	if !ok {
		return nil, fmt.Errorf("graph: no chain %q (known: %v)", name, ChainNames())
	}
	ids := make([]string, len(c.Steps))
	for i, s := range c.Steps {
		ids[i] = s.Key
		if subject != "" {
			ids[i] = subject + "." + s.Key
		}
		g.AddNode(ids[i], s.Label)
	}
	for i := 1; i < len(ids); i++ {
		if err := g.AddEdge(Edge{From: ids[i-1], To: ids[i], ToolHints: c.Steps[i].ToolHints}); err != nil {
			return nil, err
		}
	}
	// The first step has no incoming edge to carry its hints.
	if root := g.Node(ids[0]); len(root.ToolHints) == 0 {
		root.ToolHints = c.Steps[0].ToolHints
	}
	return ids, nil
}
