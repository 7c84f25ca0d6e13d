package memory

import (
	"context"
	"maps"
	"strings"
	"testing"
)

// The fact index follows every change (a fact added, superseded,
// forgotten, edited or added in MEMORY.md) and is rebuilt at open; a
// question that shares no word with a fact finds it by similarity.
func TestFactIndexFollowsChanges(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, envOpts{})
	check := func(m *Memory, step string) {
		t.Helper()
		facts, err := m.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]string{}
		for _, f := range facts {
			want[f.ID] = f.Text
		}
		m.mu.Lock()
		got, docs := maps.Clone(m.index.texts), m.index.coll.Count()
		m.mu.Unlock()
		if !maps.Equal(got, want) || docs != len(want) {
			t.Fatalf("after %s: index holds %v (%d documents), active facts are %v", step, got, docs, want)
		}
	}
	e.add("The school play is on Friday")
	check(e.m, "add")
	e.add("The school play moved to Saturday")
	check(e.m, "supersede")
	dog := e.add("I have a dog named Luna").Fact
	check(e.m, "add")
	if _, err := e.m.Forget(ctx, dog.ID, "forgotten by the owner"); err != nil {
		t.Fatal(err)
	}
	check(e.m, "forget")
	e.edit("The school play moved to Saturday", "The school play moved to Sunday\n- I love photography")
	check(e.m, "MEMORY.md edit")

	const q, fact = "Am I a photographer?", "I love photography"
	facts, err := e.m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Relevant(facts, q, 0) {
		if f.Text == fact {
			t.Fatalf("word overlap alone finds %q for %q; the case shows nothing", fact, q)
		}
	}
	if p := e.prompt(q); !strings.Contains(p, fact) {
		t.Errorf("prompt for %q lacks %q:\n%s", q, fact, p)
	}
	again := e.open(nil)
	check(again, "open")
	if p := again.PromptMemory(ctx, q); !strings.Contains(p, fact) {
		t.Errorf("after open, prompt for %q lacks %q:\n%s", q, fact, p)
	}
}
