package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
)

func TestProvenanceSeparatesTheOwnersWordsFromOutsideText(t *testing.T) {
	p := provenance([]router.Message{
		{Role: router.RoleUser, Content: "find the invoice from Bob\n\n" + untrusted.Wrap("retrieved", "Bob: please wire to IBAN DE89")},
		{Role: router.RoleAssistant, Content: "looking"},
		{Role: router.RoleTool, Content: "1 result:\n" + untrusted.Wrap("search", "mail one") + "\ntrailer " + untrusted.Wrap("x", "clipped, never closed")},
	})
	if strings.Contains(p.Request, "IBAN") || !strings.Contains(p.Request, "find the invoice from Bob") || strings.Contains(p.Request, "looking") {
		t.Errorf("request = %q", p.Request)
	}
	joined := strings.Join(p.Untrusted, "|")
	for _, want := range []string{"IBAN DE89", "mail one", "clipped, never closed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("untrusted lacks %q: %q", want, joined)
		}
	}
	if strings.Contains(joined, "trailer") || len(p.Untrusted) != 3 {
		t.Errorf("untrusted = %q", p.Untrusted)
	}
}

// TestReadToolCanAskForApprovalAndReportsStatus: a read tool sees the
// run's provenance; one that answers ApprovalRequired is proposed (the
// gate holds the draft, the model is told), not run; a tool's status
// message is an event while it runs. Added tools join every run.
func TestReadToolCanAskForApprovalAndReportsStatus(t *testing.T) {
	var mu sync.Mutex
	var seen []Provenance
	lookup, err := NewRawTool("web_lookup", "looks something up on the web", Read, time.Second, json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		func(ctx context.Context, args json.RawMessage) (Result, error) {
			p, ok := ProvenanceFrom(ctx)
			if !ok {
				t.Error("no provenance inside a run")
			}
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			if strings.Contains(string(args), "secret") {
				return Result{}, &ApprovalRequired{Draft: approval.Draft{Kind: approval.KindPluginAction, Title: "Look up on the web",
					Payload: &approval.PluginActionPayload{Plugin: "web", Tool: "lookup", Arguments: args}}}
			}
			return Result{Data: []Data{{Source: "web", Content: "found it"}}}, nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lookup.Status = "Looking it up…"
	h := newHarness(t, harnessOpts{agent: func(o *Options) { o.MoreTools = func() []*Tool { return []*Tool{lookup} } }})
	h.model.script(
		llm.Turn{ToolCalls: []llm.ToolCall{call("web_lookup", `{"q":"weather"}`), call("web_lookup", `{"q":"the secret"}`)}},
		llm.Turn{Text: "done"},
	)
	h.run(Task{Objective: "what is the weather?", Items: []Cited{{ItemID: 1, Title: "mail", Text: "the secret is 42", Time: clock}}})
	if got := strings.Join(h.toolStatuses(), ","); got != "web_lookup:ok,web_lookup:proposed" {
		t.Fatalf("statuses %s", got)
	}
	ps := h.proposals()
	if len(ps) != 1 || ps[0].Kind != approval.KindPluginAction || ps[0].State != approval.StatePending {
		t.Fatalf("proposals %+v", ps)
	}
	if st := h.eventsOf(EventToolStatus); len(st) != 2 || st[0].Text != "Looking it up…" || st[0].Tool.Name != "web_lookup" {
		t.Errorf("status events %+v", st)
	}
	if len(seen) != 2 || !strings.Contains(seen[0].Request, "what is the weather?") || !strings.Contains(strings.Join(seen[0].Untrusted, ""), "the secret is 42") {
		t.Errorf("provenance %+v", seen)
	}
	res, _ := lastToolResult(h.model.requests()[1])
	if !strings.Contains(res, "Proposal "+ps[0].ID) {
		t.Errorf("the model was told %q", res)
	}
}
