package agent

import (
	"context"
	"regexp"
	"strings"

	"github.com/omnibrain/omnibrain/router"
)

// Need says whether a chat message needs the owner's data.
type Need string

const (
	NeedData    Need = "data"    // search the owner's items first
	NeedGeneral Need = "general" // a greeting or general question: no retrieval
	NeedUnsure  Need = "unsure"  // the heuristics cannot tell
)

var (
	greeting = regexp.MustCompile(`(?i)^\s*(hi|hello|hey|hallo|bonjour|yo|thanks|thank you|thx|good (morning|afternoon|evening|night)|how are you|ok|okay|bye|cheers|great|cool|nice)\b[\s\p{P}\p{So}]*(omnibrain|there|again|a lot|so much)?[\s\p{P}\p{So}]*$`)
	// personal: words that point at the owner's own mail, calendar, work.
	personal = regexp.MustCompile(`(?i)\b(my|mine|our|me|us|inbox|e-?mails?|mails?|messages?|sent|received|wrote|replied|reply|thread|meetings?|calendar|schedule|agenda|appointments?|events?|invit\w*|attendees?|github|pull requests?|prs?|issues?|repo\w*|review|yesterday|today|tomorrow|tonight|last (week|month|year|time)|this (week|month|morning)|next (week|month)|recently|latest|unread|urgent|follow[- ]?up|remind\w*|deadline|due|contacts?|colleagues?|boss|team|project|invoice|receipt|password|code|file|document|attachment|asked|told|said|promised)\b|@[\w.-]+\.\w+`)
	// general: phrasings of knowledge questions and writing help.
	general = regexp.MustCompile(`(?i)^\s*(what is|what are|what's|who was|who is|define|explain|how (do|does|can|to)|why (is|are|do|does)|translate|write (a|an|me a)|tell me a (joke|story)|calculate|convert|summari[sz]e this|what does .+ mean)\b|^[\d\s+\-*/().=^%]+\??$`)
)

// classifyHeuristic decides from the words alone.
func classifyHeuristic(text string) Need {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return NeedGeneral
	case greeting.MatchString(t):
		return NeedGeneral
	case personal.MatchString(t):
		return NeedData
	case general.MatchString(t):
		return NeedGeneral
	}
	// A capitalised word past the first ("When did Alice …") is likely a
	// person, project or place from the owner's life.
	words := strings.Fields(t)
	for _, w := range words[1:] {
		w = strings.Trim(w, "?!.,:;'\"()")
		if len(w) > 1 && w[0] >= 'A' && w[0] <= 'Z' && w != "I" {
			return NeedData
		}
	}
	return NeedUnsure
}

// classify uses the heuristics, and the model only when they are unsure.
// Without a model, unsure means searching: a search is cheap and an
// answer without the owner's data could be wrong.
func classify(ctx context.Context, m Model, text string) (Need, router.Usage) {
	need := classifyHeuristic(text)
	if need != NeedUnsure || m == nil {
		if need == NeedUnsure {
			return NeedData, router.Usage{}
		}
		return need, router.Usage{}
	}
	resp, err := m.Stream(ctx, router.Request{
		// The message is chat data: it keeps to the chat route's privacy.
		Task: router.TaskTriage, Within: router.TaskChat, Interactive: true, MaxTokens: 5,
		Messages: []router.Message{
			{Role: router.RoleSystem, Content: "Decide whether answering the user's message needs their personal data (their mail, calendar, GitHub, notes, contacts). Answer with one word: DATA or GENERAL."},
			{Role: router.RoleUser, Content: text},
		},
	}, nil)
	if err != nil {
		return NeedData, router.Usage{}
	}
	if strings.Contains(strings.ToUpper(resp.Content), "GENERAL") {
		return NeedGeneral, resp.Usage
	}
	return NeedData, resp.Usage
}
