package memory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitUntil polls cond (a state the loop under test changes) for up to 20s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Run reads MEMORY.md back when it is saved, and runs an extraction pass
// in the background once five owner messages are waiting; it stops with
// its context.
func TestRunWatchesAndExtracts(t *testing.T) {
	model := &countingModel{answer: `{"facts":[{"text":"My daughter Emma starts ballet on Thursdays","category":"family"}]}`}
	e := newEnv(t, envOpts{model: model})
	e.add("I prefer morning meetings")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() { defer wg.Done(); runErr = e.m.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	path := filepath.Join(e.home, MemoryFile)
	edited := strings.Replace(e.file(), "morning meetings", "afternoon meetings", 1)
	// Saved the way editors do: a new file renamed over the old one.
	tmp := path + ".swp"
	if err := os.WriteFile(tmp, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the edit to apply", func() bool { return contains(e.texts(), "I prefer afternoon meetings") })

	for _, m := range []string{"hi", "My daughter Emma starts ballet on Thursdays", "thanks", "what's the weather", "ok"} {
		e.m.Observe(ctx, "s_1", m)
	}
	waitUntil(t, "the extraction pass", func() bool { return contains(e.texts(), "My daughter Emma starts ballet on Thursdays") })
	if !strings.Contains(e.file(), "My daughter Emma starts ballet on Thursdays") {
		t.Fatalf("MEMORY.md:\n%s", e.file())
	}
	cancel()
	wg.Wait()
	if runErr != context.Canceled {
		t.Fatalf("Run returned %v", runErr)
	}
}

// memory_facts answers "what do you know about me?" with the facts and
// their ids; a query narrows it.
func TestFactsToolCitesIDs(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.add("My sister Ana lives in Lisbon")
	e.add("I prefer aisle seats")
	all := e.m.describe(context.Background(), factsArgs{}, time.UTC)
	if !strings.Contains(all, "[m1] (family; from owner, 2026-11-20) My sister Ana lives in Lisbon") || !strings.Contains(all, "[m2] (preferences") {
		t.Fatalf("all:\n%s", all)
	}
	one := e.m.describe(context.Background(), factsArgs{Query: "seats on the plane"}, time.UTC)
	if !strings.Contains(one, "[m2]") || strings.Contains(one, "[m1]") {
		t.Fatalf("query:\n%s", one)
	}
	tools, err := e.m.Tools(nil, time.UTC)
	if err != nil || len(tools) != 2 || tools[0].Effect != "read" || tools[1].Effect != "draft" {
		t.Fatalf("tools: %v %+v", err, tools)
	}
}
