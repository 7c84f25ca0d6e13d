package agent

import (
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/planner"
	"github.com/omnibrain/omnibrain/router"
)

// EventType names an agent event. They are also the SSE event names of
// POST /api/v1/chat.
type EventType string

const (
	EventText          EventType = "text"           // a piece of the answer as it streams
	EventToolStart     EventType = "tool_start"     // a tool call begins
	EventToolEnd       EventType = "tool_end"       // a tool call ended (ok, error, blocked, proposed)
	EventToolStatus    EventType = "tool_status"    // what a running tool says it is doing (Text)
	EventFinding       EventType = "finding"        // a reasoning-graph node moved
	EventPlan          EventType = "plan"           // the plan the run follows
	EventPhaseComplete EventType = "phase_complete" // a plan phase completed, with its reflection
	EventUsage         EventType = "usage"          // tokens and cost of one model call
	EventError         EventType = "error"          // something went wrong; the run may go on
	EventContext       EventType = "context"        // a background run gathered its context; Items are set
	EventDone          EventType = "done"           // the run ended; Answer is set
)

// Event is one thing that happened in a run. Exactly the field matching
// Type is set (Text for text and error).
type Event struct {
	Type      EventType `json:"type"`
	RunID     string    `json:"run_id,omitempty"`
	Iteration int       `json:"iteration,omitempty"`
	Text      string    `json:"text,omitempty"`
	// Reset, on a text event, says to discard the text streamed so far in
	// this model call: the router retried it and starts over.
	Reset   bool           `json:"reset,omitempty"`
	Tool    *ToolEvent     `json:"tool,omitempty"`
	Finding *graph.Finding `json:"finding,omitempty"`
	Plan    *planner.Plan  `json:"plan,omitempty"`
	Phase   *planner.Phase `json:"phase,omitempty"`
	Usage   *router.Usage  `json:"usage,omitempty"`
	Answer  *Answer        `json:"answer,omitempty"`
	Items   []Citation     `json:"items,omitempty"`
}

// ToolEvent describes a tool call.
type ToolEvent struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
	// Status on tool_end: ok, error, invalid, blocked, refused, timeout, proposed.
	Status     string `json:"status,omitempty"`
	ProposalID string `json:"proposal_id,omitempty"`
	Millis     int64  `json:"ms,omitempty"`
}

// Tool-call statuses.
const (
	StatusOK       = "ok"
	StatusError    = "error"
	StatusInvalid  = "invalid"
	StatusBlocked  = "blocked"
	StatusRefused  = "refused"
	StatusTimeout  = "timeout"
	StatusProposed = "proposed"
)
