package memory

import (
	"context"
	"strings"
	"testing"
)

// Extraction runs every five owner messages and keeps to the rules: at
// most two facts of a kind per pass, at most ~15 words each, no
// near-duplicates, "replaces" only for a fact the model was shown.
func TestExtractionFollowsTheRules(t *testing.T) {
	model := &countingModel{}
	e := newEnv(t, envOpts{model: model})
	ctx := context.Background()
	e.add("My son Leo plays football on Tuesdays") // m1: shown to the model, replaced below
	e.add("My car is a blue Volvo")                // m2: not related to the messages, not shown
	model.answer = "Here you go:\n```json\n" + `{"facts":[
{"text":"My daughter Emma starts ballet on Thursdays","category":"family"},
{"text":"My wife Ana is a doctor","category":"family"},
{"text":"My mother lives with us","category":"family"},
{"text":"I would rather take the train than fly, especially for trips shorter than five hours, unless it is really urgent or expensive","category":"preferences"},
{"text":"My son Leo now plays football on Wednesdays","category":"events","replaces":"m1"},
{"text":"I drive a red Fiat now","category":"notes","replaces":"m2"},
{"text":"My son Leo now plays football on Wednesdays","category":"events"},
{"text":"Something","category":"hobbies"}
]}` + "\n```"
	msgs := []string{"My daughter Emma starts ballet on Thursdays.", "Leo's football moved to Wednesdays.", "My wife Ana is a doctor, by the way", "my mother lives with us", "I drive a red Fiat now"}
	for i, msg := range msgs {
		e.m.Observe(ctx, "s_1", msg)
		if i < 4 {
			if res, _ := e.m.Extract(ctx, false); res.Messages != 0 || len(model.requests) != 0 {
				t.Fatalf("a pass after %d messages", i+1)
			}
		}
	}
	select {
	case <-e.m.extract:
	default:
		t.Fatal("the fifth message did not make a pass due")
	}
	res, err := e.m.Extract(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	req := model.last()
	if !strings.Contains(req.Messages[0].Content, "At most 15 words") || !strings.Contains(req.Messages[0].Content, "At most 2 facts per category") {
		t.Fatalf("rules not sent:\n%s", req.Messages[0].Content)
	}
	if !strings.Contains(req.Messages[1].Content, "[m1] My son Leo plays football on Tuesdays") || strings.Contains(req.Messages[1].Content, "Volvo") {
		t.Fatalf("known facts sent:\n%s", req.Messages[1].Content)
	}
	got := e.texts()
	want := []string{"My car is a blue Volvo", "My daughter Emma starts ballet on Thursdays", "My wife Ana is a doctor", "My son Leo now plays football on Wednesdays", "I drive a red Fiat now"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("facts = %q\nwant %q\nskipped %q", got, want, res.Skipped)
	}
	if len(res.Skipped) != 3 || len(res.Added) != 4 {
		t.Fatalf("added %d, skipped %q", len(res.Added), res.Skipped)
	}
	m1, _ := e.m.Get(ctx, 1)
	if m1.State != Superseded {
		t.Fatalf("m1 is %s", m1.State)
	}
	f, _ := e.m.Get(ctx, 3)
	if f.Source != SourceChat || f.SourceRef != "s_1" || !strings.Contains(f.SourceText, "ballet") {
		t.Fatalf("source = %+v", f)
	}
	// The messages are consumed: the next pass needs five new ones.
	if res, _ := e.m.Extract(ctx, true); res.Messages != 0 {
		t.Fatalf("messages extracted twice: %d", res.Messages)
	}
}

// "remember" with a model: the model words the fact; an answer that does
// not do keeps the owner's clause.
func TestRefine(t *testing.T) {
	model := &countingModel{answer: `{"text":"My daughter Emma's recital is on Friday","category":"events"}`}
	e := newEnv(t, envOpts{model: model})
	req := AddRequest{Text: "Emma, my daughter, has her recital on Friday"}
	e.m.refine(context.Background(), &req)
	if req.Text != "My daughter Emma's recital is on Friday" || req.Category != Events {
		t.Fatalf("refined = %+v", req)
	}
	model.answer = `{"text":"","category":"family"}`
	req = AddRequest{Text: "My sister is Ana"}
	e.m.refine(context.Background(), &req)
	if req.Text != "My sister is Ana" || req.Category != "" {
		t.Fatalf("a bad answer was used: %+v", req)
	}
}
