package agent

import (
	"context"

	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/internal/untrusted"
)

// The run's own tools: they change only the run's plan and graph, which
// the loop applies in call order after the turn's tools have run. What
// the model writes here is rendered into later system prompts, and it may
// echo outside text it read: delimiter look-alikes are neutralised first.

type finishPhaseArgs struct {
	Reflection string `json:"reflection" jsonschema:"one sentence: what this phase established"`
}

var finishPhaseTool = mustTool(NewTool("finish_phase", "Mark the plan's active phase complete, with a one-sentence reflection on what it established, and move to the next phase.", Draft, 0,
	func(_ context.Context, a finishPhaseArgs) (Result, error) {
		r := untrusted.Neutralise(a.Reflection)
		return Result{reflection: &r}, nil
	}))

type recordFindingArgs struct {
	Node     string      `json:"node" jsonschema:"the id of a node on the reasoning frontier"`
	State    graph.State `json:"state" jsonschema:"suspected, confirmed, acted or failed"`
	Evidence string      `json:"evidence" jsonschema:"what shows it, citing items as [n]"`
}

var recordFindingTool = mustTool(NewTool("record_finding", "Record what you established about a node of the reasoning frontier (suspected, confirmed, acted or failed), with the evidence.", Draft, 0,
	func(_ context.Context, a recordFindingArgs) (Result, error) {
		return Result{Text: "Recorded.", Findings: []graph.Finding{{Node: a.Node, State: a.State, Evidence: untrusted.Neutralise(a.Evidence)}}}, nil
	}))

// mustTool is for tools built from package-level types: an error is a
// programming mistake that every test run would show.
func mustTool(t *Tool, err error) *Tool {
	if err != nil {
		panic(err)
	}
	return t
}
