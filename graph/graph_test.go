package graph

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func frontierIDs(g *Graph) []string {
	var ids []string
	for _, f := range g.Frontier() {
		ids = append(ids, f.Node.ID)
	}
	return ids
}

func TestChainFrontierMovesWithFindings(t *testing.T) {
	var g Graph
	ids, err := g.AddChain("email_response", "mail42")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mail42.email", "mail42.needs_reply", "mail42.context", "mail42.response"}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if got := frontierIDs(&g); len(got) != 1 || got[0] != "mail42.email" {
		t.Fatalf("initial frontier = %v, want only the root", got)
	}
	if fr := g.Frontier(); strings.Join(fr[0].ToolHints, ",") != "search,get_item" {
		t.Fatalf("root hints = %v", fr[0].ToolHints)
	}

	steps := []struct {
		f        Finding
		frontier string
	}{
		{Finding{Node: "mail42.email", State: Confirmed, Evidence: "read it"}, "mail42.needs_reply"},
		{Finding{Node: "mail42.needs_reply", State: Suspected, Evidence: "asks a question"}, "mail42.needs_reply"},
		{Finding{Node: "mail42.needs_reply", State: Confirmed}, "mail42.context"},
		{Finding{Node: "mail42.context", State: Confirmed}, "mail42.response"},
		{Finding{Node: "mail42.response", State: Acted, Evidence: "proposal p1"}, ""},
	}
	for _, s := range steps {
		if err := g.Apply(s.f); err != nil {
			t.Fatalf("apply %+v: %v", s.f, err)
		}
		if got := strings.Join(frontierIDs(&g), ","); got != s.frontier {
			t.Fatalf("after %+v frontier = %q, want %q", s.f, got, s.frontier)
		}
	}
	if g.Render() != "" {
		t.Fatalf("a finished chain still renders: %q", g.Render())
	}
}

func TestApplyRejects(t *testing.T) {
	tests := []struct {
		name    string
		setup   []Finding
		f       Finding
		wantErr string
	}{
		{"unknown node", nil, Finding{Node: "nope", State: Confirmed}, "no such node"},
		{"bad state", nil, Finding{Node: "m.email", State: "done"}, "not one of"},
		{"backwards", []Finding{{Node: "m.email", State: Confirmed}}, Finding{Node: "m.email", State: Suspected}, "cannot move it back"},
		{"act before prerequisites", nil, Finding{Node: "m.response", State: Acted}, "cannot act on m.response before m.context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g Graph
			if _, err := g.AddChain("email_response", "m"); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.setup {
				if err := g.Apply(f); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := json.Marshal(&g)
			err := g.Apply(tt.f)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			after, _ := json.Marshal(&g)
			if string(before) != string(after) {
				t.Fatalf("a rejected finding changed the graph:\n%s\n%s", before, after)
			}
		})
	}
	var g Graph
	if err := g.Apply(Finding{Node: "x", State: Confirmed}); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("err = %v, want ErrUnknownNode", err)
	}
}

func TestFailedNodeCanBeRetriedAndLeavesFrontier(t *testing.T) {
	var g Graph
	g.AddChain("issue_fix", "")
	if err := g.Apply(Finding{Node: "issue", State: Failed, Evidence: "not found"}); err != nil {
		t.Fatal(err)
	}
	if len(g.Frontier()) != 0 {
		t.Fatalf("frontier after failure = %v, want empty", frontierIDs(&g))
	}
	if err := g.Apply(Finding{Node: "issue", State: Confirmed, Evidence: "found it after all"}); err != nil {
		t.Fatalf("retry of a failed node: %v", err)
	}
	if got := frontierIDs(&g); len(got) != 1 || got[0] != "cause" {
		t.Fatalf("frontier = %v, want [cause]", got)
	}
}

func TestRequiresAndEvidenceBound(t *testing.T) {
	var g Graph
	g.AddNode("a", "A")
	g.AddNode("b", "B")
	g.AddNode("c", "C")
	if err := g.AddEdge(Edge{From: "a", To: "c", Requires: []string{"b"}, ToolHints: []string{"search"}}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddEdge(Edge{From: "a", To: "zz"}); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("edge to a missing node: %v", err)
	}
	g.Apply(Finding{Node: "a", State: Confirmed})
	if got := strings.Join(frontierIDs(&g), ","); got != "b" {
		t.Fatalf("frontier = %q, want b (c still needs b)", got)
	}
	g.Apply(Finding{Node: "b", State: Acted})
	if got := strings.Join(frontierIDs(&g), ","); got != "c" {
		t.Fatalf("frontier = %q, want c", got)
	}
	for i := range 12 {
		g.Apply(Finding{Node: "c", State: Suspected, Evidence: strings.Repeat("x", i+1)})
	}
	if n := g.Node("c"); len(n.Evidence) != maxEvidence || n.Evidence[maxEvidence-1] != strings.Repeat("x", 12) {
		t.Fatalf("evidence = %v, want the last %d", n.Evidence, maxEvidence)
	}
	r := g.Render()
	if !strings.Contains(r, "- c [suspected]: C (tools: search) — so far: xxxxxxxxxxxx") {
		t.Fatalf("render = %q", r)
	}
	g.Apply(Finding{Node: "c", State: Suspected, Evidence: strings.Repeat("ü", 1000)})
	if ev := g.Node("c").Evidence[maxEvidence-1]; len(ev) > maxEvidenceLen+len("…") || !strings.HasSuffix(ev, "ü…") {
		t.Fatalf("a long piece of evidence is kept as %d bytes", len(ev))
	}
}

func TestGraphRoundTripsThroughJSON(t *testing.T) {
	var g Graph
	g.AddChain("meeting_brief", "standup")
	g.Apply(Finding{Node: "standup.meeting", State: Confirmed, Evidence: "9:00 with Bob"})
	b, err := json.Marshal(&g)
	if err != nil {
		t.Fatal(err)
	}
	var back Graph
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Render() != g.Render() || back.Render() == "" {
		t.Fatalf("render after round trip = %q, want %q", back.Render(), g.Render())
	}
}

func TestEveryChainIsWellFormed(t *testing.T) {
	names := ChainNames()
	if len(names) < 4 {
		t.Fatalf("chains = %v, want the four named chains", names)
	}
	for _, name := range names {
		var g Graph
		ids, err := g.AddChain(name, "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) < 3 {
			t.Errorf("%s has %d steps", name, len(ids))
		}
		if fr := g.Frontier(); len(fr) != 1 || len(fr[0].ToolHints) == 0 {
			t.Errorf("%s: root frontier %v should be one node with tool hints", name, fr)
		}
	}
	if _, err := new(Graph).AddChain("nope", ""); err == nil {
		t.Fatal("unknown chain accepted")
	}
}
