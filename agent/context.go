package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
)

// EstimateTokens approximates a text's tokens: about four bytes per token
// for English, which is what providers' tokenizers average; good enough to
// keep a prompt under a budget without shipping a tokenizer.
func EstimateTokens(s string) int {
	if s == "" {
		return 0
	}
	// Non-ASCII text tokenizes denser per byte; count runes past ASCII twice.
	n := len(s)
	if r := utf8.RuneCountInString(s); r != n {
		n += (n - r)
	}
	return (n + 3) / 4
}

// messageTokens estimates one message, with the few tokens of framing
// every message costs.
func messageTokens(m router.Message) int {
	n := 4 + EstimateTokens(m.Content)
	for _, c := range m.ToolCalls {
		n += 4 + EstimateTokens(c.Name) + EstimateTokens(string(c.Arguments))
	}
	return n
}

// MessagesTokens estimates a conversation.
func MessagesTokens(msgs []router.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

// group is a run of messages that must be kept or dropped together: an
// assistant's tool calls and every tool result answering them (a provider
// rejects one without the other), or a single message.
type group struct {
	start, end int // messages[start:end]
}

func groups(msgs []router.Message) []group {
	var out []group
	for i := 0; i < len(msgs); {
		j := i + 1
		if msgs[i].Role == router.RoleAssistant && len(msgs[i].ToolCalls) > 0 {
			for j < len(msgs) && msgs[j].Role == router.RoleTool {
				j++
			}
		}
		out = append(out, group{i, j})
		i = j
	}
	return out
}

// compressedLen is how much of an old tool result stays once compressed.
const compressedLen = 240

// compress shortens a tool result, saying so, so the model knows it can
// call the tool again for the full text. A delimited untrusted block is
// closed again after the cut so the marking survives.
func compress(content string) string {
	if len(content) <= compressedLen+80 {
		return content
	}
	cut := compressedLen
	for cut > 0 && !utf8.RuneStart(content[cut]) {
		cut--
	}
	s := content[:cut]
	// A delimiter cut in two loses its piece; a block the cut left open
	// (any of them: a result may hold several) is closed.
	if i := strings.LastIndex(s, "<<<"); i >= 0 && !strings.Contains(s[i:], ">>>") {
		s = s[:i]
	}
	if strings.Count(s, untrusted.Open) > strings.Count(s, untrusted.Close) {
		s += "\n" + untrusted.Close + ">>>"
	}
	return s + fmt.Sprintf("\n[older tool result compressed: %d of %d bytes kept; call the tool again if you need the rest]", cut, len(content))
}

// Summarizer condenses dropped turns into a few sentences; optional.
type Summarizer func(dropped []router.Message, previous string) (string, error)

// contextWindow fits a conversation into a token budget.
type contextWindow struct {
	Budget     int // tokens for the whole prompt, system included
	KeepRecent int // most recent groups never compressed
	Summarize  Summarizer
}

// fit returns the messages to send: the system message and the pinned
// message (the task) always, then as many of the latest groups as fit.
// Older tool results are compressed first; then the oldest groups are
// dropped whole and replaced by a summary (when a Summarizer is set) or a
// note. summary carries the summary across iterations so the model is
// asked to summarise only when more is dropped.
func (w contextWindow) fit(msgs []router.Message, pinned int, summary *summaryState) []router.Message {
	if w.Budget <= 0 || MessagesTokens(msgs) <= w.Budget {
		return msgs
	}
	work := make([]router.Message, len(msgs))
	copy(work, msgs)
	first := 0
	if len(work) > 0 && work[0].Role == router.RoleSystem {
		first = 1
	}
	gs := groups(work[first:])
	for i := range gs {
		gs[i].start += first
		gs[i].end += first
	}
	isPinned := func(g group) bool { return pinned >= g.start && pinned < g.end }

	// 1. compress tool results of all but the most recent groups
	keep := max(w.KeepRecent, 1)
	for gi := 0; gi < len(gs)-keep; gi++ {
		for i := gs[gi].start; i < gs[gi].end; i++ {
			if work[i].Role == router.RoleTool {
				work[i].Content = compress(work[i].Content)
			}
		}
	}
	if MessagesTokens(work) <= w.Budget {
		return work
	}

	// 2. drop the oldest unpinned groups until it fits; the last group stays
	dropped := map[int]bool{}
	droppedMsgs := 0
	size := MessagesTokens(work)
	for gi := 0; gi < len(gs)-1 && size+60+EstimateTokens(summary.Summary) > w.Budget; gi++ {
		if isPinned(gs[gi]) {
			continue
		}
		dropped[gi] = true
		droppedMsgs += gs[gi].end - gs[gi].start
		size -= MessagesTokens(work[gs[gi].start:gs[gi].end])
	}
	if droppedMsgs == 0 {
		return work
	}
	var gone []router.Message
	for gi, g := range gs {
		if dropped[gi] {
			gone = append(gone, work[g.start:g.end]...)
		}
	}
	note := fmt.Sprintf("[%d earlier messages were left out to fit the context window.]", droppedMsgs)
	if w.Summarize != nil && summary.Dropped < droppedMsgs {
		if s, err := w.Summarize(gone[summary.Dropped:], summary.Summary); err == nil && strings.TrimSpace(s) != "" {
			summary.Summary, summary.Dropped = strings.TrimSpace(s), droppedMsgs
		}
	}
	if summary.Summary != "" {
		note += "\nSummary of earlier messages: " + summary.Summary
	}
	out := append([]router.Message{}, work[:first]...)
	noted := false
	for gi, g := range gs {
		if dropped[gi] {
			continue
		}
		if !noted && !isPinned(g) {
			// the note stands where the dropped messages were
			out = append(out, router.Message{Role: router.RoleUser, Content: note})
			noted = true
		}
		out = append(out, work[g.start:g.end]...)
	}
	return out
}

// summaryState remembers the summary of dropped messages across iterations.
type summaryState struct {
	Summary string `json:"summary,omitempty"`
	Dropped int    `json:"dropped,omitempty"` // dropped messages the summary covers
}
