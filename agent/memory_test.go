package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/internal/fakes/llm"
)

// memoryFunc adapts a function to MemorySource.
type memoryFunc func(ctx context.Context, query string) string

func (f memoryFunc) PromptMemory(ctx context.Context, query string) string { return f(ctx, query) }

// The memory hook is asked with the run's objective, and what it gives
// is in the system prompt of every model call of the run.
func TestMemoryGoesIntoTheSystemPrompt(t *testing.T) {
	var asked []string
	h := newHarness(t, harnessOpts{agent: func(o *Options) {
		o.Memory = memoryFunc(func(_ context.Context, q string) string {
			asked = append(asked, q)
			return "About the owner (remembered): [m7] The owner's sister Ana lives in Lisbon."
		})
	}})
	h.model.script(
		llm.Turn{ToolCalls: []llm.ToolCall{call("search", `{"query":"Ana"}`)}},
		llm.Turn{Text: "Ana lives in Lisbon [m7]."},
	)
	h.run(Task{Objective: "where does my sister live?"})
	reqs := h.model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for i, r := range reqs {
		if !strings.Contains(r.System, "[m7] The owner's sister Ana lives in Lisbon.") {
			t.Fatalf("call %d: system prompt lacks the memory:\n%s", i, r.System)
		}
	}
	if len(asked) != 1 || asked[0] != "where does my sister live?" {
		t.Fatalf("memory asked with %q, want the objective once", asked)
	}
}
