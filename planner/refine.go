package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/omnibrain/omnibrain/router"
)

// Completer is the model call refinement needs; router.Router provides it.
type Completer interface {
	Complete(ctx context.Context, req router.Request) (*router.Response, error)
}

// Limits on a refined plan: a model that answers with fifty phases or
// invented tools is ignored, not followed.
const (
	maxPhases        = 8
	maxStepsPerPhase = 8
	maxNameLen       = 60
	maxTextLen       = 300
)

// wirePlan is what the model must answer with.
type wirePlan struct {
	Phases []wirePhase `json:"phases" jsonschema:"the phases in order"`
}

type wirePhase struct {
	Name  string     `json:"name" jsonschema:"short name of the phase"`
	Goal  string     `json:"goal" jsonschema:"what the phase must establish"`
	Steps []wireStep `json:"steps,omitempty"`
}

type wireStep struct {
	Description string   `json:"description"`
	ToolHints   []string `json:"tool_hints,omitempty"`
}

// ErrInvalidRefinement wraps every reason a model's plan was not used.
var ErrInvalidRefinement = errors.New("planner: model plan rejected")

// Refine asks the model to adapt the plan to its objective. It returns a
// new plan whose phases the model wrote, or, when the model fails or its
// answer does not validate, the original plan and the reason (the caller
// goes on with the template).
func Refine(ctx context.Context, m Completer, p *Plan, tools []string) (*Plan, error) {
	if p.Current > 0 {
		return p, fmt.Errorf("%w: plan already under way", ErrInvalidRefinement)
	}
	current, _ := json.Marshal(toWire(p))
	prompt := fmt.Sprintf(`Objective: %s

Draft plan (JSON): %s

Available tools: %s

Improve the draft for this objective. Answer with JSON only, of the form
{"phases":[{"name":"...","goal":"...","steps":[{"description":"...","tool_hints":["tool"]}]}]}
with at most %d phases of at most %d steps, using only the available tools as hints.
Outgoing actions (mail, calendar, comments) are only ever proposed for the owner's approval.`,
		p.Objective, current, strings.Join(tools, ", "), maxPhases, maxStepsPerPhase)
	resp, err := m.Complete(ctx, router.Request{
		Task:      router.TaskPlanning,
		Messages:  []router.Message{{Role: router.RoleSystem, Content: "You plan work for a personal assistant agent. You answer with JSON only."}, {Role: router.RoleUser, Content: prompt}},
		MaxTokens: 1200,
	})
	if err != nil {
		return p, fmt.Errorf("planner: refine: %w", err)
	}
	w, err := parseRefinement(resp.Content, tools)
	if err != nil {
		return p, err
	}
	out := &Plan{Objective: p.Objective, Template: p.Template, Chains: slices.Clone(p.Chains), Refined: true}
	for _, wp := range w.Phases {
		ph := Phase{Name: strings.TrimSpace(wp.Name), Goal: strings.TrimSpace(wp.Goal), Status: Pending}
		for _, ws := range wp.Steps {
			ph.Steps = append(ph.Steps, Step{Description: strings.TrimSpace(ws.Description), ToolHints: ws.ToolHints})
		}
		out.Phases = append(out.Phases, ph)
	}
	out.Phases[0].Status = Active
	return out, nil
}

func toWire(p *Plan) wirePlan {
	var w wirePlan
	for _, ph := range p.Phases {
		wp := wirePhase{Name: ph.Name, Goal: ph.Goal}
		for _, s := range ph.Steps {
			wp.Steps = append(wp.Steps, wireStep(s))
		}
		w.Phases = append(w.Phases, wp)
	}
	return w
}

var wireSchema = func() *jsonschema.Resolved {
	s, err := jsonschema.For[wirePlan](nil)
	if err != nil {
		panic(err) // a programming error in wirePlan, caught by any test
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic(err)
	}
	return r
}()

// parseRefinement extracts and validates the model's JSON plan.
func parseRefinement(content string, tools []string) (*wirePlan, error) {
	start, end := strings.Index(content, "{"), strings.LastIndex(content, "}")
	if start < 0 || end < start {
		return nil, fmt.Errorf("%w: no JSON object in the answer", ErrInvalidRefinement)
	}
	raw := []byte(content[start : end+1])
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRefinement, err)
	}
	if err := wireSchema.Validate(inst); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRefinement, err)
	}
	var w wirePlan
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRefinement, err)
	}
	if n := len(w.Phases); n == 0 || n > maxPhases {
		return nil, fmt.Errorf("%w: %d phases (want 1 to %d)", ErrInvalidRefinement, n, maxPhases)
	}
	for i, ph := range w.Phases {
		name, goal := strings.TrimSpace(ph.Name), strings.TrimSpace(ph.Goal)
		switch {
		case name == "" || len(name) > maxNameLen:
			return nil, fmt.Errorf("%w: phase %d has no usable name", ErrInvalidRefinement, i+1)
		case goal == "" || len(goal) > maxTextLen:
			return nil, fmt.Errorf("%w: phase %q has no usable goal", ErrInvalidRefinement, name)
		case len(ph.Steps) > maxStepsPerPhase:
			return nil, fmt.Errorf("%w: phase %q has %d steps (max %d)", ErrInvalidRefinement, name, len(ph.Steps), maxStepsPerPhase)
		}
		for _, s := range ph.Steps {
			if d := strings.TrimSpace(s.Description); d == "" || len(d) > maxTextLen {
				return nil, fmt.Errorf("%w: phase %q has a step without a usable description", ErrInvalidRefinement, name)
			}
			for _, h := range s.ToolHints {
				if !slices.Contains(tools, h) {
					return nil, fmt.Errorf("%w: phase %q names tool %q, which does not exist", ErrInvalidRefinement, name, h)
				}
			}
		}
	}
	return &w, nil
}
