package planner

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestForObjectiveChoosesTemplate(t *testing.T) {
	tests := []struct {
		objective string
		template  string
	}{
		{"Give me my morning briefing", "morning_briefing"},
		{"What's on my day today?", "morning_briefing"},
		{"Triage my inbox and reply where needed", "email_triage"},
		{"Prepare me for the 1:1 with Alice", "meeting_prep"},
		{"Review the open pull requests on GitHub", "code_review"},
		{"Find the recipe Lily sent", "generic"},
		{"", "generic"},
	}
	for _, tt := range tests {
		p := ForObjective(tt.objective)
		if p.Template != tt.template {
			t.Errorf("ForObjective(%q) = %s, want %s", tt.objective, p.Template, tt.template)
		}
		if len(p.Phases) == 0 || p.Phases[0].Status != Active || p.Current != 0 {
			t.Errorf("%q: plan does not start at an active first phase: %+v", tt.objective, p)
		}
	}
}

// Match plans only objectives that clearly ask for a template's kind of
// work; a question that merely mentions a keyword gets none.
func TestMatchNeedsAClearRequest(t *testing.T) {
	tests := []struct {
		objective string
		template  string // "" when no plan
	}{
		{"Give me my morning briefing", "morning_briefing"},
		{"Triage my inbox", "email_triage"},
		{"Which mails need a reply?", "email_triage"},
		{"Prepare me for my meeting with David", "meeting_prep"},
		{"Review my open pull requests", "code_review"},
		{"When did Bob answer?", ""},
		{"What is on my calendar today?", ""},
		{"What did Lily write about the birthday party?", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := Match(tt.objective)
		if got != tt.template || ok != (tt.template != "") {
			t.Errorf("Match(%q) = %q, %v; want %q", tt.objective, got, ok, tt.template)
		}
	}
}

func TestTemplatesAreIndependentCopies(t *testing.T) {
	a := ForObjective("triage my inbox")
	a.Phases[0].Steps[0].Description = "changed"
	a.Advance("x")
	b := ForObjective("triage my inbox")
	if b.Phases[0].Steps[0].Description == "changed" || b.Phases[0].Status != Active {
		t.Fatal("plans share state with the template")
	}
}

func TestAdvanceAndRender(t *testing.T) {
	p := ForObjective("prepare for the meeting with Bob")
	if got := p.ToolHints(); strings.Join(got, ",") != "calendar,search" {
		t.Fatalf("hints = %v", got)
	}
	r := p.Render()
	for _, want := range []string{"Plan for: prepare for the meeting with Bob", "1. [active] identify", "   - look up the meeting (tools: calendar, search)", "2. history", "finish_phase"} {
		if !strings.Contains(r, want) {
			t.Fatalf("render lacks %q:\n%s", want, r)
		}
	}
	done := p.Advance("  Meeting is Tuesday 10:00 with Bob and Carol.  ")
	if done == nil || done.Name != "identify" || done.Reflection != "Meeting is Tuesday 10:00 with Bob and Carol." {
		t.Fatalf("advance returned %+v", done)
	}
	if p.Current != 1 || p.Phases[1].Status != Active || p.Phases[0].Status != Done {
		t.Fatalf("after advance: %+v", p)
	}
	r = p.Render()
	if !strings.Contains(r, "1. [done] identify — Meeting is Tuesday") || !strings.Contains(r, "2. [active] history") {
		t.Fatalf("render after advance:\n%s", r)
	}
	p.Advance(strings.Repeat("long ", 200))
	if n := len(p.Phases[1].Reflection); n > maxReflection+len("…") {
		t.Fatalf("reflection not bounded: %d bytes", n)
	}
	p.Advance("")
	if !p.Finished() || p.Active() != nil || p.Advance("again") != nil {
		t.Fatalf("plan should be finished: %+v", p)
	}
	if strings.Contains(p.Render(), "finish_phase") {
		t.Fatal("a finished plan still asks for finish_phase")
	}
}

func TestPlanJSONRoundTrip(t *testing.T) {
	p := ForObjective("morning briefing")
	p.Advance("3 meetings")
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Render() != p.Render() {
		t.Fatalf("round trip changed the plan:\n%s\n---\n%s", back.Render(), p.Render())
	}
}

func TestParseRefinement(t *testing.T) {
	tools := []string{"search", "get_item", "reply_email"}
	good := `{"phases":[{"name":"find","goal":"find the mail","steps":[{"description":"search","tool_hints":["search"]}]},{"name":"answer","goal":"answer"}]}`
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{"plain", good, ""},
		{"fenced with prose", "Here you go:\n```json\n" + good + "\n```\nHope it helps", ""},
		{"no json", "I cannot do that", "no JSON object"},
		{"broken json", `{"phases":[{"name":"x",}`, "rejected"},
		{"wrong type", `{"phases":"all of them"}`, "rejected"},
		{"extra field", `{"phases":[{"name":"a","goal":"b","priority":1}]}`, "rejected"},
		{"no phases", `{"phases":[]}`, "0 phases"},
		{"too many phases", `{"phases":[` + strings.TrimSuffix(strings.Repeat(`{"name":"a","goal":"b"},`, 9), ",") + `]}`, "9 phases"},
		{"empty name", `{"phases":[{"name":" ","goal":"b"}]}`, "no usable name"},
		{"empty goal", `{"phases":[{"name":"a","goal":""}]}`, "no usable goal"},
		{"invented tool", `{"phases":[{"name":"a","goal":"b","steps":[{"description":"send it","tool_hints":["send_now"]}]}]}`, `"send_now", which does not exist`},
		{"empty step", `{"phases":[{"name":"a","goal":"b","steps":[{"description":""}]}]}`, "step without a usable description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := parseRefinement(tt.content, tools)
			if tt.wantErr == "" {
				if err != nil || len(w.Phases) != 2 {
					t.Fatalf("got %+v, %v", w, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidRefinement) {
				t.Fatalf("err = %v, want ErrInvalidRefinement containing %q", err, tt.wantErr)
			}
		})
	}
}
