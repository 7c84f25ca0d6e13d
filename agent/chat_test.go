package agent

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/search"
)

func newChat(t *testing.T, h *harness) *Chat {
	t.Helper()
	c, err := NewChat(ChatOptions{Agent: h.agent, Search: search.New(h.st, nil, nil), Sessions: h.st, Now: h.agent.opts.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *harness) chat(c *Chat, session, text string) *Answer {
	h.t.Helper()
	h.mu.Lock()
	h.events = nil
	h.mu.Unlock()
	ans, err := c.Chat(context.Background(), session, text, h.onEvent)
	if err != nil {
		h.t.Fatal(err)
	}
	return ans
}

func TestChatGreetingSkipsRetrieval(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	loadDojo(t, h.st, "")
	h.model.script(llm.Turn{Text: "Hello Emma!"})
	c := newChat(t, h)
	ans := h.chat(c, "", "hi")
	if ans.Text != "Hello Emma!" || ans.Retrieval || ans.SessionID == "" || len(h.eventsOf(EventToolStart)) != 0 {
		t.Fatalf("answer = %+v, tool events %v", ans, h.eventsOf(EventToolStart))
	}
	reqs := h.model.requests()
	if len(reqs) != 1 || reqs[0].Messages[len(reqs[0].Messages)-1].Content != "hi" {
		t.Fatalf("the greeting was sent with retrieved data: %+v", reqs[0].Messages)
	}
	if len(reqs[0].Tools) != 0 {
		t.Fatalf("a greeting was sent %d tool definitions", len(reqs[0].Tools))
	}
	if d := h.eventsOf(EventDone); len(d) != 1 || d[0].Answer.SessionID != ans.SessionID {
		t.Fatalf("done events = %+v", d)
	}
}

var tokyoRef = regexp.MustCompile(`\[(\d+)\][^\n]*· Exclusive Travel Deals`)

func TestChatRetrievesCitesAndContinuesTheSession(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t, harnessOpts{kind: kind})
			loadDojo(t, h.st, "")
			h.model.respond(func(r llm.Request) llm.Turn {
				last := r.Messages[len(r.Messages)-1].Content
				if strings.HasPrefix(last, "And who sent it?") {
					return llm.Turn{Text: "It came from travel deals [1]."}
				}
				m := tokyoRef.FindStringSubmatch(last)
				if m == nil {
					return llm.Turn{Text: "Not found."}
				}
				return llm.Turn{Text: "There is an offer of exclusive travel deals [" + m[1] + "]."}
			})
			c := newChat(t, h)
			ans := h.chat(c, "", "Which travel deals did I get by email?")
			if !ans.Retrieval || len(ans.Citations) != 1 || ans.Citations[0].Title != "Exclusive Travel Deals Just for You!" {
				t.Fatalf("answer = %+v", ans)
			}
			starts := h.eventsOf(EventToolStart)
			if len(starts) != 1 || starts[0].Tool.Name != "search" {
				t.Fatalf("retrieval not reported as a search: %+v", starts)
			}
			first := h.model.requests()[0]
			if u := first.Messages[len(first.Messages)-1].Content; !strings.Contains(u, untrusted.Open) || !strings.HasPrefix(u, "Which travel deals") {
				t.Fatalf("retrieved items not marked in the user turn:\n%s", u)
			}

			h.chat(c, ans.SessionID, "And who sent it?")
			second := h.model.requests()[1]
			var history []string
			for _, m := range second.Messages {
				if m.Role != "system" {
					history = append(history, m.Role+": "+strings.SplitN(m.Content, "\n", 2)[0])
				}
			}
			if len(history) != 3 || !strings.HasPrefix(history[0], "user: Which travel deals") || !strings.HasPrefix(history[1], "assistant: There is an offer") {
				t.Fatalf("second turn's history = %q", history)
			}
			if !strings.Contains(second.Messages[len(second.Messages)-2].Content, "= item id") {
				t.Fatalf("earlier citations not resolvable: %q", second.Messages[len(second.Messages)-2].Content)
			}
			saved, err := h.st.ChatHistory(context.Background(), ans.SessionID, 10)
			if err != nil || len(saved) != 4 || !strings.Contains(string(saved[1].Citations), `"Exclusive Travel Deals Just for You!"`) {
				t.Fatalf("saved session = %+v, %v", saved, err)
			}
		})
	}
}

// TestChatAsksTheModelWhenUnsure: the heuristics cannot tell, so a short
// triage call decides; GENERAL skips retrieval.
func TestChatAsksTheModelWhenUnsure(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	loadDojo(t, h.st, "")
	h.model.script(llm.Turn{Text: "GENERAL"}, llm.Turn{Text: "Es ist 9 Uhr."})
	c := newChat(t, h)
	ans := h.chat(c, "", "wie spät ist es")
	reqs := h.model.requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].System, "DATA or GENERAL") || len(reqs[0].Tools) != 0 {
		t.Fatalf("no classification call: %+v", reqs)
	}
	if ans.Retrieval || len(h.eventsOf(EventToolStart)) != 0 || ans.Text != "Es ist 9 Uhr." {
		t.Fatalf("answer = %+v", ans)
	}
}

// TestChatWithoutModel: with no model configured chat still answers, from
// search, and says plainly that a model is needed for more.
func TestChatWithoutModel(t *testing.T) {
	h := newHarness(t, harnessOpts{noLLM: true})
	loadDojo(t, h.st, "")
	c := newChat(t, h)
	ans := h.chat(c, "", "What did Lily write about the birthday party?")
	if !ans.NoModel || ans.Stop != StopNoModel || !strings.Contains(ans.Text, "No language model is configured") || !strings.Contains(ans.Text, "OMNIBRAIN_LLM_PROVIDER") {
		t.Fatalf("answer = %+v", ans)
	}
	if len(ans.Citations) == 0 || ans.Citations[0].Title != "Birthday Party" || !strings.Contains(ans.Text, "[1]") {
		t.Fatalf("best result not first: %+v\n%s", ans.Citations, ans.Text)
	}
	if len(h.eventsOf(EventError)) != 0 {
		t.Fatalf("error events: %+v", h.eventsOf(EventError))
	}
	texts := h.eventsOf(EventText)
	if len(texts) != 1 || texts[0].Text != ans.Text || len(h.eventsOf(EventDone)) != 1 {
		t.Fatalf("events: %d text, %d done", len(texts), len(h.eventsOf(EventDone)))
	}

	hello := h.chat(c, ans.SessionID, "hello")
	if !hello.NoModel || !strings.Contains(hello.Text, "needs a language model") || len(hello.Citations) != 0 {
		t.Fatalf("greeting = %+v", hello)
	}
	nothing := h.chat(c, "", "What did Zorblax say about quantum widgets?")
	if !strings.Contains(nothing.Text, "found nothing") {
		t.Fatalf("no results = %q", nothing.Text)
	}
}

func TestChatRejectsEmptyMessage(t *testing.T) {
	h := newHarness(t, harnessOpts{noLLM: true})
	if _, err := newChat(t, h).Chat(context.Background(), "", "   ", nil); err != ErrEmptyMessage {
		t.Fatalf("err = %v", err)
	}
}

// TestChatPastTheBudget: once the day's budget is spent, background work
// pauses but chat still gets the model; once the hard limit is reached,
// chat says why it cannot use the model and answers from search, citing
// what it found, instead of an error wall.
func TestChatPastTheBudget(t *testing.T) {
	h := newHarness(t, harnessOpts{router: func(o *router.Options) {
		o.LLM.Prices = map[string]config.Price{"openai-model": {InputPerMTok: 10}}
		o.LLM.DailyBudgetUSD, o.LLM.HardLimitUSD = 0.01, 0.02
	}})
	loadDojo(t, h.st, "")
	c := newChat(t, h)
	h.model.script(llm.Turn{Text: "triaged", InputTokens: 1000}) // spends the daily budget
	if _, err := h.router.Chat(context.Background(), router.Request{Task: router.TaskTriage, Messages: []router.Message{{Role: router.RoleUser, Content: "mail"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.router.Chat(context.Background(), router.Request{Task: router.TaskTriage, Messages: []router.Message{{Role: router.RoleUser, Content: "mail"}}}); !errors.Is(err, router.ErrBudgetExceeded) {
		t.Fatalf("background work past the budget: %v", err)
	}

	h.model.script(llm.Turn{Text: "Lily invited you to a birthday party [1].", InputTokens: 1000}) // reaches the hard limit
	ans := h.chat(c, "", "What did Lily write about the birthday party?")
	if ans.Stop != StopDone || !strings.HasPrefix(ans.Text, "Lily invited you") {
		t.Fatalf("chat past the daily budget: %+v", ans)
	}

	ans = h.chat(c, ans.SessionID, "What did Lily write about the birthday party?")
	if ans.Stop != StopBudget || ans.NoModel || !strings.Contains(ans.Text, "today's model budget is spent") || !strings.Contains(ans.Text, "hard limit") {
		t.Fatalf("chat past the hard limit: %+v", ans)
	}
	if len(ans.Citations) == 0 || ans.Citations[0].Title != "Birthday Party" || !strings.Contains(ans.Text, "[1]") {
		t.Fatalf("no search results past the hard limit: %+v\n%s", ans.Citations, ans.Text)
	}
	if n := len(h.model.requests()); n != 2 {
		t.Fatalf("the model saw %d requests; past the hard limit it must see none", n)
	}
	if texts := h.eventsOf(EventText); len(texts) != 1 || texts[0].Text != ans.Text {
		t.Fatalf("text events %+v", texts)
	}
}
