package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/omnibrain/omnibrain/store"
)

func TestRunsRepository(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs := NewRuns(st)
	r := &Checkpoint{ID: "run_1", Session: "s1", Route: "chat", Objective: "find the budget", Status: RunRunning, Iteration: 1, State: json.RawMessage(`{"iteration":1}`), Interactive: true}
	if err := runs.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Iteration, r.State = 2, json.RawMessage(`{"iteration":2}`)
	if err := runs.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	other := &Checkpoint{ID: "run_2", Status: RunDone, State: json.RawMessage(`{}`), Answer: json.RawMessage(`{"text":"hi"}`)}
	if err := runs.Save(ctx, other); err != nil {
		t.Fatal(err)
	}
	got, err := runs.Get(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Iteration != 2 || string(got.State) != `{"iteration":2}` || got.Answer != nil || !got.Interactive || got.Objective != "find the budget" || got.Created.IsZero() {
		t.Fatalf("run = %+v", got)
	}
	if done, _ := runs.Get(ctx, "run_2"); string(done.Answer) != `{"text":"hi"}` {
		t.Fatalf("finished run = %+v", done)
	}
	un, err := runs.Unfinished(ctx)
	if err != nil || len(un) != 1 || un[0].ID != "run_1" {
		t.Fatalf("unfinished = %v, %v; want only run_1", un, err)
	}
	if err := runs.SetStatus(ctx, "run_1", RunAbandoned); err != nil {
		t.Fatal(err)
	}
	if un, _ := runs.Unfinished(ctx); len(un) != 0 {
		t.Fatalf("abandoned run still unfinished: %v", un)
	}
	if _, err := runs.Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	if err := runs.SetStatus(ctx, "nope", RunDone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing run status: %v", err)
	}
	if err := runs.Save(ctx, &Checkpoint{ID: "x"}); err == nil {
		t.Fatal("a run without status and state was saved")
	}
}
