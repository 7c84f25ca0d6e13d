package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/router"
)

// Effect is what running a tool can do to the world (DESIGN.md, the
// approval gate).
type Effect string

const (
	Read      Effect = "read"      // looks at local data only
	Draft     Effect = "draft"     // changes local state only (findings, plan, drafts)
	Outgoing  Effect = "outgoing"  // would reach another person or remote state: only ever proposed
	Forbidden Effect = "forbidden" // never run, whatever the model asks
)

// DefaultToolTimeout bounds a tool that declares no timeout.
const DefaultToolTimeout = 30 * time.Second

// Result is what a read or draft tool returns. Text is the tool's own
// words; Items and Data carry outside text, which the agent numbers for
// citation and marks as untrusted before the model sees it.
type Result struct {
	Text     string
	Items    []Cited
	Data     []Data
	Findings []graph.Finding

	reflection *string // finish_phase: complete the active phase
}

func (r Result) advance() (string, bool) {
	if r.reflection == nil {
		return "", false
	}
	return *r.reflection, true
}

// Cited is a stored item a tool surfaced; the model can cite it as [n].
type Cited struct {
	ItemID     int64     `json:"item_id"`
	ExternalID string    `json:"id"` // the id the item was imported or collected with
	Source     string    `json:"source"`
	Kind       string    `json:"kind,omitempty"`
	Title      string    `json:"title"`
	Time       time.Time `json:"time"`
	From       string    `json:"from,omitempty"`
	Text       string    `json:"-"` // snippet or body shown to the model
}

// Data is outside text that is not a stored item (a plugin's output).
type Data struct {
	Source  string
	Content string
}

// Tool is one capability offered to the model. Build tools with NewTool
// (read, draft) or NewProposalTool (outgoing): an outgoing tool has no
// code that acts, only code that drafts a proposal for the gate.
type Tool struct {
	Name        string
	Description string
	Effect      Effect
	Timeout     time.Duration
	// Status is shown to the owner while the tool runs (a plugin's
	// status_message), as a tool_status event.
	Status string

	schema   json.RawMessage
	resolved *jsonschema.Resolved
	run      func(ctx context.Context, args json.RawMessage) (Result, error)
	propose  func(ctx context.Context, args json.RawMessage) (approval.Draft, error)
}

// Spec describes the tool to the model.
func (t *Tool) Spec() router.ToolSpec {
	return router.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.schema}
}

// NewTool builds a read or draft tool whose arguments are a T, with the
// JSON schema generated from T (field tags `jsonschema:"description"`).
func NewTool[T any](name, description string, effect Effect, timeout time.Duration, fn func(ctx context.Context, args T) (Result, error)) (*Tool, error) {
	if effect != Read && effect != Draft {
		return nil, fmt.Errorf("agent: tool %s: NewTool builds read or draft tools, not %s (use NewProposalTool)", name, effect)
	}
	t, err := newTool[T](name, description, effect, timeout)
	if err != nil {
		return nil, err
	}
	t.run = func(ctx context.Context, raw json.RawMessage) (Result, error) {
		var args T
		if err := json.Unmarshal(raw, &args); err != nil {
			return Result{}, fmt.Errorf("arguments: %w", err)
		}
		return fn(ctx, args)
	}
	return t, nil
}

// NewProposalTool builds an outgoing tool: fn turns the model's arguments
// into a draft, and the agent hands the draft to the approval gate. The
// tool cannot send, post or change anything itself.
func NewProposalTool[T any](name, description string, fn func(ctx context.Context, args T) (approval.Draft, error)) (*Tool, error) {
	t, err := newTool[T](name, description, Outgoing, 0)
	if err != nil {
		return nil, err
	}
	t.propose = func(ctx context.Context, raw json.RawMessage) (approval.Draft, error) {
		var args T
		if err := json.Unmarshal(raw, &args); err != nil {
			return approval.Draft{}, fmt.Errorf("arguments: %w", err)
		}
		return fn(ctx, args)
	}
	return t, nil
}

// NewForbiddenTool declares a capability the model must never use; it is
// listed so the model is told plainly, and refused whenever called.
func NewForbiddenTool(name, description string) *Tool {
	return &Tool{Name: name, Description: description + " (forbidden: always refused)", Effect: Forbidden,
		schema: json.RawMessage(`{"type":"object"}`)}
}

// NewRawTool builds a tool from a JSON schema given as is (plugins declare
// theirs in a manifest). Outgoing raw tools go through propose.
func NewRawTool(name, description string, effect Effect, timeout time.Duration, schema json.RawMessage,
	run func(ctx context.Context, args json.RawMessage) (Result, error),
	propose func(ctx context.Context, args json.RawMessage) (approval.Draft, error)) (*Tool, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("agent: tool %s: schema: %w", name, err)
	}
	t := &Tool{Name: name, Description: description, Effect: effect, Timeout: timeout, schema: schema, run: run, propose: propose}
	if err := t.resolve(&s); err != nil {
		return nil, err
	}
	switch {
	case effect == Outgoing && (propose == nil || run != nil):
		return nil, fmt.Errorf("agent: outgoing tool %s must only propose", name)
	case (effect == Read || effect == Draft) && (run == nil || propose != nil):
		return nil, fmt.Errorf("agent: %s tool %s needs run and no propose", effect, name)
	case effect != Read && effect != Draft && effect != Outgoing:
		return nil, fmt.Errorf("agent: tool %s: effect %q", name, effect)
	}
	return t, nil
}

func newTool[T any](name, description string, effect Effect, timeout time.Duration) (*Tool, error) {
	if !validName(name) {
		return nil, fmt.Errorf("agent: tool name %q: use 1-64 letters, digits, _ or -", name)
	}
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("agent: tool %s: %w", name, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("agent: tool %s: %w", name, err)
	}
	t := &Tool{Name: name, Description: description, Effect: effect, Timeout: timeout, schema: b}
	return t, t.resolve(s)
}

func (t *Tool) resolve(s *jsonschema.Schema) error {
	r, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("agent: tool %s: schema: %w", t.Name, err)
	}
	t.resolved = r
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// errInvalidArgs marks arguments the model must fix.
var errInvalidArgs = errors.New("invalid arguments")

// validate checks raw arguments against the tool's schema and returns
// them in canonical form (keys sorted, no insignificant space), which is
// also what loop detection hashes. Empty arguments mean {}.
func (t *Tool) validate(raw json.RawMessage) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", errInvalidArgs, err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: arguments must be a JSON object", errInvalidArgs)
	}
	if t.resolved != nil {
		if err := t.resolved.Validate(inst); err != nil {
			return nil, fmt.Errorf("%w: %v", errInvalidArgs, err)
		}
	}
	canon, err := canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidArgs, err)
	}
	return canon, nil
}

// canonical re-encodes valid JSON with sorted keys, no insignificant
// space and one spelling per number (1, 1.0 and 1e0 are all 1). The tool
// runs on this form, so an integer past float64's 2^53 keeps every digit:
// an id the model names is the id the tool gets.
func canonical(raw json.RawMessage) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(canonNumbers(v)) // encoding/json sorts map keys
}

func canonNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonNumbers(e)
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return x // an integer literal, exact as written
		}
		f, err := x.Float64()
		if err != nil {
			return x
		}
		if f == math.Trunc(f) {
			return json.Number(strconv.FormatFloat(f, 'f', -1, 64)) // 1.0 and 1e2 as integers
		}
		return f
	}
	return v
}

// Registry holds the tools offered to the model, by name.
type Registry struct {
	tools map[string]*Tool
}

// NewRegistry returns a registry of the given tools; names must be unique.
func NewRegistry(tools ...*Tool) (*Registry, error) {
	r := &Registry{tools: map[string]*Tool{}}
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers a tool.
func (r *Registry) Add(t *Tool) error {
	if t == nil {
		return errors.New("agent: nil tool")
	}
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("agent: tool %s registered twice", t.Name)
	}
	r.tools[t.Name] = t
	return nil
}

// Get returns the tool with name.
func (r *Registry) Get(name string) (*Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Names lists the tool names, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.tools))
}

// Specs describes every tool to the model, sorted by name so the prompt
// (and a provider's prompt cache) is stable.
func (r *Registry) Specs() []router.ToolSpec {
	out := make([]router.ToolSpec, 0, len(r.tools))
	for _, n := range r.Names() {
		out = append(out, r.tools[n].Spec())
	}
	return out
}

// With returns a registry of r's tools plus more (later ones win), for a
// run that adds its own tools (finish_phase, record_finding).
func (r *Registry) With(more ...*Tool) *Registry {
	out := &Registry{tools: maps.Clone(r.tools)}
	for _, t := range more {
		out.tools[t.Name] = t
	}
	return out
}
