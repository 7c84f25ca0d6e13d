// Package planner turns an objective into a hierarchical plan — phases of
// steps with tool hints — from templates chosen by the objective, refines
// it with a model when one is available (its output validated, the template
// kept when it is not usable), and advances it phase by phase with a short
// reflection.
package planner

import (
	"fmt"
	"strings"

	"github.com/omnibrain/omnibrain/internal/clip"
)

// Status of a phase.
type Status string

const (
	Pending Status = "pending"
	Active  Status = "active"
	Done    Status = "done"
)

// Step is one thing to do, with the tools likely to do it.
type Step struct {
	Description string   `json:"description"`
	ToolHints   []string `json:"tool_hints,omitempty"`
}

// Phase is a group of steps with one goal.
type Phase struct {
	Name       string `json:"name"`
	Goal       string `json:"goal"`
	Steps      []Step `json:"steps"`
	Status     Status `json:"status"`
	Reflection string `json:"reflection,omitempty"` // what the phase found, written when it completes
}

// Plan is an objective broken into phases. Current indexes the active phase;
// it equals len(Phases) once every phase is done.
type Plan struct {
	Objective string   `json:"objective"`
	Template  string   `json:"template"` // template name, "generic", or "" for a chat plan
	Chains    []string `json:"chains,omitempty"`
	Phases    []Phase  `json:"phases"`
	Current   int      `json:"current"`
	Refined   bool     `json:"refined,omitempty"` // a model rewrote the template's phases
}

// Finished reports whether every phase is done.
func (p *Plan) Finished() bool { return p.Current >= len(p.Phases) }

// Active returns the active phase, or nil when the plan is finished.
func (p *Plan) Active() *Phase {
	if p.Finished() {
		return nil
	}
	return &p.Phases[p.Current]
}

// maxReflection bounds a reflection kept in the plan (and so in the prompt).
const maxReflection = 300

// Advance completes the active phase with a reflection and activates the
// next. It returns the completed phase, or nil when the plan was finished.
func (p *Plan) Advance(reflection string) *Phase {
	ph := p.Active()
	if ph == nil {
		return nil
	}
	ph.Status = Done
	ph.Reflection = clip.Text(strings.TrimSpace(reflection), maxReflection)
	done := *ph
	p.Current++
	if nx := p.Active(); nx != nil {
		nx.Status = Active
	}
	return &done
}

// Render writes the plan for the system prompt: done phases by their
// reflection, the active phase with its steps, later phases by name.
func (p *Plan) Render() string {
	if p == nil || len(p.Phases) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Plan for: %s\n", clip.Text(firstLine(p.Objective), maxObjective))
	for i, ph := range p.Phases {
		switch {
		case ph.Status == Done:
			fmt.Fprintf(&b, "%d. [done] %s", i+1, ph.Name)
			if ph.Reflection != "" {
				fmt.Fprintf(&b, " — %s", ph.Reflection)
			}
			b.WriteByte('\n')
		case i == p.Current:
			fmt.Fprintf(&b, "%d. [active] %s: %s\n", i+1, ph.Name, ph.Goal)
			for _, s := range ph.Steps {
				fmt.Fprintf(&b, "   - %s", s.Description)
				if len(s.ToolHints) > 0 {
					fmt.Fprintf(&b, " (tools: %s)", strings.Join(s.ToolHints, ", "))
				}
				b.WriteByte('\n')
			}
		default:
			fmt.Fprintf(&b, "%d. %s\n", i+1, ph.Name)
		}
	}
	if p.Current < len(p.Phases)-1 {
		b.WriteString("When the active phase's goal is met, call finish_phase with a one-sentence reflection.\n")
	}
	return b.String()
}

// maxObjective bounds the objective the plan repeats: the task itself is
// in the conversation, the plan only names it.
const maxObjective = 100

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// ToolHints returns the hints of the active phase's steps.
func (p *Plan) ToolHints() []string {
	ph := p.Active()
	if ph == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range ph.Steps {
		for _, h := range s.ToolHints {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}
