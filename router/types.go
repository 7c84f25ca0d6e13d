// Package router reaches language models: providers behind their official
// SDKs, task-based routing with retry and failover, streaming, usage and
// cost accounting, and the daily budget.
//
// New builds a Router from config.LLM: the default provider
// (OMNIBRAIN_LLM_*, named "default"; with no provider set, a local Ollama
// found on loopback at start) and the named llm.providers. Chat returns a
// whole answer; Stream also passes text deltas as they arrive (see Delta for
// the Reset rule). Both:
//
//   - route by Request.Task: llm.routes.<task>.providers in order, else the
//     default provider; a route with privacy: local (Task's or Within's)
//     only uses providers on loopback (and their connections cannot leave
//     it), else ErrNoModel;
//   - retry a provider on 429, 5xx, timeouts (llm.timeout per attempt) and
//     dropped connections, up to 3 attempts with jittered exponential
//     backoff, waiting what Retry-After asks up to 30s (longer: the next
//     provider); a refused connection goes to the next provider at once;
//   - fail over to the next provider, and when all fail return an error
//     joining each provider's *ProviderError;
//   - record every attempt in llm_calls with tokens and its cost (see
//     PriceFor: llm.prices, else free on loopback or Ollama, else the
//     built-in table of public prices, else the most expensive known rate);
//   - keep to the budget: once the day's spend (the owner's timezone)
//     reaches llm.daily_budget_usd, background calls to priced models fail
//     fast with ErrBudgetExceeded and the owner is told once that day;
//     interactive calls (Request.Interactive) go on, until the optional
//     llm.hard_limit_usd stops them too. Free models (a local Ollama) are
//     never paused. Ready says beforehand whether background work on a
//     task can run now.
//
// Errors: ErrNoModel (degrade: no model can take the call), ErrBudgetExceeded,
// *ProviderError (errors.As: provider, model, status, type, retryable),
// ErrStreamInterrupted (a response that ended early, inside a
// *ProviderError), and for tool calls CheckArguments' *ArgumentsError
// (ErrMalformedArguments). Cancelling the context returns its error.
package router

import (
	"encoding/json"
	"errors"
)

// Task names a kind of model work; routes are configured per task.
type Task string

const (
	TaskTriage     Task = "triage"
	TaskDraft      Task = "draft"
	TaskPlanning   Task = "planning"
	TaskAnalysis   Task = "analysis"
	TaskReflection Task = "reflection"
	TaskBriefing   Task = "briefing"
	TaskChat       Task = "chat"
)

// Role of a message in a conversation.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn. An assistant message may carry tool calls; a tool
// message answers one of them by ToolCallID.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"` // the tool's name, on tool messages
	// IsError marks a tool message that reports a failure (Anthropic's
	// tool_result is_error; OpenAI-compatible APIs see only the text).
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is the raw JSON
// the model produced; it may be malformed and must be validated.
//
// The router passes malformed arguments on unchanged rather than failing
// or retrying the call: CheckArguments reports them as an *ArgumentsError
// (errors.Is ErrMalformedArguments), and the agent answers the tool call
// with that text so the model corrects itself. Such a RawMessage does not
// survive json.Marshal: check before persisting.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// CheckArguments reports whether Arguments is a JSON object.
func (c ToolCall) CheckArguments() error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c.Arguments, &m); err != nil {
		return &ArgumentsError{Tool: c.Name, Err: err}
	}
	if m == nil {
		return &ArgumentsError{Tool: c.Name, Err: errors.New("null is not an object")}
	}
	return nil
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Request is one model call.
type Request struct {
	Task        Task
	Messages    []Message // the system prompt is Messages[0] with RoleSystem, if any
	Tools       []ToolSpec
	MaxTokens   int
	Temperature *float64
	// Interactive marks calls the owner is waiting for (chat): they go on
	// past the spent daily budget (up to llm.hard_limit_usd, if set);
	// background work is paused.
	Interactive bool
	// Within is the task whose data the request carries when it is made
	// for that task's work under another route (summarising a chat run's
	// turns, refining its plan): Within's privacy: local applies too, so
	// a local task's data never reaches a provider its own route forbids.
	Within Task
}

// Usage is token accounting for one call.
type Usage struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Response is a completed model call.
type Response struct {
	Content   string
	ToolCalls []ToolCall
	Usage     Usage
	Provider  string // the configured provider name that answered
	Model     string
	// StopReason is the provider's reason, normalised: stop, tool_calls, length.
	StopReason string
}

// Delta is one streamed piece of a response.
//
// Deltas are passed through live. When an attempt fails after some of its
// deltas were delivered, the router at once sends a Delta with Reset set:
// the consumer must discard all text received so far for this call. A
// retry (the same provider or the next) then streams its answer from the
// start; if none succeeds, the call's error follows. So text is never
// duplicated, and the final Response holds only the answer that completed.
type Delta struct {
	Text  string
	Reset bool
}
