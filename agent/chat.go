package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/planner"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

// Sessions stores chat sessions; *store.Store provides it.
type Sessions interface {
	ChatSessionExists(ctx context.Context, id string) (bool, error)
	ChatHistory(ctx context.Context, session string, limit int) ([]store.ChatMessage, error)
	AppendChatMessages(ctx context.Context, session string, msgs ...store.ChatMessage) error
}

// ChatOptions configure a Chat.
type ChatOptions struct {
	// Agent answers with a model; nil when no model is configured, and
	// chat then answers from search alone.
	Agent    *Agent
	Search   Searcher // retrieval before the model, and the no-model answer
	Sessions Sessions
	Log      *slog.Logger
	Now      func() time.Time
	Location *time.Location
	// HistoryMessages of the session are given to the model (default 12).
	HistoryMessages int
	// RetrievalItems are searched before the model runs (default 6).
	RetrievalItems int
	// NoModelHint tells the owner how to configure a model.
	NoModelHint string
	// RefinePlans asks the model (task planning) to adapt a planned
	// message's template before the run; its answer is validated and the
	// template kept when it does not pass.
	RefinePlans bool
}

// Chat is the conversation with the owner: sessions, a retrieval decision
// per message, the agent, citations. The Telegram bot, the API and the CLI
// all go through Chat.Chat.
type Chat struct {
	opts ChatOptions
	log  *slog.Logger
}

// NewChat returns a chat over the options' parts.
func NewChat(opts ChatOptions) (*Chat, error) {
	if opts.Sessions == nil {
		return nil, errors.New("agent: chat needs a session store")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.HistoryMessages <= 0 {
		opts.HistoryMessages = 12
	}
	if opts.RetrievalItems <= 0 {
		opts.RetrievalItems = 6
	}
	if opts.NoModelHint == "" {
		opts.NoModelHint = "set OMNIBRAIN_LLM_PROVIDER (openai, anthropic or ollama) with its model, or run Ollama locally"
	}
	return &Chat{opts: opts, log: opts.Log}, nil
}

// chatInstructions are the chat-specific part of the system prompt.
const chatInstructions = `You are chatting with the owner. Answer their latest message. Items shown with their message were retrieved for it; search for more if they are not enough. If the owner's data does not contain the answer, say so.`

// ErrEmptyMessage is returned for a message with no text.
var ErrEmptyMessage = errors.New("agent: empty chat message")

// SessionExists reports whether a chat session has been started: the API
// continues only sessions that exist, so a mistyped id is an error rather
// than a conversation that silently starts over.
func (c *Chat) SessionExists(ctx context.Context, id string) (bool, error) {
	return c.opts.Sessions.ChatSessionExists(ctx, id)
}

// Chat answers one message of a session ("" starts a new one), calling
// onEvent (if not nil) with the agent's events as they happen and exactly
// one EventDone at the end. The answer carries the session id, the text,
// and the cited items. Without a model it answers with search results and
// says that a model is needed for more. The error is set only when the
// message could not be handled at all (empty, the store failing).
func (c *Chat) Chat(ctx context.Context, sessionID, text string, onEvent func(Event)) (*Answer, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, ErrEmptyMessage
	}
	if sessionID == "" {
		sessionID = newSessionID()
	}
	emit := func(ev Event) {
		if onEvent != nil {
			onEvent(ev)
		}
	}
	history, err := c.history(ctx, sessionID)
	if err != nil {
		return nil, err
	}

	var model Model
	if c.opts.Agent != nil {
		model = c.opts.Agent.opts.Model
	}
	need, usage := classify(ctx, model, text)

	var items []Cited
	var outside *search.Period // the period the message named, when nothing in it matched
	if need == NeedData && c.opts.Search != nil {
		items, outside = c.retrieve(ctx, text, emit)
	}
	instructions := chatInstructions
	if outside != nil {
		instructions += fmt.Sprintf("\nNothing in the owner's data from %s matched; the retrieved items are from other times. Say so plainly before using them.", periodText(outside, c.opts.Location))
	}
	// A message that clearly asks for planned work ("triage my inbox",
	// "prepare me for my meeting with Bob") runs with that template's plan
	// and reasoning chains; a plain question runs without.
	plan := ""
	if need == NeedData {
		plan, _ = planner.Match(text)
	}

	var ans *Answer
	if c.opts.Agent != nil {
		ans, err = c.opts.Agent.Run(ctx, Task{
			Objective: text, Route: router.TaskChat, History: history, Items: items, Plan: plan, RefinePlan: plan != "" && c.opts.RefinePlans,
			Instructions: instructions, Interactive: true, Session: sessionID, NoTools: need == NeedGeneral,
		}, func(ev Event) {
			if ev.Type != EventDone { // chat sends its own done, after saving the session
				emit(ev)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	modelFailed := ans != nil && ans.ModelError != "" && len(ans.Proposals) == 0
	if ans == nil || ans.Stop == StopNoModel || (ans.Stop == StopBudget && ans.ToolCalls == 0 && len(ans.Proposals) == 0) || modelFailed {
		if need == NeedData && items == nil && c.opts.Search != nil {
			items, outside = c.retrieve(ctx, text, emit)
		}
		switch {
		case modelFailed:
			// An unreachable model: the owner gets what the no-model path
			// gives, and why; the error is the answer's, said once.
			prev := ans
			ans = c.searchAnswer(fmt.Sprintf("The language model did not answer (%s).", prev.ModelError), prev.Stop, need, items)
			ans.RunID, ans.Iterations, ans.Usage, ans.ModelError = prev.RunID, prev.Iterations, prev.Usage, prev.ModelError
		case ans != nil && ans.Stop == StopBudget:
			// The owner still gets the best matches, and why there is no more.
			prev := ans
			ans = c.searchAnswer(prev.Text, StopBudget, need, items)
			ans.RunID, ans.Iterations, ans.Usage = prev.RunID, prev.Iterations, prev.Usage
		default:
			ans = c.noModelAnswer(text, need, items, outside)
		}
		emit(Event{Type: EventText, Text: ans.Text})
	}
	ans.SessionID = sessionID
	ans.Retrieval = need == NeedData
	ans.Usage.InputTokens += usage.InputTokens
	ans.Usage.OutputTokens += usage.OutputTokens
	ans.Usage.CostUSD += usage.CostUSD

	cites, _ := json.Marshal(ans.Citations)
	if err := c.opts.Sessions.AppendChatMessages(context.WithoutCancel(ctx), sessionID,
		store.ChatMessage{Role: string(router.RoleUser), Content: text},
		store.ChatMessage{Role: string(router.RoleAssistant), Content: ans.Text, RunID: ans.RunID, Citations: cites},
	); err != nil {
		c.log.Error("chat: save session", "session", sessionID, "err", err)
	}
	emit(Event{Type: EventDone, RunID: ans.RunID, Answer: ans})
	return ans, nil
}

func newSessionID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "s_" + hex.EncodeToString(b)
}

// history loads the session's last turns as model messages. Earlier
// answers' [n] markers numbered that turn's items; their sources are
// listed with them so the model can look them up again by item id.
func (c *Chat) history(ctx context.Context, session string) ([]router.Message, error) {
	msgs, err := c.opts.Sessions.ChatHistory(ctx, session, c.opts.HistoryMessages)
	if err != nil {
		return nil, fmt.Errorf("agent: chat history: %w", err)
	}
	var out []router.Message
	for _, m := range msgs {
		content := m.Content
		if m.Role == string(router.RoleAssistant) {
			var cites []Citation
			if json.Unmarshal(m.Citations, &cites) == nil && len(cites) > 0 {
				var b strings.Builder
				b.WriteString(content)
				b.WriteString("\n\n(In that answer: ")
				for i, ci := range cites {
					if i > 0 {
						b.WriteString("; ")
					}
					fmt.Fprintf(&b, "[%d] = item id %d", ci.N, ci.ItemID)
				}
				b.WriteString(".)")
				content = b.String()
			}
		}
		out = append(out, router.Message{Role: router.Role(m.Role), Content: content})
	}
	// a session must not start with an assistant turn
	for len(out) > 0 && out[0].Role != router.RoleUser {
		out = out[1:]
	}
	return out, nil
}

// retrieve searches for the message and reports it as a search tool call.
// When the message named a period in which nothing matched, the items are
// from other times and outside is that period.
func (c *Chat) retrieve(ctx context.Context, text string, emit func(Event)) (items []Cited, outside *search.Period) {
	args, _ := json.Marshal(map[string]any{"query": text, "limit": c.opts.RetrievalItems})
	emit(Event{Type: EventToolStart, Tool: &ToolEvent{CallID: "retrieval", Name: "search", Arguments: string(args)}})
	hits, err := c.opts.Search.Search(ctx, search.Query{Text: text, Limit: c.opts.RetrievalItems, Location: c.opts.Location, Now: c.opts.Now(), Fallback: true})
	if err != nil {
		c.log.Warn("chat: retrieval failed", "err", err)
		emit(Event{Type: EventToolEnd, Tool: &ToolEvent{CallID: "retrieval", Name: "search", Status: StatusError}})
		return nil, nil
	}
	if len(hits) > 0 {
		outside = hits[0].Outside
	}
	items = make([]Cited, 0, len(hits))
	for _, h := range hits {
		snippet := h.Snippet
		if snippet == "" {
			snippet = h.Item.Body
		}
		items = append(items, cited(h.Item, fmt.Sprintf("(item id %d) %s", h.Item.ID, snippet), hitTextLen))
	}
	emit(Event{Type: EventToolEnd, Tool: &ToolEvent{CallID: "retrieval", Name: "search", Status: StatusOK}})
	return items, outside
}

// noModelAnswer is chat without a model: the best search results, and a
// plain word that a model is needed for more.
func (c *Chat) noModelAnswer(text string, need Need, items []Cited, outside *search.Period) *Answer {
	var intro string
	switch {
	case need != NeedData:
		intro = fmt.Sprintf("I can search your mail, calendar and GitHub, but answering in conversation needs a language model, and none is configured (%s).", c.opts.NoModelHint)
	case len(items) == 0:
		intro = fmt.Sprintf("No language model is configured, so I can only search — and I found nothing in your data matching %q. For real answers, configure a model (%s).", text, c.opts.NoModelHint)
	case outside != nil:
		intro = fmt.Sprintf("No language model is configured, so I can only search — and nothing from %s matched. These items match the other words at other times. For real answers, configure a model (%s).", periodText(outside, c.opts.Location), c.opts.NoModelHint)
	default:
		intro = fmt.Sprintf("No language model is configured, so I cannot write an answer — these are the items in your data that best match your question. For real answers, configure a model (%s).", c.opts.NoModelHint)
	}
	ans := c.searchAnswer(intro, StopNoModel, need, items)
	ans.NoModel = true
	return ans
}

// searchAnswer is an answer made of intro (why there is no model's answer)
// and, for a data question, the best search results, cited.
func (c *Chat) searchAnswer(intro string, stop Stop, need Need, items []Cited) *Answer {
	ans := &Answer{Stop: stop, Citations: []Citation{}}
	var b strings.Builder
	b.WriteString(intro)
	if need == NeedData && len(items) > 0 {
		if stop != StopNoModel {
			b.WriteString("\n\nThe items in your data that best match your question:")
		}
		b.WriteString("\n")
		for i, it := range items {
			n := i + 1
			fmt.Fprintf(&b, "\n[%d] %s · %s", n, it.Time.In(c.opts.Location).Format("2006-01-02 15:04"), it.Source)
			if it.From != "" {
				fmt.Fprintf(&b, " · %s", it.From)
			}
			fmt.Fprintf(&b, " · %s", oneLine(it.Title))
			if snip := oneLine(strings.TrimPrefix(it.Text, fmt.Sprintf("(item id %d) ", it.ItemID))); snip != "" {
				fmt.Fprintf(&b, "\n    %s", clipRunes(snip, 200))
			}
			ans.Citations = append(ans.Citations, Citation{N: n, ID: it.ExternalID, ItemID: it.ItemID, Title: it.Title, Time: it.Time, Source: it.Source})
		}
	}
	ans.Text = b.String()
	return ans
}
