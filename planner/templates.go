package planner

import (
	"slices"
	"strings"
	"unicode"
)

// Template is a plan shape for one kind of objective.
type Template struct {
	Name     string
	Keywords []string // words or phrases of an objective that select it
	Chains   []string // reasoning-graph chains the agent starts with
	Phases   []Phase
}

// Templates returns the built-in templates.
func Templates() []Template {
	return []Template{
		{
			Name:     "morning_briefing",
			Keywords: []string{"morning", "briefing", "brief me", "my day", "today", "daily", "agenda for today"},
			Chains:   []string{"meeting_brief", "email_response"},
			Phases: []Phase{
				{Name: "calendar", Goal: "know today's meetings and their conflicts", Steps: []Step{
					{Description: "list today's events", ToolHints: []string{"calendar"}},
				}},
				{Name: "mail", Goal: "find the mail since yesterday that needs the owner", Steps: []Step{
					{Description: "search recent mail", ToolHints: []string{"search"}},
					{Description: "read the ones that look urgent", ToolHints: []string{"get_item", "thread"}},
				}},
				{Name: "actions", Goal: "propose replies the owner can approve", Steps: []Step{
					{Description: "draft replies to mail that clearly needs one", ToolHints: []string{"reply_email"}},
				}},
				{Name: "summary", Goal: "write the briefing: meetings, mail that matters, proposals made"},
			},
		},
		{
			Name:     "email_triage",
			Keywords: []string{"triage", "inbox", "unread", "emails", "mail", "mails", "reply", "respond", "answer"},
			Chains:   []string{"email_response"},
			Phases: []Phase{
				{Name: "collect", Goal: "find the mail to triage", Steps: []Step{
					{Description: "search the relevant mail", ToolHints: []string{"search"}},
				}},
				{Name: "classify", Goal: "decide which mail needs the owner and why", Steps: []Step{
					{Description: "read each candidate and its thread", ToolHints: []string{"get_item", "thread"}},
				}},
				{Name: "respond", Goal: "propose replies for approval", Steps: []Step{
					{Description: "propose a reply where one is needed", ToolHints: []string{"reply_email"}},
				}},
				{Name: "report", Goal: "tell the owner what needs them, most urgent first"},
			},
		},
		{
			Name:     "meeting_prep",
			Keywords: []string{"meeting", "prepare", "prep", "agenda", "1:1", "one-on-one", "call with", "attendees"},
			Chains:   []string{"meeting_brief"},
			Phases: []Phase{
				{Name: "identify", Goal: "find the meeting, its time and attendees", Steps: []Step{
					{Description: "look up the meeting", ToolHints: []string{"calendar", "search"}},
				}},
				{Name: "history", Goal: "gather recent mail and open items with the attendees", Steps: []Step{
					{Description: "search mail with each attendee", ToolHints: []string{"search", "thread"}},
				}},
				{Name: "brief", Goal: "write a brief: purpose, people, open questions, what to bring"},
			},
		},
		{
			Name:     "code_review",
			Keywords: []string{"review", "pull request", "pull requests", "pr", "prs", "issue", "issues", "github", "code", "ci", "build"},
			Chains:   []string{"issue_fix"},
			Phases: []Phase{
				{Name: "gather", Goal: "find the pull requests and issues that involve the owner", Steps: []Step{
					{Description: "search GitHub items", ToolHints: []string{"search", "get_item"}},
				}},
				{Name: "analyse", Goal: "understand each change or problem and its checks", Steps: []Step{
					{Description: "read the details", ToolHints: []string{"get_item"}},
				}},
				{Name: "respond", Goal: "propose comments for approval where useful", Steps: []Step{
					{Description: "propose a comment", ToolHints: []string{"github_comment"}},
				}},
				{Name: "summary", Goal: "summarise what needs review and what is blocked"},
			},
		},
	}
}

// JobTemplates are the plans of the background runs, chosen by the job's
// kind, never by keywords. Their first phase is the context the run looks
// up before the model is asked (it completes it), so the model starts at
// the phase that needs it.
func JobTemplates() []Template {
	gather := func(goal string) Phase { return Phase{Name: "gather", Goal: goal} }
	return []Template{
		{Name: "draft_reply", Phases: []Phase{
			gather("read the mail, its thread, the owner's past mail to the sender and the calendar around the times it names"),
			{Name: "reply", Goal: "propose the reply for the owner's approval", Steps: []Step{
				{Description: "write it in the mail's language, the way the owner writes to this person; never accept a time that conflicts with the calendar", ToolHints: []string{"propose_reply"}},
			}},
		}},
		{Name: "meeting_brief", Phases: []Phase{
			gather("read the meeting, recent mail and open threads with the attendees, the last meeting with them, related GitHub items"),
			{Name: "brief", Goal: "write a short brief: purpose, open questions, what to bring; cite items as [n]"},
		}},
		{Name: "briefing_narrative", Phases: []Phase{
			{Name: "narrate", Goal: "open the briefing with at most three sentences on what matters most"},
		}},
		{Name: "automation", Phases: []Phase{
			gather("read the evidence of the pattern"),
			{Name: "decide", Goal: "propose the standing rule if the evidence shows the pattern; otherwise say why not", Steps: []Step{
				{Description: "explain the rule to the owner in the proposal's reason", ToolHints: []string{"propose_automation"}},
			}},
		}},
		{Name: "issue_analysis", Phases: []Phase{
			gather("read the issue or pull request and related items"),
			{Name: "analyse", Goal: "write a short analysis citing items as [n]: what is asked, what blocks it, what the owner should do", Steps: []Step{
				{Description: "only if the owner should answer on GitHub, propose a comment", ToolHints: []string{"propose_comment"}},
			}},
		}},
	}
}

// generic is the fallback when no template fits the objective.
func generic() Template {
	return Template{
		Name: "generic",
		Phases: []Phase{
			{Name: "understand", Goal: "find what the objective is about in the owner's data", Steps: []Step{
				{Description: "search for the relevant items", ToolHints: []string{"search"}},
				{Description: "read the most relevant ones", ToolHints: []string{"get_item"}},
			}},
			{Name: "act", Goal: "do what the objective asks, proposing any outgoing action for approval"},
			{Name: "answer", Goal: "answer the owner, citing the items used"},
		},
	}
}

// ForObjective builds a plan from the template whose keywords best match
// the objective, or the generic plan when none does.
func ForObjective(objective string) *Plan {
	t, _ := choose(objective)
	return fromTemplate(objective, t)
}

// Match names the template an objective clearly asks for: one whose
// keywords it hits with at least two words (a phrase counts its words).
// A passing mention ("when did Bob answer?") is no request for a
// four-phase plan; chat plans only what Match names.
func Match(objective string) (string, bool) {
	t, score := choose(objective)
	if score < 2 {
		return "", false
	}
	return t.Name, true
}

// FromTemplate builds a plan from the named template ("generic" included).
func FromTemplate(name, objective string) (*Plan, bool) {
	if name == "generic" {
		return fromTemplate(objective, generic()), true
	}
	for _, t := range append(Templates(), JobTemplates()...) {
		if t.Name == name {
			return fromTemplate(objective, t), true
		}
	}
	return nil, false
}

func fromTemplate(objective string, t Template) *Plan {
	p := &Plan{Objective: objective, Template: t.Name, Chains: slices.Clone(t.Chains)}
	for _, ph := range t.Phases {
		ph.Status = Pending
		ph.Steps = slices.Clone(ph.Steps)
		p.Phases = append(p.Phases, ph)
	}
	p.Phases[0].Status = Active
	return p
}

// choose scores templates by keyword hits (a phrase counts its words); ties
// go to the earlier template, and no hit at all to the generic plan.
func choose(objective string) (Template, int) {
	words := tokens(objective)
	text := " " + strings.Join(words, " ") + " "
	best, bestScore := generic(), 0
	for _, t := range Templates() {
		score := 0
		for _, k := range t.Keywords {
			kw := tokens(k)
			if strings.Contains(text, " "+strings.Join(kw, " ")+" ") {
				score += len(kw)
			}
		}
		if score > bestScore {
			best, bestScore = t, score
		}
	}
	return best, bestScore
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ':' && r != '-'
	})
}
