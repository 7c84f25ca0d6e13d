package daemon

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/graph"
	fakegh "github.com/omnibrain/omnibrain/internal/fakes/github"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/proactive"
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
	other func(r fakellm.Request) (fakellm.Turn, bool)
}

func newBrainE2E(t *testing.T, edit func(*config.Config)) *brainE2E {
	t.Helper()
	return newBrainE2EHosted(t, edit, false)
}

// newBrainE2EHosted with hosted true reaches the model under a hosted
// name (https://llm.hosted.example/v1): not loopback, so it is priced.
func newBrainE2EHosted(t *testing.T, edit func(*config.Config), hosted bool) *brainE2E {
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
		b.mu.Lock()
		other := b.other
		b.mu.Unlock()
		if other != nil {
			if turn, ok := other(r); ok {
				return turn
			}
		}
		return fakellm.Turn{Text: "A quiet day."}
	})
	var transport http.RoundTripper
	if hosted {
		transport = b.model.HostedTransport()
	}
	b.approvalE2E = newApprovalE2EHosted(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey = "openai", b.model.URL, "gpt-test", "sk-test"
		if hosted {
			cfg.LLM.BaseURL = "https://llm.hosted.example/v1"
		}
		cfg.Owner = config.Owner{Name: "Owen Owner", Emails: []string{owen}, VIPs: []string{alice}}
		if edit != nil {
			edit(cfg)
		}
	}, transport)
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
	text := b.explained(c, askID, "Reasoning chain: received → classified → context gathered → reply drafted")
	if !strings.Contains(b.explained(c, askID, "draft_reply: done"), "draft_reply: done, 1 attempt(s)") {
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

// Budget spent: a hosted model nobody priced counts at the most expensive
// known rate, so one drafting run spends the day's $0.05. The next mail's
// draft is not run: the templated acknowledgement is proposed and says
// why, the evening briefing is templated and says so, and the owner is
// told once that background work is paused.
func TestE2EBudgetSpentPausesBackgroundRuns(t *testing.T) {
	b := newBrainE2EHosted(t, func(cfg *config.Config) {
		cfg.LLM.Model, cfg.LLM.DailyBudgetUSD = "acme-large", 0.05
	}, true)
	b.onDraft(func(fakellm.Request) fakellm.Turn {
		turn := proposeReplyTurn("Hi Alice,\n\n4pm works.\n\nOwen")
		turn.InputTokens, turn.OutputTokens = 3000, 100 // $0.045 + $0.0075 at $15/$75 per million
		return turn
	})
	if d := b.app.llm.Describe(); !strings.Contains(d, "no known price: counted at $15/$75 per million tokens") {
		t.Fatalf("router: %s", d)
	}
	now := b.clock.Now()
	b.google.AddMessage(rawMessage("Alice Partner <"+alice+">", owen, "Offsite", "<offsite@partner.example>", now.Add(-time.Hour),
		"Hi Owen,\n\ncan you confirm the offsite agenda?\n\nAlice"), fakegoogle.MessageOptions{})
	b.collect("gmail")
	b.wait("the drafted reply", func() bool { return b.sentTo("4pm works.") == 1 })

	second := b.google.AddMessage(rawMessage("Alice Partner <"+alice+">", owen, "Invoice", "<invoice@partner.example>", now.Add(-30*time.Minute),
		"Hi Owen,\n\ncould you approve the invoice?\n\nAlice"), fakegoogle.MessageOptions{})
	b.collect("gmail")
	b.wait("the templated acknowledgement", func() bool {
		return b.sentTo("Templated acknowledgement (no model draft: today's model budget is spent)") == 1
	})
	c, stop := api.NewInProcessClient(b.app.Handler())
	defer stop()
	br, err := c.Briefing(context.Background(), "evening")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(br.Narrative, "Templated briefing: no model summary, today's model budget is spent") {
		t.Errorf("evening narrative %q", br.Narrative)
	}
	b.wait("the briefing in Telegram", func() bool { return b.sentTo("Templated briefing") == 1 })
	b.wait("the budget message", func() bool { return b.sentTo("Background work (triage, briefings, drafts) is paused") == 1 })

	if n := len(b.draftRequests()); n != 1 {
		t.Errorf("%d drafting requests reached the model; the second run must not start", n)
	}
	for _, r := range b.model.Requests() {
		if strings.Contains(r.System, "briefing") {
			t.Errorf("a briefing request reached the model past the budget: %s", r.System)
		}
	}
	x, err := c.Explain(context.Background(), second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(x.Text, "draft_reply: paused") || !strings.Contains(x.Text, "budget") {
		t.Errorf("explain of the second mail:\n%s", x.Text)
	}
	usage, err := c.Usage(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var cost float64
	for _, r := range usage.Rows {
		cost += r.CostUSD
	}
	if cost < 0.0524 || cost > 0.0526 {
		t.Errorf("recorded cost $%v, want $0.0525 at the most expensive known rate", cost)
	}
	if n := b.sentTo("Background work (triage, briefings, drafts) is paused"); n != 1 {
		t.Errorf("the owner was told %d times", n)
	}
}

// explained waits until explain of id shows want, and returns its text.
func (b *brainE2E) explained(c *api.Client, id, want string) string {
	b.t.Helper()
	var text string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(text, want) {
		x, err := c.Explain(context.Background(), id)
		if err != nil {
			b.t.Fatal(err)
		}
		text = x.Text
		if time.Now().After(deadline) {
			b.t.Errorf("explain %s lacks %q:\n%s", id, want, text)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return text
}

// explain shows each kind of chain: a mail answered by a drafting run, a
// mail that needed no reply, a meeting prepared by a run (its brief cites
// stored items as [n]), and a pull request waiting for the owner's
// review, analysed by a run that proposes a comment.
func TestE2EExplainShowsEachChain(t *testing.T) {
	gh := fakegh.New(fakegh.Options{Login: "owen", Token: "ghp_brain"})
	defer gh.Close()
	b := newBrainE2E(t, func(cfg *config.Config) {
		cfg.GitHub.Token, cfg.GitHub.APIURL, cfg.Owner.GitHubLogin = "ghp_brain", gh.URL(), "owen"
	})
	b.mu.Lock()
	b.other = func(r fakellm.Request) (fakellm.Turn, bool) {
		switch {
		case strings.Contains(r.System, "Plan for: Prepare the owner for the meeting"):
			return fakellm.Turn{Text: "Purpose: decide on the marketing overrun Bob raised [2]. Bring the revised Q3 budget."}, true
		case strings.Contains(r.System, "Plan for: Analyse the GitHub item"):
			if !calledTool(r, "propose_comment") {
				return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "propose_comment", Arguments: `{"body":"Thanks Bob, the ledger fix looks right to me."}`}}}, true
			}
			return fakellm.Turn{Text: "Bob asks you to review the Q3 ledger fix [1]; nothing blocks it."}, true
		}
		return fakellm.Turn{}, false
	}
	b.mu.Unlock()
	b.onDraft(func(fakellm.Request) fakellm.Turn {
		return proposeReplyTurn("Hi Alice,\n\nyes, the agenda stands.\n\nOwen")
	})
	now := b.clock.Now()
	ask := b.google.AddMessage(rawMessage("Alice Partner <"+alice+">", owen, "Agenda", "<agenda@partner.example>", now.Add(-30*time.Minute),
		"Hi Owen,\n\ncan you confirm the agenda for the budget sync?\n\nAlice"), fakegoogle.MessageOptions{})
	news := b.google.AddMessage(rawMessage("Deals <deals@shop.example>", owen, "50% off everything", "<deal@shop.example>", now.Add(-20*time.Minute),
		"Big sale this week only!", "List-Unsubscribe: <mailto:unsub@shop.example>", "Precedence: bulk"), fakegoogle.MessageOptions{})
	b.google.AddMessage(rawMessage("Bob Builder <bob@partner.example>", owen, "Marketing overrun", "<bob-overrun@partner.example>", now.Add(-72*time.Hour),
		"Owen, the marketing overrun needs a decision before we meet."), fakegoogle.MessageOptions{})
	if _, err := b.google.AddEvent("primary", fakegoogle.Event{ID: "sync", Summary: "Budget sync",
		Start:     &fakegoogle.EventDateTime{DateTime: now.Add(time.Hour).Format(time.RFC3339)},
		End:       &fakegoogle.EventDateTime{DateTime: now.Add(90 * time.Minute).Format(time.RFC3339)},
		Attendees: []fakegoogle.Attendee{{Email: owen, Self: true, ResponseStatus: "accepted"}, {Email: "bob@partner.example", DisplayName: "Bob Builder", ResponseStatus: "accepted"}}}); err != nil {
		t.Fatal(err)
	}
	gh.AddIssue(fakegh.Issue{Repo: "acme/books", PR: true, Title: "Fix the Q3 ledger", Author: "bob", HeadSHA: "abc123", Reviewers: []string{"owen"}})
	gh.AddNotification(fakegh.Notification{Repo: "acme/books", Type: "PullRequest", Number: 1, Title: "Fix the Q3 ledger", Reason: "review_requested"})
	b.collect("calendar", "gmail", "github")
	if err := b.app.proactive.sched.Trigger(context.Background(), proactive.JobPrep); err != nil {
		t.Fatal(err)
	}
	b.wait("the meeting brief in Telegram", func() bool {
		return b.sentTo("Purpose: decide on the marketing overrun Bob raised [2]") == 1 && b.sentTo("Sources:\n[2]") == 1
	})
	// The review request is FYI: its notice, with the analysis, waits for
	// the next briefing.
	b.wait("the analysed review request", func() bool {
		n, err := b.app.Store().NotificationByKey(context.Background(), "triage:github:pr:acme/books#1:notify")
		return err == nil && strings.Contains(n.Text, "Analysis: Bob asks you to review the Q3 ledger fix [1]")
	})

	b.wait("the proposed comment in Telegram", func() bool { return b.sentTo("the ledger fix looks right to me") == 1 })
	b.wait("the drafted reply in Telegram", func() bool { return b.sentTo("yes, the agenda stands") == 1 })

	c, stop := api.NewInProcessClient(b.app.Handler())
	defer stop()
	b.explained(c, ask.ID, "Reasoning chain: received → classified → context gathered → reply drafted")
	b.explained(c, news.ID, "Reasoning chain: received → classified → no reply needed")
	meeting := b.explained(c, "sync", "Reasoning chain: upcoming → context gathered → brief ready")
	if !strings.Contains(meeting, "meeting_prep: done") {
		t.Errorf("the meeting's run is not explained:\n%s", meeting)
	}
	b.explained(c, "pr:acme/books#1", "Reasoning chain: reported → analysed → comment proposed")
	ps, err := b.app.Gate().List(context.Background(), approval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range ps {
		kinds = append(kinds, string(p.Kind))
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{string(approval.KindGitHubComment), string(approval.KindReply)}) {
		t.Errorf("proposals %v, want the comment and the reply", kinds)
	}
}

// calledTool reports whether a run's conversation has a call of tool.
func calledTool(r fakellm.Request, tool string) bool {
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == tool {
				return true
			}
		}
	}
	return false
}

// A run interrupted three times (the daemon stopped while it ran) is
// dropped when the daemon starts a fourth time: the template takes over
// and says so, status carries a note, explain shows the dropped run.
func TestE2EInterruptedThreeTimesIsDropped(t *testing.T) {
	b := newBrainE2E(t, nil)
	b.onDraft(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Hang: true} })
	now := b.clock.Now()
	ask := b.google.AddMessage(rawMessage("Alice Partner <"+alice+">", owen, "Contract", "<contract@partner.example>", now.Add(-time.Hour),
		"Hi Owen,\n\ncan you send the signed contract?\n\nAlice"), fakegoogle.MessageOptions{})
	b.collect("gmail")
	for i := 1; i <= 3; i++ {
		b.waitGoogle(fmt.Sprintf("drafting attempt %d", i), func() bool { return len(b.draftRequests()) == i })
		b.stop()
		b.start()
	}
	b.wait("the templated acknowledgement", func() bool { return b.sentTo("Templated acknowledgement (no model draft: the model") == 1 })
	if n := len(b.draftRequests()); n != 3 {
		t.Errorf("%d drafting requests, want 3 (the dropped run is not tried a fourth time)", n)
	}
	c, stop := api.NewInProcessClient(b.app.Handler())
	defer stop()
	x := b.explained(c, ask.ID, "draft_reply: dropped")
	if !strings.Contains(x, "interrupted 3 times") {
		t.Errorf("explain:\n%s", x)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var note string
	for _, comp := range st.Components {
		if comp.Name == "agent" {
			note = comp.LastError
		}
	}
	if !strings.Contains(note, "interrupted 3 times: dropped") {
		t.Errorf("status lacks the note: agent %q", note)
	}
}

// A confirmed pattern becomes a standing rule through a background run:
// the owner takes every mail from a shop out of the inbox unread; the
// patterns pass confirms it, an automation run is given the evidence and
// proposes the rule with its own explanation, the proposal reaches
// Telegram, and the pattern's chain ends in "automation proposed".
func TestE2EConfirmedPatternProposesARuleThroughARun(t *testing.T) {
	b := newBrainE2E(t, nil)
	const why = "You took all six deals mails out of the inbox unread [1][2]."
	b.mu.Lock()
	b.other = func(r fakellm.Request) (fakellm.Turn, bool) {
		if !strings.Contains(r.System, "Plan for: A pattern in the owner's mail") {
			return fakellm.Turn{}, false
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "propose_automation", Arguments: fmt.Sprintf(`{"reason":%q}`, why)}}}, true
	}
	b.mu.Unlock()
	now := b.clock.Now()
	for i := range 6 {
		b.google.AddMessage(rawMessage("Deals <deals@shop.example>", owen, fmt.Sprintf("Deals of the week %d", i+1), fmt.Sprintf("<deals-%d@shop.example>", i),
			now.AddDate(0, 0, -4*(6-i)), "This week's deals."), fakegoogle.MessageOptions{Labels: []string{"CATEGORY_PROMOTIONS"}})
	}
	b.collect("gmail")
	if err := b.app.proactive.sched.Trigger(context.Background(), proactive.JobPatterns); err != nil {
		t.Fatal(err)
	}
	b.wait("the proposed rule in Telegram", func() bool { return b.sentTo(why) == 1 })

	var runs []fakellm.Request
	for _, r := range b.model.Requests() {
		if strings.Contains(r.System, "Plan for: A pattern in the owner's mail") {
			runs = append(runs, r)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("%d automation requests, want one turn that proposes", len(runs))
	}
	var results strings.Builder
	for _, m := range runs[0].Messages {
		if m.Role == "tool" {
			results.WriteString(m.Content)
		}
	}
	if !strings.Contains(firstUser(runs[0]), "you archive mail from deals@shop.example") || !strings.Contains(results.String(), "Deals of the week 6") {
		t.Errorf("the run was not given the pattern and its evidence:\n%s\n%s", firstUser(runs[0]), results.String())
	}
	var tools []string
	for _, tl := range runs[0].Tools {
		tools = append(tools, tl.Name)
	}
	slices.Sort(tools)
	if !slices.Equal(tools, []string{"get_item", "propose_automation"}) {
		t.Errorf("an automation run was offered %v", tools)
	}

	ps, err := b.app.Gate().List(context.Background(), approval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rule *approval.Proposal
	for _, p := range ps {
		if p.Kind == approval.KindAutomation {
			if rule != nil {
				t.Fatalf("two rules proposed: %q, %q", rule.Title, p.Title)
			}
			rule = p
		}
	}
	if rule == nil || rule.Title != "Mute mail from deals@shop.example" || !strings.HasPrefix(rule.Reason, why+" (Pattern (confidence 100%") {
		t.Fatalf("rule %+v", rule)
	}
	stages, err := graph.NewChains(b.app.Store()).Of(context.Background(), "pattern:"+proactive.PatternAlwaysArchives+":deals@shop.example")
	if err != nil {
		t.Fatal(err)
	}
	var chain []string
	for _, s := range stages {
		chain = append(chain, s.Name)
	}
	if !slices.Equal(chain, []string{graph.Observed, graph.PatternConfirmed, graph.AutomationProposed}) {
		t.Errorf("the pattern's chain %v", chain)
	}
}
