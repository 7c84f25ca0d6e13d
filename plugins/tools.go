package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/approval"
)

// ToolName is the agent's name for a plugin tool.
func ToolName(plugin, tool string) string { return plugin + "_" + tool }

// buildTools makes the agent's tools: a read tool runs (or, when its
// arguments carry outside text, proposes); every other tool only
// proposes a plugin_action. The tools look the plugin up when called, so
// a reload or a changed manifest takes effect in runs already going.
func (p *plugin) buildTools(m *Manager) error {
	type decl struct {
		name, desc, status string
		schema             json.RawMessage
		timeout            time.Duration
	}
	var decls []decl
	if p.omi != nil {
		for _, t := range p.omi.Tools {
			decls = append(decls, decl{t.Name, t.Description, t.StatusMessage, t.schema, m.opts.CallTimeout})
		}
	}
	if p.local != nil {
		for _, t := range p.local.Tools {
			timeout := time.Duration(p.local.Timeout)
			if t.Timeout > 0 {
				timeout = time.Duration(t.Timeout)
			}
			decls = append(decls, decl{t.Name, t.Description, "", t.schema, timeout})
		}
	}
	name := p.pin.Name
	p.tools = nil
	for _, d := range decls {
		full := ToolName(name, d.name)
		desc := fmt.Sprintf("[plugin %s] %s", name, strings.TrimSpace(d.desc))
		var t *agent.Tool
		var err error
		if p.read[d.name] {
			t, err = agent.NewRawTool(full, desc, agent.Read, d.timeout+time.Second, d.schema, m.readCall(name, d.name), nil)
			if t != nil {
				t.Status = d.status
			}
		} else {
			t, err = agent.NewRawTool(full, desc+" Runs only after the owner approves the proposal this creates.", agent.Outgoing, 0, d.schema, nil, m.proposeCall(name, d.name))
		}
		if err != nil {
			return err
		}
		p.tools = append(p.tools, t)
	}
	return nil
}

// current is name's plugin as loaded now, if its tools may be used.
func (m *Manager) current(name string) (*plugin, error) {
	p, ok := m.get(name)
	if !ok {
		return nil, fmt.Errorf("plugin %s is not added any more", name)
	}
	if err := p.held(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *plugin) schema(tool string) (json.RawMessage, bool) {
	if t, ok := p.omiTool(tool); ok {
		return t.schema, true
	}
	if t, ok := p.localTool(tool); ok {
		return t.schema, true
	}
	return nil, false
}

// readCall runs a read tool: only the schema's arguments, short, and as
// a proposal instead when they carry outside text the owner did not give
// (or the tool is no longer confirmed as read).
func (m *Manager) readCall(name, tool string) func(context.Context, json.RawMessage) (agent.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (agent.Result, error) {
		p, err := m.current(name)
		if err != nil {
			return agent.Result{}, err
		}
		schema, ok := p.schema(tool)
		if !ok {
			return agent.Result{}, fmt.Errorf("plugin %s no longer offers %s", name, tool)
		}
		ps, err := params(schema, args, true)
		if err != nil {
			return agent.Result{}, err
		}
		why := ""
		if !p.read[tool] {
			why = "this tool is no longer confirmed as read-only"
		} else if prov, ok := agent.ProvenanceFrom(ctx); ok {
			if found := leaks(prov, ps); len(found) > 0 {
				why = "the lookup would send text from outside content that you did not give: " + strings.Join(found, ", ")
			}
		}
		if why != "" {
			d, err := p.draft(tool, ps, why)
			if err != nil {
				return agent.Result{}, err
			}
			return agent.Result{}, &agent.ApprovalRequired{Draft: d}
		}
		text, err := p.call(ctx, tool, ps, "", true)
		if err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Data: []agent.Data{{Source: "plugin " + name, Content: text}}}, nil
	}
}

// proposeCall drafts an outgoing call for the owner's approval.
func (m *Manager) proposeCall(name, tool string) func(context.Context, json.RawMessage) (approval.Draft, error) {
	return func(_ context.Context, args json.RawMessage) (approval.Draft, error) {
		p, err := m.current(name)
		if err != nil {
			return approval.Draft{}, err
		}
		schema, ok := p.schema(tool)
		if !ok {
			return approval.Draft{}, fmt.Errorf("plugin %s no longer offers %s", name, tool)
		}
		ps, err := params(schema, args, false)
		if err != nil {
			return approval.Draft{}, err
		}
		return p.draft(tool, ps, "")
	}
}

// call makes one call of tool, through HTTP or the sandbox, and returns
// its answer. key is the idempotency key of an approved call; confined
// runs a local read call only under Landlock.
func (p *plugin) call(ctx context.Context, tool string, ps map[string]json.RawMessage, key string, confined bool) (string, error) {
	if t, ok := p.omiTool(tool); ok {
		c, err := p.request(t, ps)
		if err != nil {
			return "", err
		}
		return p.send(ctx, t, c, key)
	}
	decl, ok := p.localTool(tool)
	if !ok {
		return "", fmt.Errorf("plugin %s no longer offers %s", p.pin.Name, tool)
	}
	args, err := json.Marshal(ps)
	if err != nil {
		return "", err
	}
	resp, err := p.runLocal(ctx, decl, request{Tool: tool, Arguments: args, IdempotencyKey: key}, confined)
	if err != nil {
		return "", err
	}
	return resp.Output, nil
}
