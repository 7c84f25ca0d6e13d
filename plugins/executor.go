package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/clip"
)

// Executor carries out approved plugin_action proposals; the executor
// registry maps approval.KindPluginAction to it.
func (m *Manager) Executor() Executor { return executor{m} }

// Executor is an approval.Executor that names the kinds it carries out.
type Executor interface {
	approval.Executor
	Kinds() []approval.Kind
}

type executor struct{ m *Manager }

func (executor) Kinds() []approval.Kind { return []approval.Kind{approval.KindPluginAction} }

// action is an approved call, checked against the plugin as confirmed now.
type action struct {
	p    *plugin
	pl   approval.PluginActionPayload
	omi  *OmiTool
	decl *ToolDecl
}

func (e executor) lookup(p *approval.Proposal) (*action, error) {
	if p.Kind != approval.KindPluginAction {
		return nil, fmt.Errorf("plugins: cannot execute a %s proposal", p.Kind)
	}
	a := &action{}
	if err := json.Unmarshal(p.Payload, &a.pl); err != nil {
		return nil, fmt.Errorf("plugins: payload: %w", err)
	}
	pg, err := e.m.current(a.pl.Plugin)
	if err != nil {
		return nil, err
	}
	a.p = pg
	if t, ok := pg.omiTool(a.pl.Tool); ok {
		// The approved request goes only where the confirmed manifest
		// says this tool lives.
		if err := sameEndpoint(t, a.pl); err != nil {
			return nil, fmt.Errorf("plugins: %s/%s: %w; not sent", a.pl.Plugin, a.pl.Tool, err)
		}
		a.omi = t
		return a, nil
	}
	if d, ok := pg.localTool(a.pl.Tool); ok && a.pl.Endpoint == "" {
		a.decl = d
		return a, nil
	}
	return nil, fmt.Errorf("plugins: plugin %s has no tool %q", a.pl.Plugin, a.pl.Tool)
}

func sameEndpoint(t *OmiTool, pl approval.PluginActionPayload) error {
	u, err := url.Parse(pl.Endpoint)
	if err != nil {
		return err
	}
	u.RawQuery = ""
	want := *t.url
	want.RawQuery = ""
	if pl.Method != t.Method || u.String() != want.String() {
		return fmt.Errorf("the approved call is %s %s, but the confirmed manifest says %s %s", pl.Method, u, t.Method, &want)
	}
	if t.Method == "GET" && len(pl.Body) > 0 {
		return errors.New("a GET call has no body")
	}
	return nil
}

// maxRemoteID bounds the answer kept as the proposal's outcome.
const maxRemoteID = 300

// Execute makes the approved call once, with the idempotency key. A call
// whose outcome cannot be known (no answer in time, a broken connection)
// is reported as such and never retried: chat-tools servers cannot be
// asked whether it landed.
func (e executor) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	a, err := e.lookup(p)
	if err != nil {
		return "", err
	}
	if a.omi != nil {
		// Exactly the approved bytes: the body (or GET query) the owner saw.
		text, err := a.p.send(ctx, a.omi, httpCall{Method: a.pl.Method, Endpoint: a.pl.Endpoint, Body: a.pl.Body}, key)
		if err != nil {
			return "", outcome(err)
		}
		return clip.Text(text, maxRemoteID), nil
	}
	resp, err := a.p.runLocal(ctx, a.decl, request{Tool: a.pl.Tool, Arguments: a.pl.Arguments, IdempotencyKey: key, Op: "run"}, false)
	if err != nil {
		return "", outcome(err)
	}
	if resp.RemoteID != "" {
		return resp.RemoteID, nil
	}
	return clip.Text(resp.Output, maxRemoteID), nil
}

// outcome marks an error after which the call may or may not have been
// carried out.
func outcome(err error) error {
	if errors.Is(err, errNotSent) || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errTransport) {
		return err
	}
	return fmt.Errorf("%w: %w", approval.ErrOutcomeUnknown, err)
}

// Find asks a local plugin whether an action with key already ran, if
// its manifest says it can answer (find: true). Chat-tools servers
// cannot be asked.
func (e executor) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	a, err := e.lookup(p)
	if err != nil {
		return "", false, err
	}
	if a.omi != nil {
		return "", false, fmt.Errorf("plugin %s is a chat-tools server, which cannot be asked whether a call arrived: %w", a.p.pin.Name, approval.ErrNoLookup)
	}
	if !a.p.local.Find {
		return "", false, fmt.Errorf("plugin %s does not answer lookups (find: true in its manifest): %w", a.p.pin.Name, approval.ErrNoLookup)
	}
	resp, err := a.p.runLocal(ctx, a.decl, request{Tool: a.pl.Tool, Arguments: a.pl.Arguments, IdempotencyKey: key, Op: "find"}, false)
	if err != nil {
		return "", false, err
	}
	return resp.RemoteID, resp.Found, nil
}
