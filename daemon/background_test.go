package daemon

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
)

const (
	owen  = "owner@example.com"
	alice = "alice@partner.example"
)

// brainE2E is the daemon with a model: the approval harness (Gmail,
// Calendar and Telegram fakes) plus a scripted OpenAI fake whose requests
// are told apart by what they are for.
type brainE2E struct {
	*approvalE2E
	model *fakellm.OpenAI

	mu    sync.Mutex
	draft func(r fakellm.Request) fakellm.Turn // answers drafting runs
}

func newBrainE2E(t *testing.T, edit func(*config.Config)) *brainE2E {
	t.Helper()
	b := &brainE2E{model: fakellm.NewOpenAI(t)}
	b.model.Respond(func(r fakellm.Request) fakellm.Turn {
		switch {
		case isDraftRun(r):
			b.mu.Lock()
			draft := b.draft
			b.mu.Unlock()
			if draft != nil {
				return draft(r)
			}
		case strings.Contains(r.System, "You triage one email"):
			return fakellm.Turn{Text: `{"decision":"notify","priority":50,"reason":"a colleague's update"}`}
		}
		return fakellm.Turn{Text: "A quiet day."}
	})
	b.approvalE2E = newApprovalE2EWith(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey = "openai", b.model.URL, "gpt-test", "sk-test"
		cfg.Owner = config.Owner{Name: "Owen Owner", Emails: []string{owen}, VIPs: []string{alice}}
		if edit != nil {
			edit(cfg)
		}
	})
	return b
}

func (b *brainE2E) onDraft(fn func(r fakellm.Request) fakellm.Turn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draft = fn
}

// isDraftRun tells a drafting run's requests by its plan.
func isDraftRun(r fakellm.Request) bool {
	return strings.Contains(r.System, "Plan for: Draft the owner's reply")
}

func (b *brainE2E) draftRequests() []fakellm.Request {
	var out []fakellm.Request
	for _, r := range b.model.Requests() {
		if isDraftRun(r) {
			out = append(out, r)
		}
	}
	return out
}

// rawMessage is a raw RFC 5322 message.
func rawMessage(from, to, subject, msgID string, date time.Time, body string, extra ...string) []byte {
	h := fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: %s\r\nDate: %s\r\n", from, to, subject, msgID, date.Format(time.RFC1123Z))
	for _, x := range extra {
		h += x + "\r\n"
	}
	return []byte(h + "\r\n" + strings.ReplaceAll(body, "\n", "\r\n") + "\r\n")
}

func (b *brainE2E) collect(names ...string) {
	b.t.Helper()
	if _, err := b.app.collectors().CollectNow(context.Background(), names); err != nil {
		b.t.Fatal(err)
	}
}

// setUpMeetingRequest stores an earlier exchange with Alice (her numbers,
// Owen's answer), and an event tomorrow 14:30–15:30; then Alice asks to
// meet tomorrow at 3pm. It returns the new mail's Gmail id.
func (b *brainE2E) setUpMeetingRequest() string {
	b.t.Helper()
	now := b.clock.Now()
	old := now.AddDate(0, 0, -5)
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if _, err := b.google.AddEvent("primary", fakegoogle.Event{ID: "dentist", Summary: "Dentist appointment",
		Start: &fakegoogle.EventDateTime{DateTime: tomorrow.Add(14*time.Hour + 30*time.Minute).Format(time.RFC3339)},
		End:   &fakegoogle.EventDateTime{DateTime: tomorrow.Add(15*time.Hour + 30*time.Minute).Format(time.RFC3339)}}); err != nil {
		b.t.Fatal(err)
	}
	first := b.google.AddMessage(rawMessage("Alice Partner <"+alice+">", "Owen Owner <"+owen+">", "Q3 budget", "<q3-numbers@partner.example>", old,
		"Hi Owen,\n\nhere are the Q3 budget numbers: marketing is 40k over plan.\n\nAlice"), fakegoogle.MessageOptions{})
	b.google.AddMessage(rawMessage("Owen Owner <"+owen+">", alice, "Re: Q3 budget", "<owen-reply@example.com>", old.Add(time.Hour),
		"Hi Alice,\n\nthanks, I'll look at marketing.\n\nCheers,\nOwen", "In-Reply-To: <q3-numbers@partner.example>"),
		fakegoogle.MessageOptions{ThreadID: first.ThreadID, Labels: []string{"SENT"}})
	b.collect("calendar", "gmail")
	ask := b.google.AddMessage(rawMessage("Alice Partner <"+alice+">", "Owen Owner <"+owen+">", "Re: Q3 budget", "<meet-ask@partner.example>", now.Add(-10*time.Minute),
		"Hi Owen,\n\ncould we meet tomorrow at 3pm to go through the marketing overrun? Please let me know.\n\nAlice",
		"In-Reply-To: <owen-reply@example.com>"), fakegoogle.MessageOptions{ThreadID: first.ThreadID})
	b.collect("gmail")
	return ask.ID
}

// proposeReplyTurn answers a drafting run by proposing a reply.
func proposeReplyTurn(body string) fakellm.Turn {
	return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "propose_reply", Arguments: fmt.Sprintf(`{"body":%q}`, body)}}}
}

// The brain in the background: Alice asks to meet when Owen's calendar is
// taken. The drafting run reads the thread and the calendar before the
// model is asked; the model sees the earlier message and the conflicting
// event; the reply proposal reaches Telegram with the context it used in
// its reason; explain shows the mail's chain.
func TestE2EDraftReplyGathersContextAndSeesTheConflict(t *testing.T) {
	b := newBrainE2E(t, nil)
	const reply = "Hi Alice,\n\nI'm at the dentist tomorrow at 3pm. Could we meet at 4pm instead?\n\nCheers,\nOwen"
	b.onDraft(func(fakellm.Request) fakellm.Turn { return proposeReplyTurn(reply) })
	askID := b.setUpMeetingRequest()

	var msg faketg.Message
	b.wait("the reply proposal in Telegram", func() bool {
		for _, m := range b.tg.SentTo(tgOwner.ID) {
			if m.Keyboard != nil && strings.Contains(m.Text, "dentist tomorrow at 3pm") {
				msg = m
				return true
			}
		}
		return false
	})
	reqs := b.draftRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d drafting requests, want one turn that proposes", len(reqs))
	}
	r := reqs[0]
	var called []string
	var results strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			called = append(called, c.Name)
		}
		if m.Role == "tool" {
			results.WriteString(m.Content)
		}
	}
	for _, tool := range []string{"thread", "calendar", "past_replies"} {
		if !slices.Contains(called, tool) {
			t.Errorf("the run did not call %s before asking the model: %v", tool, called)
		}
	}
	for _, want := range []string{"marketing is 40k over plan", "Dentist appointment", "I'll look at marketing", "Cheers,"} {
		if !strings.Contains(results.String(), want) {
			t.Errorf("the model was not shown %q:\n%s", want, results.String())
		}
	}
	if user := firstUser(r); !strings.Contains(user, `"Dentist appointment" (14:30–15:30)`) || !strings.Contains(user, "do not accept that time") || !strings.Contains(user, "in English") {
		t.Errorf("the task does not name the conflict and the language:\n%s", user)
	}
	var tools []string
	for _, tl := range r.Tools {
		tools = append(tools, tl.Name)
	}
	if !slices.Contains(tools, "propose_reply") || slices.Contains(tools, "send_email") || slices.Contains(tools, "reply_email") || slices.Contains(tools, "remember") {
		t.Errorf("a drafting run was offered %v", tools)
	}

	why := regexp.MustCompile(`(?s)Why:</i> (.*?)\n`).FindStringSubmatch(msg.Text)
	if why == nil || !strings.Contains(why[1], "Drafted with context: items ") || !strings.Contains(why[1], "thread") || !strings.Contains(why[1], "Dentist appointment") {
		t.Fatalf("the proposal's reason lacks the context:\n%s", msg.Text)
	}
	ps, err := b.app.Gate().List(context.Background(), approval.ListOptions{})
	if err != nil || len(ps) != 1 || ps[0].Kind != approval.KindReply || ps[0].State != approval.StatePending {
		t.Fatalf("proposals %+v, %v", ps, err)
	}

	c, stop := api.NewInProcessClient(b.app.Handler())
	defer stop()
	// The chain's last stage is recorded once the run has ended, just
	// after its proposal reached the owner.
	var text string
	if !b.tg.WaitUntil(20*time.Second, func() bool {
		x, err := c.Explain(context.Background(), askID)
		if err != nil {
			t.Fatal(err)
		}
		text = x.Text
		return strings.Contains(text, "draft_reply: done") && strings.Contains(text, "→ reply drafted")
	}) || !strings.Contains(text, "Reasoning chain: received → classified → context gathered → reply drafted") || !strings.Contains(text, "draft_reply: done, 1 attempt(s)") {
		t.Errorf("explain:\n%s", text)
	}
}

func firstUser(r fakellm.Request) string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}
