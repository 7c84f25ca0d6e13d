package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/health"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
	"github.com/omnibrain/omnibrain/telegram"
)

const tgToken = "987654:daemon-e2e-token"

var (
	tgOwner    = faketg.User{ID: 4242, FirstName: "Owner"}
	tgStranger = faketg.User{ID: 13, FirstName: "Stranger"}
)

// settable is the daemon's clock in these tests.
type settable struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settable) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settable) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// approvalE2E runs the real daemon (App.Run: supervisor, outbox, bot,
// notification delivery, collectors) against the fake Telegram and the
// fake Gmail, through go-telegram/bot and google.golang.org/api.
type approvalE2E struct {
	t      testing.TB
	cfg    *config.Config
	clock  *settable
	google *fakegoogle.Server
	tg     *faketg.Server
	app    *App
	cancel context.CancelFunc
	done   chan error
	hosted http.RoundTripper // reaches hosted model providers (LLMTransport)
}

func newApprovalE2E(t testing.TB) *approvalE2E {
	t.Helper()
	return newApprovalE2EWith(t, nil)
}

// newApprovalE2EWith lets a test change the configuration (a model, say);
// by default no model is configured.
func newApprovalE2EWith(t testing.TB, edit func(*config.Config)) *approvalE2E {
	t.Helper()
	return newApprovalE2EHosted(t, edit, nil)
}

// newApprovalE2EHosted also gives the daemon a transport to hosted model
// providers (a fake behind a hosted name).
func newApprovalE2EHosted(t testing.TB, edit func(*config.Config), hosted http.RoundTripper) *approvalE2E {
	t.Helper()
	return newApprovalE2EGoogle(t, edit, hosted, fakegoogle.Options{RequireAuth: true})
}

// newApprovalE2EGoogle also chooses the fake Google's options (its
// account, say).
func newApprovalE2EGoogle(t testing.TB, edit func(*config.Config), hosted http.RoundTripper, gopts fakegoogle.Options) *approvalE2E {
	t.Helper()
	e := &approvalE2E{t: t, clock: &settable{t: time.Now().UTC()}, hosted: hosted}
	e.google = fakegoogle.New(t, gopts)
	e.tg = faketg.New(tgToken)
	t.Cleanup(e.tg.Close)
	e.tg.OpenChat(tgOwner.ID)
	cfg := config.Default(t.TempDir())
	cfg.Google.APIURL, cfg.Google.TokenURL, cfg.Google.AuthURL = e.google.URL, e.google.TokenURL(), e.google.AuthURL()
	cfg.Google.ClientID, cfg.Google.ClientSecret = e.google.ClientID(), config.Secret(e.google.ClientSecret())
	cfg.Telegram.Token, cfg.Telegram.APIURL, cfg.Telegram.OwnerID = tgToken, e.tg.URL(), tgOwner.ID
	cfg.Location = time.UTC
	// The notification policy is not under test: no quiet hours, no budget.
	cfg.Notifications.QuietStart, cfg.Notifications.QuietEnd, cfg.Notifications.DailyBudget = "", "", 100000
	cfg.LLM.Provider = "none" // never a local Ollama by chance
	// What is sent is under test here, not when: the send delay has its
	// own tests (a test's edit may set it).
	cfg.Approval.SendDelay = 0
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	tok := e.google.IssueToken(240 * time.Hour)
	data := `{"access_token":"` + tok.AccessToken + `","refresh_token":"` + tok.RefreshToken + `","expiry":"` + tok.Expiry.Format(time.RFC3339) + `"}`
	if err := google.ImportToken(cfg.Path(google.TokenFileName), []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *approvalE2E) start() {
	e.t.Helper()
	app, err := Open(context.Background(), e.cfg, Options{Now: e.clock.Now, LLMTransport: e.hosted})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.app, e.cancel, e.done = app, cancel, make(chan error, 1)
	go func() { e.done <- app.Run(ctx) }()
	e.wait("the bot registered its commands", func() bool { return len(e.tg.Commands()) > 0 })
	// The API listens from its own goroutine: tests that call it wait
	// for it too, not only for the bot.
	c := api.NewUnixClient(e.cfg.Path(api.SocketName))
	e.wait("the local API listening", func() bool { return c.Ping(ctx) == nil })
}

// stop ends the daemon as a kill would: whatever is in flight stays as it is.
func (e *approvalE2E) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("daemon: %v", err)
	}
	e.app.Close()
	e.cancel = nil
}

func (e *approvalE2E) wait(what string, cond func() bool) {
	e.t.Helper()
	if !e.tg.WaitUntil(20*time.Second, cond) {
		e.t.Fatalf("timed out waiting for %s", what)
	}
}

// outboxPass returns once the outbox has made a whole pass that began
// after the call: whatever it would still send has been sent by then.
func (e *approvalE2E) outboxPass() {
	e.t.Helper()
	testutil.WaitPass(e.t, "outbox", e.app.Gate().WaitPass)
}

// dispatcherPass returns once the notification dispatcher has made a
// whole pass that began after the call.
func (e *approvalE2E) dispatcherPass() {
	e.t.Helper()
	testutil.WaitPass(e.t, "notification dispatcher", e.app.Notifier().WaitPass)
}

// waitGoogle polls the Gmail fake, which has no change signal.
func (e *approvalE2E) waitGoogle(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *approvalE2E) propose(body string) *approval.Proposal {
	e.t.Helper()
	p, err := e.app.Gate().Propose(context.Background(), approval.Draft{Kind: approval.KindReply, Origin: "proactive", Reason: "Alice asked for the Q3 numbers",
		Payload: approval.EmailPayload{To: []string{"Alice Example <alice@example.org>"}, Cc: []string{"bob@example.org"}, Subject: "Re: Q3 numbers",
			Body: body, InReplyTo: "<q3-question@example.org>", References: []string{"<q3-question@example.org>"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// shown waits for p's message with its buttons in the owner's chat.
func (e *approvalE2E) shown(p *approval.Proposal) faketg.Message {
	e.t.Helper()
	var msg faketg.Message
	e.wait("proposal "+p.ID+" in Telegram", func() bool {
		for _, m := range e.tg.SentTo(tgOwner.ID) {
			if m.Keyboard != nil && strings.Contains(m.Keyboard[0][0].CallbackData, p.ID) {
				msg = m
				return true
			}
		}
		return false
	})
	return msg
}

func button(m faketg.Message, label string) string {
	for _, row := range m.Keyboard {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				return b.CallbackData
			}
		}
	}
	return ""
}

func (e *approvalE2E) answer(qid string) string {
	e.t.Helper()
	var text string
	e.wait("the answer to "+qid, func() bool {
		for _, a := range e.tg.Answers() {
			if a.CallbackQueryID == qid {
				text = a.Text
				return true
			}
		}
		return false
	})
	return text
}

func (e *approvalE2E) proposal(id string) *approval.Proposal {
	e.t.Helper()
	p, err := e.app.Gate().Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *approvalE2E) sends() int {
	return e.google.CountRequests("POST", "/gmail/v1/users/me/messages/send")
}

// bodyOf returns a sent message's body with CRLF as LF.
func bodyOf(t testing.TB, raw []byte) string {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(m.Body)
	return strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
}

func TestE2EOwnerPressSendsExactlyTheApprovedMailOnce(t *testing.T) {
	e := newApprovalE2E(t)
	body := "Hi Alice,\n\nthe Q3 numbers are final: revenue 1.2M, costs 0.8M.\n\nBest,\nOwner"
	p := e.propose(body)
	m := e.shown(p)
	for _, want := range []string{"Alice Example &lt;alice@example.org&gt;", "bob@example.org", "Re: Q3 numbers", "revenue 1.2M, costs 0.8M.", "Alice asked for the Q3 numbers"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("the approval message lacks %q:\n%s", want, m.Text)
		}
	}

	// A stranger's press (even with the right data) does nothing.
	_, qs := e.tg.Press(tgStranger, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(qs); got != "Not available." {
		t.Errorf("stranger answered %q", got)
	}
	if e.proposal(p.ID).State != approval.StatePending || e.sends() != 0 {
		t.Fatal("a stranger's press had an effect")
	}

	// The owner presses Send twice in a row.
	_, q1 := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	_, q2 := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(q1); !strings.Contains(got, "Approved") {
		t.Errorf("first press answered %q", got)
	}
	if got := e.answer(q2); !strings.Contains(got, "Nothing changed") {
		t.Errorf("second press answered %q", got)
	}
	e.waitGoogle("the send", func() bool { return len(e.google.Sent()) == 1 })
	e.wait("the message edited to Sent, without buttons", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Sent")
	})
	e.outboxPass()
	if n := e.sends(); n != 1 {
		t.Fatalf("%d messages.send requests, want exactly 1", n)
	}
	sent := e.google.Sent()[0]
	h := sent.Header
	if !strings.Contains(h.Get("To"), "alice@example.org") || !strings.Contains(h.Get("Cc"), "bob@example.org") || h.Get("Subject") != "Re: Q3 numbers" ||
		h.Get("In-Reply-To") != "<q3-question@example.org>" || h.Get("Message-Id") == "" {
		t.Errorf("headers %v", h)
	}
	if got := bodyOf(t, sent.Raw); got != body {
		t.Errorf("sent body\n%q\nwant the approved\n%q", got, body)
	}
	final := e.proposal(p.ID)
	if final.State != approval.StateExecuted || final.DecidedBy != fmt.Sprintf("telegram:%d", tgOwner.ID) || final.RemoteID == "" {
		t.Errorf("proposal %+v", final)
	}
	for _, s := range e.tg.Sent() {
		if s.ChatID != tgOwner.ID {
			t.Errorf("a message went to chat %d", s.ChatID)
		}
	}
	if c, _ := e.app.Health().Get("outbox"); c.Counters["executed"] != 1 {
		t.Errorf("outbox health %+v", c)
	}
}

func TestE2EPressAfterExpirySendsNothing(t *testing.T) {
	e := newApprovalE2E(t)
	p := e.propose("late")
	m := e.shown(p)
	e.clock.Add(e.cfg.Approval.Expiry + time.Minute)
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(q); !strings.Contains(got, "expired") {
		t.Errorf("answered %q", got)
	}
	e.wait("the message edited to Expired", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Expired")
	})
	if n := e.sends(); n != 0 || e.proposal(p.ID).State != approval.StateExpired {
		t.Errorf("%d sends, state %s", n, e.proposal(p.ID).State)
	}
}

func TestE2EEditNeverSendsTheOldPayload(t *testing.T) {
	e := newApprovalE2E(t)
	old := e.propose("the first draft")
	m := e.shown(old)
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Edit"))
	e.answer(q)
	e.tg.SendText(tgOwner, "the corrected draft")
	var nw *approval.Proposal
	e.wait("the new draft", func() bool {
		ps, _ := e.app.Gate().List(context.Background(), approval.ListOptions{States: []approval.State{approval.StatePending}})
		if len(ps) == 1 && ps[0].Supersedes == old.ID {
			nw = ps[0]
			return true
		}
		return false
	})
	mn := e.shown(nw)
	// The old message's Send does nothing now.
	_, q2 := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(q2); !strings.Contains(got, "superseded") {
		t.Errorf("old Send answered %q", got)
	}
	e.outboxPass()
	if e.sends() != 0 {
		t.Fatal("something was sent before the new draft was approved")
	}
	_, q3 := e.tg.Press(tgOwner, tgOwner.ID, mn.ID, button(mn, "Send"))
	e.answer(q3)
	e.waitGoogle("the send", func() bool { return len(e.google.Sent()) == 1 })
	if got := bodyOf(t, e.google.Sent()[0].Raw); got != "the corrected draft" {
		t.Errorf("sent %q", got)
	}
	e.outboxPass()
	if n := e.sends(); n != 1 {
		t.Errorf("%d sends", n)
	}
	if e.proposal(old.ID).State != approval.StateSuperseded {
		t.Errorf("old state %s", e.proposal(old.ID).State)
	}
}

// The daemon dies while the mail is executing: Gmail has it, the answer
// never came back. After a restart the outbox finds it by its Message-ID
// and does not send it again.
func TestE2EKilledWhileExecutingStillSendsOnce(t *testing.T) {
	e := newApprovalE2E(t)
	p := e.propose("sent once, whatever happens")
	m := e.shown(p)
	e.google.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", After: true, Delay: time.Hour, Status: 500, Times: 1})
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	e.answer(q)
	e.waitGoogle("the send to reach Gmail", func() bool { return len(e.google.Sent()) == 1 })
	e.stop() // killed before Gmail answered
	st, err := store.Open(context.Background(), e.cfg.Path(store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var state string
	err = st.DB().QueryRow(`SELECT state FROM proposals WHERE id = ?`, p.ID).Scan(&state)
	st.Close()
	if err != nil || state != string(approval.StateExecuting) {
		t.Fatalf("after the kill the proposal is %q (%v), want executing", state, err)
	}
	e.start()
	e.waitGoogle("the restart to resolve it", func() bool { return e.proposal(p.ID).State == approval.StateExecuted })
	e.outboxPass()
	if n := len(e.google.Sent()); n != 1 || e.sends() != 1 {
		t.Errorf("%d mails in Gmail, %d send requests; want 1 and 1", n, e.sends())
	}
	audit, _ := e.app.Gate().Audit(context.Background(), p.ID, 0)
	if last := audit[len(audit)-1]; last.Action != "executed" || !strings.Contains(last.Detail, "after an interrupted attempt") {
		t.Errorf("audit ends with %+v", last)
	}
	e.wait("the message edited to Sent", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Sent")
	})
}

func TestE2EGmail500FailsIsReportedAndNotRetried(t *testing.T) {
	e := newApprovalE2E(t)
	p := e.propose("this one will fail")
	m := e.shown(p)
	e.google.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", Status: 500, Times: 1})
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	e.answer(q)
	e.waitGoogle("the failure", func() bool { return e.proposal(p.ID).State == approval.StateFailed })
	e.wait("the owner told", func() bool {
		for _, s := range e.tg.SentTo(tgOwner.ID) {
			if strings.Contains(s.Text, "Could not do") && strings.Contains(s.Text, p.ID) {
				return true
			}
		}
		return false
	})
	e.wait("the message edited to Failed", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Failed")
	})
	e.outboxPass()
	if n := e.sends(); n != 1 || len(e.google.Sent()) != 0 {
		t.Errorf("%d send requests (want 1, not retried), %d mails sent", n, len(e.google.Sent()))
	}
	if c, _ := e.app.Health().Get("outbox"); c.Counters["failed"] != 1 {
		t.Errorf("outbox health %+v", c)
	}
}

func TestE2ECLIApprovesThroughTheSamePath(t *testing.T) {
	e := newApprovalE2E(t)
	p := e.propose("approved from the API")
	m := e.shown(p)
	c := api.NewUnixClient(e.cfg.Path(api.SocketName))
	if _, err := c.Approve(context.Background(), p.ID, p.PayloadHash); err != nil {
		t.Fatal(err)
	}
	e.waitGoogle("the send", func() bool { return len(e.google.Sent()) == 1 })
	// The Telegram message shows the outcome though the decision came from the API.
	e.wait("the message edited to Sent", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Sent")
	})
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(q); !strings.Contains(got, "Nothing changed") {
		t.Errorf("late press answered %q", got)
	}
	if e.proposal(p.ID).DecidedBy != "api" || e.sends() != 1 {
		t.Errorf("decided by %q, %d sends", e.proposal(p.ID).DecidedBy, e.sends())
	}
}

func TestTelegramDisabledWithoutToken(t *testing.T) {
	cfg := config.Default(t.TempDir())
	app, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	c, ok := app.Health().Get(telegram.HealthName)
	if !ok || c.State != health.Disabled || !strings.Contains(c.Detail, "OMNIBRAIN_TELEGRAM_TOKEN") {
		t.Errorf("telegram health %+v", c)
	}
}

// BenchmarkPressToGmailSend is the time from the owner's press of ✅ Send
// at the fake Telegram to the messages.send request at the fake Gmail,
// through the running daemon.
func BenchmarkPressToGmailSend(b *testing.B) {
	e := newApprovalE2E(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		p := e.propose(fmt.Sprint("benchmark mail ", i))
		m := e.shown(p)
		before := e.sends()
		t0 := time.Now()
		e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
		deadline := t0.Add(time.Minute)
		for e.sends() == before {
			if time.Now().After(deadline) {
				b.Fatal("the send never reached Gmail")
			}
			time.Sleep(100 * time.Microsecond)
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/press")
}

// sentTo counts the owner's Telegram messages containing text.
func (e *approvalE2E) sentTo(text string) int {
	n := 0
	for _, m := range e.tg.SentTo(tgOwner.ID) {
		if strings.Contains(m.Text, text) {
			n++
		}
	}
	return n
}

// 💬 Redraft with a model: the owner's words go to the model with the
// draft; the new text is a new proposal, the old one can never be sent,
// and what reaches Gmail is exactly the redraft the owner approved, still
// in the thread.
func TestE2ERedraftWithModel(t *testing.T) {
	const redraft = "Hi Alice,\n\nthe Q3 numbers are final.\n\nOwner"
	model := fakellm.NewOpenAI(t)
	model.Respond(func(r fakellm.Request) fakellm.Turn {
		if isRedraft(r) {
			return fakellm.Turn{Text: "\n" + redraft + "\n"}
		}
		return fakellm.Turn{Text: "A quiet day."} // briefing narratives and the like
	})
	e := newApprovalE2EWith(t, func(cfg *config.Config) {
		cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model = "openai", model.URL, "gpt-test"
	})
	old := e.propose("Hi Alice,\n\nthe Q3 numbers are final: revenue 1.2M, costs 0.8M, margin 33%.\n\nBest,\nOwner")
	m := e.shown(old)
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Redraft"))
	if got := e.answer(q); !strings.Contains(got, "what to change") {
		t.Fatalf("Redraft answered %q", got)
	}
	e.tg.SendText(tgOwner, "shorter, no figures")
	var nw *approval.Proposal
	e.wait("the redraft", func() bool {
		ps, _ := e.app.Gate().List(context.Background(), approval.ListOptions{States: []approval.State{approval.StatePending}})
		if len(ps) == 1 && ps[0].Supersedes == old.ID {
			nw = ps[0]
			return true
		}
		return false
	})
	var asked *fakellm.Request
	for _, r := range model.Requests() {
		if isRedraft(r) {
			asked = &r
		}
	}
	if asked == nil {
		t.Fatal("the model was not asked to redraft")
	}
	user := asked.Messages[len(asked.Messages)-1].Content
	if !strings.Contains(user, "revenue 1.2M") || !strings.Contains(user, "shorter, no figures") || !strings.Contains(user, "alice@example.org") {
		t.Errorf("the model was asked:\n%s", user)
	}
	mn := e.shown(nw)
	if !strings.Contains(mn.Text, "the Q3 numbers are final.") || nw.Origin != "agent" {
		t.Errorf("new draft (origin %s):\n%s", nw.Origin, mn.Text)
	}
	_, q2 := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(q2); !strings.Contains(got, "superseded") {
		t.Errorf("the old Send answered %q", got)
	}
	_, q3 := e.tg.Press(tgOwner, tgOwner.ID, mn.ID, button(mn, "Send"))
	e.answer(q3)
	e.waitGoogle("the send", func() bool { return len(e.google.Sent()) == 1 })
	sent := e.google.Sent()[0]
	if got := bodyOf(t, sent.Raw); got != redraft {
		t.Errorf("sent %q, want the approved redraft %q", got, redraft)
	}
	if sent.Header.Get("In-Reply-To") != "<q3-question@example.org>" || sent.Header.Get("Subject") != "Re: Q3 numbers" {
		t.Errorf("the redraft lost its headers: %v", sent.Header)
	}
	e.outboxPass()
	if n := e.sends(); n != 1 {
		t.Errorf("%d sends", n)
	}
}

// isRedraft tells the drafting prompt's redraft requests from the others.
func isRedraft(r fakellm.Request) bool {
	return strings.HasPrefix(r.System, "You draft") && len(r.Messages) > 0 && strings.HasPrefix(r.Messages[len(r.Messages)-1].Content, "Rewrite this draft")
}

// Without a model, Redraft says so plainly and changes nothing; /settings
// tells the same.
func TestE2ERedraftWithoutModelSaysSo(t *testing.T) {
	e := newApprovalE2E(t)
	p := e.propose("a draft")
	m := e.shown(p)
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Redraft"))
	if got := e.answer(q); !strings.Contains(got, "needs a language model") {
		t.Errorf("Redraft answered %q", got)
	}
	e.wait("the explanation", func() bool { return e.sentTo("none is configured") == 1 })
	e.tg.SendText(tgOwner, "/settings")
	e.wait("the settings", func() bool { return e.sentTo("Redraft: off (no language model configured)") == 1 })
	m2 := e.tg.SentTo(tgOwner.ID)
	settings := m2[len(m2)-1].Text
	for _, want := range []string{"Timezone: " + e.cfg.TimezoneName(), "Proposals expire after 24h0m0s", "Quiet hours: off", fmt.Sprintf("user %d", tgOwner.ID), "/quiet: off"} {
		if !strings.Contains(settings, want) {
			t.Errorf("/settings lacks %q:\n%s", want, settings)
		}
	}
	if st := e.proposal(p.ID).State; st != approval.StatePending {
		t.Errorf("state %s", st)
	}
}

// /briefing answers with the briefing the schedule would send, once: the
// copy the engine queued is not delivered a second time.
func TestE2EBriefingCommandAnswersOnce(t *testing.T) {
	e := newApprovalE2E(t)
	e.tg.SendText(tgOwner, "/briefing evening")
	e.wait("the briefing", func() bool { return e.sentTo("Evening summary") == 1 || e.sentTo("was just sent to you above") == 1 })
	e.dispatcherPass()
	if n := e.sentTo("Evening summary"); n != 1 {
		t.Errorf("the evening briefing reached the owner %d times, want 1", n)
	}
	if e.sentTo("not available") != 0 {
		t.Error("/briefing says briefings are not available")
	}
}

// The owner answers the thread in Gmail themselves: once the collector has
// seen their mail, the proposal is superseded, its message says so without
// buttons, and a late press sends nothing.
func TestE2EOwnerAnsweredInGmailSupersedes(t *testing.T) {
	e := newApprovalE2E(t)
	ctx := context.Background()
	in := e.google.AddMessage([]byte("From: Alice Example <alice@example.org>\r\nTo: owner@example.com\r\nSubject: Lunch\r\n"+
		"Date: "+e.clock.Now().Add(-time.Hour).Format(time.RFC1123Z)+"\r\nMessage-ID: <lunch@example.org>\r\n\r\nLunch on Friday?\r\n"), fakegoogle.MessageOptions{})
	p, err := e.app.Gate().Propose(ctx, approval.Draft{Kind: approval.KindReply, Origin: "agent",
		Payload: approval.EmailPayload{To: []string{"alice@example.org"}, Subject: "Re: Lunch", Body: "Friday works.", InReplyTo: "<lunch@example.org>", ThreadID: in.ThreadID}})
	if err != nil {
		t.Fatal(err)
	}
	m := e.shown(p)
	e.google.AddMessage([]byte("From: Owner <owner@example.com>\r\nTo: alice@example.org\r\nSubject: Re: Lunch\r\n"+
		"Date: "+e.clock.Now().Add(time.Minute).Format(time.RFC1123Z)+"\r\nMessage-ID: <mine@example.com>\r\nIn-Reply-To: <lunch@example.org>\r\n\r\nYes, Friday!\r\n"), fakegoogle.MessageOptions{})
	c := api.NewUnixClient(e.cfg.Path(api.SocketName))
	if _, err := c.Collect(ctx, "gmail"); err != nil {
		t.Fatal(err)
	}
	e.app.Gate().Kick() // the outbox pass reads new mail; it would come on its own within 30s
	e.wait("the proposal superseded", func() bool { return e.proposal(p.ID).State == approval.StateSuperseded })
	if got := e.proposal(p.ID); got.DecidedBy != "gmail" {
		t.Errorf("decided by %q", got.DecidedBy)
	}
	e.wait("the message edited", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "you already answered")
	})
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	if got := e.answer(q); !strings.Contains(got, "superseded") {
		t.Errorf("late press answered %q", got)
	}
	e.outboxPass()
	if n := e.sends(); n != 0 {
		t.Errorf("%d sends after the owner answered in Gmail", n)
	}
}

// Gmail took the mail but its answer was lost, and looking the mail up
// failed too: the proposal stays executing (not failed, not retried), and
// the next outbox pass finds the mail and records it as sent, once.
func TestE2ELostAnswerAndFailedLookupResolvesToOneSend(t *testing.T) {
	e := newApprovalE2E(t)
	p := e.propose("sent once, though nobody could tell at first")
	m := e.shown(p)
	e.google.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", After: true, Status: 500, Times: 1})
	e.google.InjectFault(fakegoogle.Fault{Method: "GET", Path: "/gmail/v1/users/me/messages", Status: 503}) // until cleared
	_, q := e.tg.Press(tgOwner, tgOwner.ID, m.ID, button(m, "Send"))
	e.answer(q)
	e.waitGoogle("the unknown outcome recorded", func() bool {
		audit, _ := e.app.Gate().Audit(context.Background(), p.ID, 0)
		return len(audit) > 0 && audit[len(audit)-1].Action == "outcome-unknown"
	})
	e.outboxPass() // a pass that still cannot look it up leaves it alone
	if st := e.proposal(p.ID).State; st != approval.StateExecuting {
		t.Fatalf("state %s, want executing until the lookup works", st)
	}
	e.google.ClearFaults()
	e.app.Gate().Kick()
	e.waitGoogle("the mail found", func() bool { return e.proposal(p.ID).State == approval.StateExecuted })
	e.wait("the message edited to Sent", func() bool {
		cur, _ := e.tg.Message(tgOwner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Sent")
	})
	if n, reqs := len(e.google.Sent()), e.sends(); n != 1 || reqs != 1 {
		t.Errorf("%d mails, %d send requests; want 1 and 1", n, reqs)
	}
	if e.sentTo("Could not do") != 0 {
		t.Error("the owner was told it failed")
	}
}
