package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/internal/clip"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/proactive"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Caps of a meeting prep, a briefing narrative, an issue analysis and an
// automation: one or two short answers each.
const (
	briefIterations, briefTokens, briefOutput                = 2, 6000, 500
	narrativeIterations, narrativeTokens, narrativeOutput    = 1, 4000, 200
	analysisIterations, analysisTokens, analysisOutput       = 3, 8000, 500
	automationIterations, automationTokens, automationOutput = 2, 4000, 300
	shortDeadline                                            = 2 * time.Minute
)

// MeetingBrief has a background run prepare the owner for a meeting: it
// reads the event and the items the engine found about its attendees
// (recent mail, open threads, the last meeting: context, at most nine),
// looks for related GitHub items, and writes a short brief citing them,
// followed by the list of its sources. It returns the brief and the ids
// of the items it cites.
func (r *Runner) MeetingBrief(ctx context.Context, event *store.Item, attendees []string, related []int64) (string, []int64, error) {
	subject := graph.ItemSubject(event.ID)
	read := append([]int64{event.ID}, related[:min(len(related), 9)]...)
	prefetch := []router.ToolCall{call("get_items", map[string]any{"item_ids": read})}
	if t := strings.TrimSpace(event.Title); t != "" {
		prefetch = append(prefetch, call("search", map[string]any{"query": t, "source": "github", "limit": 3}))
	}
	task := agent.Task{
		Objective: fmt.Sprintf("Prepare the owner for the meeting %q (item id %d) at %s with %s. Write a brief of at most eight short lines: its purpose, open questions and commitments with these people, what to bring. Cite the items you use as [n]. Answer with the brief only.",
			event.Title, event.ID, event.Time.In(r.o.Location).Format("Mon Jan 2 15:04"), strings.Join(attendees, ", ")),
		Kind: MeetingPrep, Subject: subject, Route: router.TaskBriefing, Plan: "meeting_brief",
		Tools: []string{"get_item", "thread"}, Prefetch: prefetch,
		MaxIterations: briefIterations, MaxTokens: briefTokens, MaxOutput: briefOutput, Deadline: shortDeadline,
		NoProfile: true, Origin: "proactive",
	}
	ans, err := r.run(ctx, job{task: task, chain: graph.Meeting, stage: graph.ContextGathered, detail: func(items []agent.Citation) string {
		return fmt.Sprintf("items %s (the meeting, mail and threads with %s, related GitHub items)", ids(items), strings.Join(attendees, ", "))
	}})
	if err != nil {
		return "", nil, err
	}
	text := strings.TrimSpace(ans.Text)
	if text == "" {
		return "", nil, fmt.Errorf("%w: the prep run wrote nothing", ErrFailed)
	}
	var evidence []int64
	if len(ans.Citations) > 0 {
		var src strings.Builder
		src.WriteString("\n\nSources:")
		for _, c := range ans.Citations {
			fmt.Fprintf(&src, "\n[%d] %s · %s", c.N, c.Time.In(r.o.Location).Format("Jan 2"), clip.Text(c.Title, 80))
			evidence = append(evidence, c.ItemID)
		}
		text += src.String()
	}
	return text, evidence, nil
}

// Narrative has a background run write the opening of a briefing (kind,
// for the local day) from its text, with no tools: the briefing is all it
// may use.
func (r *Runner) Narrative(ctx context.Context, kind, day, text string) (string, error) {
	task := agent.Task{
		Objective: fmt.Sprintf(proactive.NarrativePrompt, kind) + "\n\n" + untrusted.Wrap("briefing", clip.Text(text, 6000)),
		Kind:      BriefingNarrative, Subject: "briefing:" + kind + ":" + day, Route: router.TaskBriefing, Plan: "briefing_narrative",
		NoTools: true, MaxIterations: narrativeIterations, MaxTokens: narrativeTokens, MaxOutput: narrativeOutput, Deadline: shortDeadline,
		NoProfile: true, Origin: "proactive",
	}
	ans, err := r.run(ctx, job{task: task})
	if err != nil {
		return "", err
	}
	return clip.Text(strings.TrimSpace(ans.Text), 800), nil
}

// AnalyseIssue has a background run analyse a GitHub issue or pull
// request that waits for the owner (review requested, assigned): what is
// asked, what blocks it, what the owner should do; where the owner should
// answer on GitHub, it proposes a comment. It returns the analysis and
// the comment's proposal id ("" when none was proposed).
func (r *Runner) AnalyseIssue(ctx context.Context, it *store.Item, why string) (string, string, error) {
	subject := graph.ItemSubject(it.ID)
	prefetch := []router.ToolCall{call("get_item", map[string]any{"item_id": it.ID})}
	if t := strings.TrimSpace(it.Title); t != "" {
		prefetch = append(prefetch, call("search", map[string]any{"query": t, "limit": 4}))
	}
	task := agent.Task{
		Objective: fmt.Sprintf("Analyse the GitHub item %q (item id %d) for the owner: %s. In at most five lines say what is asked, what blocks it and what the owner should do, citing items as [n]. Only if the owner should answer on GitHub, propose a comment with propose_comment first.", it.Title, it.ID, why),
		Kind:      IssueAnalysis, Subject: subject, Route: router.TaskAnalysis, Plan: "issue_analysis",
		Tools: []string{"search", "get_item"}, Prefetch: prefetch,
		MaxIterations: analysisIterations, MaxTokens: analysisTokens, MaxOutput: analysisOutput, Deadline: shortDeadline,
		NoProfile: true, Origin: "proactive",
	}
	ans, err := r.run(ctx, job{task: task})
	if err != nil {
		return "", "", err
	}
	note := strings.TrimSpace(ans.Text)
	var evidence []int64
	for _, c := range ans.Citations {
		evidence = append(evidence, c.ItemID)
	}
	if err := r.o.Chains.Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Issue, Name: graph.Analysed, Evidence: evidence, Detail: clip.Text(note, 300)}); err != nil {
		r.o.Log.Warn("recording an analysis failed", "item", it.ID, "err", err)
	}
	proposal := ""
	for _, p := range ans.Proposals {
		proposal = p.ID
		if err := r.o.Chains.Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Issue, Name: graph.CommentProposed, Detail: "proposal " + p.ID}); err != nil {
			r.o.Log.Warn("recording a proposed comment failed", "item", it.ID, "err", err)
		}
	}
	return note, proposal, nil
}

// ProposeAutomation has a background run check a newly confirmed pattern
// against its evidence and, if it holds, propose the standing rule it
// suggests with its own explanation. It returns the proposal's id, or ""
// when the run judged the evidence too weak.
func (r *Runner) ProposeAutomation(ctx context.Context, ob *store.Observation) (string, error) {
	subject := "pattern:" + ob.Kind + ":" + ob.Key
	ev := ob.Evidence
	if len(ev) > 8 {
		ev = ev[len(ev)-8:]
	}
	var prefetch []router.ToolCall
	if len(ev) > 0 {
		prefetch = append(prefetch, call("get_items", map[string]any{"item_ids": ev}))
	}
	task := agent.Task{
		Objective: fmt.Sprintf("A pattern in the owner's mail: %s (confidence %.0f%%). Check it against the evidence. If it holds, propose the rule it suggests with propose_automation, explaining it in one or two sentences citing items as [n]; if not, say why in one sentence.", ob.Summary, 100*ob.Confidence),
		Kind:      Automation, Subject: subject, Route: router.TaskAnalysis, Plan: "automation",
		Tools: []string{"get_item"}, Prefetch: prefetch, FinishOn: []string{"propose_automation"},
		MaxIterations: automationIterations, MaxTokens: automationTokens, MaxOutput: automationOutput, Deadline: shortDeadline,
		NoProfile: true, Origin: "proactive",
	}
	ans, err := r.run(ctx, job{task: task})
	if err != nil {
		return "", err
	}
	for _, p := range ans.Proposals {
		if err := r.o.Chains.Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Pattern, Name: graph.AutomationProposed, Detail: "proposal " + p.ID}); err != nil {
			r.o.Log.Warn("recording a proposed rule failed", "pattern", subject, "err", err)
		}
		return p.ID, nil
	}
	return "", nil
}
