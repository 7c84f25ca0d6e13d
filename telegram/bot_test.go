package telegram_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/approval"
	ghcollect "github.com/omnibrain/omnibrain/collectors/github"
	"github.com/omnibrain/omnibrain/executor"
	"github.com/omnibrain/omnibrain/health"
	fakegh "github.com/omnibrain/omnibrain/internal/fakes/github"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/memory"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
	"github.com/omnibrain/omnibrain/telegram"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "123456:TEST-token-abcdef"

var (
	owner    = faketg.User{ID: 1001, FirstName: "Owner"}
	stranger = faketg.User{ID: 666, FirstName: "Mallory"}
)

// harness runs the bot, the notification dispatcher and the outbox over
// one store, against the fake Telegram and the fake GitHub (the real
// GitHub comment executor posts through go-github).
type harness struct {
	t      testing.TB
	tg     *faketg.Server
	gh     *fakegh.Server
	issue  int
	st     *store.Store
	gate   *approval.Gate
	queue  *notify.Queue
	bot    *telegram.Bot
	health *health.Registry
	clock  *testutil.Clock
	home   string
	memory *memory.Memory

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type setup struct {
	ownerID   int64 // configured owner (0: pairing)
	home      string
	tg        *faketg.Server
	gh        *fakegh.Server
	chat      telegram.Chat
	drafter   telegram.Drafter
	search    telegram.Searcher
	briefer   telegram.Briefer
	noRunning bool // do not start the loops
	memory    bool // serve /memory from a memory over the store
	sendDelay time.Duration
	// gate, if set, wraps the gate the bot is given.
	gate func(telegram.Gate) telegram.Gate
}

func start(t testing.TB, s setup) *harness {
	t.Helper()
	h := &harness{t: t, clock: testutil.NewClock(time.Now().UTC())}
	if s.home == "" {
		s.home = t.TempDir()
	}
	h.home = s.home
	if s.tg == nil {
		s.tg = faketg.New(token)
		t.Cleanup(s.tg.Close)
		s.tg.OpenChat(owner.ID)
	}
	if s.gh == nil {
		s.gh = fakegh.New(fakegh.Options{Login: "owner", Token: "ghtok"})
		t.Cleanup(s.gh.Close)
	}
	h.tg, h.gh = s.tg, s.gh
	h.issue = h.gh.AddIssue(fakegh.Issue{Repo: "acme/api", Title: "Bug", Author: "alice"})
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(s.home, "omnibrain.db"), store.Options{Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h.st = st
	h.health = health.NewRegistry(h.clock.Now)
	h.queue = notify.NewQueue(st, nil)
	client, err := ghcollect.NewClient(h.gh.URL(), "ghtok", h.gh.Client())
	if err != nil {
		t.Fatal(err)
	}
	reg := executor.NewRegistry()
	reg.Register(executor.NewGitHubComment(client, nil))
	h.gate, err = approval.NewGate(approval.GateOptions{Store: st, Executors: reg, Notifier: h.queue, Now: h.clock.Now, OutboxInterval: time.Hour, SendDelay: s.sendDelay})
	if err != nil {
		t.Fatal(err)
	}
	var mem telegram.Memory
	if s.memory {
		h.memory, err = memory.Open(ctx, memory.Options{DB: st.DB(), Home: s.home, Notifier: h.queue, Now: h.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		mem = h.memory
	}
	var gate telegram.Gate = h.gate
	if s.gate != nil {
		gate = s.gate(gate)
	}
	h.bot, err = telegram.New(ctx, telegram.Options{
		Token: token, APIURL: h.tg.URL(), OwnerID: s.ownerID, DB: st.DB(), Gate: gate, Queue: h.queue, Memory: mem,
		Chat: s.chat, Drafter: s.drafter, Search: s.search, Briefer: s.briefer, Health: h.health, Now: h.clock.Now, Location: time.UTC,
		Settings: "timezone UTC", PollTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	disp, err := notify.NewDispatcher(notify.DispatcherOptions{Queue: h.queue, Store: st, Sender: h.bot, Now: h.clock.Now,
		Health: h.health, HealthName: telegram.HealthName, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	if !s.noRunning {
		for _, run := range []func(context.Context) error{h.bot.Run, disp.Run, h.gate.RunOutbox} {
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				if err := run(runCtx); err != nil {
					t.Errorf("component stopped: %v", err)
				}
			}()
		}
	}
	t.Cleanup(h.stop)
	return h
}

// stop stops every loop and closes the store (idempotent).
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.wg.Wait()
	h.st.Close()
	h.cancel = nil
}

func (h *harness) wait(what string, cond func() bool) {
	h.t.Helper()
	if !h.tg.WaitUntil(10*time.Second, cond) {
		h.t.Fatalf("timed out waiting for %s", what)
	}
}

// stored waits for a state in the store, which the fake Telegram's
// changes (what h.wait watches) need not follow.
func (h *harness) stored(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// handled waits until the bot has handled the update with that id: it
// records the last one handled in the store, after handling it.
func (h *harness) handled(id int64) {
	h.t.Helper()
	h.stored(fmt.Sprintf("update %d handled", id), func() bool {
		last, _, err := telegram.StateOf(h.st.DB(), h.clock.Now).LastUpdate(context.Background())
		return err == nil && last >= id
	})
}

// outboxPass returns once the outbox has made a whole pass begun after
// the call: whatever it would execute has been executed by then.
func (h *harness) outboxPass() {
	h.t.Helper()
	testutil.WaitPass(h.t, "outbox", h.gate.WaitPass)
}

// dispatcherPass returns once the notification dispatcher has made a
// whole pass begun after the call.
func (h *harness) dispatcherPass() {
	h.t.Helper()
	testutil.WaitPass(h.t, "notification dispatcher", h.queue.WaitPass)
}

func (h *harness) propose(body string) *approval.Proposal {
	h.t.Helper()
	p, err := h.gate.Propose(context.Background(), approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Reason: "alice asked",
		Payload: approval.GitHubCommentPayload{Owner: "acme", Repo: "api", Number: h.issue, Body: body}})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) proposeEmail(body string) *approval.Proposal {
	h.t.Helper()
	p, err := h.gate.Propose(context.Background(), approval.Draft{Kind: approval.KindReply, Origin: "proactive",
		Payload: approval.EmailPayload{To: []string{"alice@example.com"}, Cc: []string{"Bob <bob@example.com>"}, Subject: "Re: Q3 <budget> & plans", Body: body, InReplyTo: "<a1@example.com>", ThreadID: "t1"}})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// shown waits for the message showing p with its buttons and returns it.
func (h *harness) shown(p *approval.Proposal) faketg.Message {
	h.t.Helper()
	var msg faketg.Message
	h.wait("the proposal message", func() bool {
		for _, m := range h.tg.SentTo(owner.ID) {
			if m.Keyboard != nil && strings.Contains(m.Keyboard[0][0].CallbackData, p.ID) {
				msg = m
				return true
			}
		}
		return false
	})
	return msg
}

func data(m faketg.Message, label string) string {
	for _, row := range m.Keyboard {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				return b.CallbackData
			}
		}
	}
	return ""
}

func (h *harness) state(id string) approval.State {
	p, err := h.gate.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return p.State
}

func (h *harness) answered(qid string) string {
	h.t.Helper()
	var text string
	h.wait("the answer to "+qid, func() bool {
		for _, a := range h.tg.Answers() {
			if a.CallbackQueryID == qid {
				text = a.Text
				return true
			}
		}
		return false
	})
	return text
}

func TestProposalShownWholeWithButtons(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	body := "Hi Alice,\n\nthe numbers are <attached> & final.\n\nBest"
	p := h.proposeEmail(body)
	m := h.shown(p)
	for _, want := range []string{"<b>To:</b> alice@example.com", "<b>Cc:</b> Bob &lt;bob@example.com&gt;", "<b>Subject:</b> Re: Q3 &lt;budget&gt; &amp; plans",
		"the numbers are &lt;attached&gt; &amp; final.", p.ID, p.PayloadHash[:12], "<i>Why:</i>"} {
		if want == "<i>Why:</i>" {
			continue // no reason given
		}
		if !strings.Contains(m.Text, want) {
			t.Errorf("message lacks %q:\n%s", want, m.Text)
		}
	}
	if m.ParseMode != "HTML" || m.ChatID != owner.ID {
		t.Errorf("parse mode %q chat %d", m.ParseMode, m.ChatID)
	}
	var labels []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			labels = append(labels, b.Text)
			cb, err := telegram.ParseCallback(b.CallbackData)
			if err != nil || cb.ProposalID != p.ID || !strings.HasPrefix(p.PayloadHash, cb.HashPrefix) {
				t.Errorf("button %q data %q: %v", b.Text, b.CallbackData, err)
			}
		}
	}
	if got := strings.Join(labels, " · "); got != "✅ Send · ✏️ Edit · 💬 Redraft · ❌ Reject · ⏰ Snooze" {
		t.Errorf("buttons %s", got)
	}
	// The commands were registered (getMe and setMyCommands run beside
	// the delivery of the queue, so wait for them).
	h.wait("the commands registered", func() bool { return len(h.tg.Commands()) > 0 })
	var cmds []string
	for _, c := range h.tg.Commands() {
		cmds = append(cmds, c["command"])
	}
	if got := strings.Join(cmds, " "); got != "start help briefing proposals search memory status settings quiet" {
		t.Errorf("commands %s", got)
	}
}

func TestOwnerPressSendExecutesOnceAndEditsMessage(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	p := h.propose("Fixed in #12, thanks!")
	m := h.shown(p)
	_, qid := h.tg.Press(owner, owner.ID, m.ID, data(m, "Send"))
	if got := h.answered(qid); !strings.Contains(got, "Approved") {
		t.Errorf("answer %q", got)
	}
	h.wait("the comment", func() bool { return len(h.gh.Created()) == 1 })
	if c := h.gh.Created()[0]; !strings.HasPrefix(c.Body, "Fixed in #12, thanks!") {
		t.Errorf("posted %q", c.Body)
	}
	h.wait("the message edited to Done without buttons", func() bool {
		cur, _ := h.tg.Message(owner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Done")
	})
	// A second press: answered with the state, nothing else happens.
	_, qid2 := h.tg.Press(owner, owner.ID, m.ID, data(m, "Send"))
	if got := h.answered(qid2); !strings.Contains(got, "already executed") {
		t.Errorf("second press answered %q", got)
	}
	h.outboxPass()
	if n := len(h.gh.Created()); n != 1 {
		t.Errorf("%d comments after a double press", n)
	}
	p2, _ := h.gate.Get(context.Background(), p.ID)
	if p2.State != approval.StateExecuted || p2.DecidedBy != fmt.Sprintf("telegram:%d", owner.ID) {
		t.Errorf("proposal %+v", p2)
	}
}

func TestStrangerGetsNothing(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	p := h.propose("hello")
	m := h.shown(p)
	before := len(h.tg.Sent())
	// A stranger presses the owner's button (forged callback on the owner's message).
	_, q1 := h.tg.Press(stranger, owner.ID, m.ID, data(m, "Send"))
	// And in their own chat.
	h.tg.Press(stranger, stranger.ID, m.ID, data(m, "Send"))
	h.tg.SendText(stranger, "/proposals")
	h.tg.SendText(stranger, "what is in the owner's mail?")
	h.tg.SendText(stranger, "/start abcdefghij")
	// The owner, writing from a group, is not in their private chat either.
	last := h.tg.SendGroupText(owner, -5000, "/status")
	if got := h.answered(q1); got != "Not available." {
		t.Errorf("stranger answered %q", got)
	}
	h.handled(last)
	h.outboxPass()
	h.dispatcherPass()
	if n := len(h.tg.Unanswered()); n != 0 {
		t.Errorf("%d callback queries unanswered", n)
	}
	if got := h.state(p.ID); got != approval.StatePending {
		t.Errorf("state after stranger's press: %s", got)
	}
	for _, s := range h.tg.Sent()[before:] {
		t.Errorf("something was sent after strangers wrote: chat %d %q", s.ChatID, s.Text)
	}
	for _, s := range h.tg.Sent() {
		if s.ChatID != owner.ID {
			t.Errorf("message to chat %d", s.ChatID)
		}
	}
	if c, _ := h.health.Get(telegram.HealthName); c.Counters["strangers_ignored"] < 5 {
		t.Errorf("strangers counted %d", c.Counters["strangers_ignored"])
	}
	if len(h.gh.Created()) != 0 {
		t.Error("a stranger caused a comment")
	}
}

func TestPressAfterExpiryChangesNothing(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	p := h.propose("hello")
	m := h.shown(p)
	h.clock.Add(25 * time.Hour)
	_, qid := h.tg.Press(owner, owner.ID, m.ID, data(m, "Send"))
	if got := h.answered(qid); !strings.Contains(got, "already expired") {
		t.Errorf("answer %q", got)
	}
	h.wait("the message edited to Expired", func() bool {
		cur, _ := h.tg.Message(owner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Expired")
	})
	if len(h.gh.Created()) != 0 {
		t.Error("an expired proposal was executed")
	}
}

func TestRejectAndSnooze(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	a, b := h.propose("one"), h.propose("two")
	ma, mb := h.shown(a), h.shown(b)
	_, q1 := h.tg.Press(owner, owner.ID, ma.ID, data(ma, "Reject"))
	_, q2 := h.tg.Press(owner, owner.ID, mb.ID, data(mb, "Snooze"))
	if got := h.answered(q1); !strings.Contains(got, "Rejected") {
		t.Errorf("reject answered %q", got)
	}
	if got := h.answered(q2); !strings.Contains(got, "Snoozed") {
		t.Errorf("snooze answered %q", got)
	}
	if h.state(a.ID) != approval.StateRejected || h.state(b.ID) != approval.StateSnoozed {
		t.Fatalf("states %s %s", h.state(a.ID), h.state(b.ID))
	}
	h.wait("both messages edited", func() bool {
		ca, _ := h.tg.Message(owner.ID, ma.ID)
		cb, _ := h.tg.Message(owner.ID, mb.ID)
		return ca.Keyboard == nil && strings.Contains(ca.Text, "Rejected") && cb.Keyboard == nil && strings.Contains(cb.Text, "Snoozed")
	})
	// After the snooze it comes back with its buttons, as a new message.
	h.clock.Add(2*time.Hour + time.Second)
	h.gate.Kick()
	h.wait("the proposal shown again", func() bool {
		n := 0
		for _, m := range h.tg.SentTo(owner.ID) {
			if m.Keyboard != nil && strings.Contains(m.Keyboard[0][0].CallbackData, b.ID) {
				n++
			}
		}
		return n == 1 && h.state(b.ID) == approval.StatePending
	})
}

func TestEditMakesANewProposalAndTheOldOneCanNeverBeSent(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	old := h.propose("first draft")
	m := h.shown(old)
	_, qid := h.tg.Press(owner, owner.ID, m.ID, data(m, "Edit"))
	if got := h.answered(qid); !strings.Contains(got, "new text") {
		t.Errorf("edit answered %q", got)
	}
	h.wait("the prompt", func() bool {
		for _, s := range h.tg.SentTo(owner.ID) {
			if strings.Contains(s.Text, "Send me the new text") {
				return true
			}
		}
		return false
	})
	h.tg.SendText(owner, "second draft, better")
	var nw *approval.Proposal
	h.wait("the new draft", func() bool {
		ps, _ := h.gate.List(context.Background(), approval.ListOptions{States: []approval.State{approval.StatePending}})
		if len(ps) == 1 && ps[0].ID != old.ID {
			nw = ps[0]
			return true
		}
		return false
	})
	if nw.Supersedes != old.ID || h.state(old.ID) != approval.StateSuperseded {
		t.Fatalf("new %+v old %s", nw, h.state(old.ID))
	}
	mn := h.shown(nw)
	if !strings.Contains(mn.Text, "second draft, better") {
		t.Errorf("new message %q", mn.Text)
	}
	// Pressing Send on the old message sends nothing.
	_, q2 := h.tg.Press(owner, owner.ID, m.ID, data(m, "Send"))
	if got := h.answered(q2); !strings.Contains(got, "already superseded") {
		t.Errorf("old send answered %q", got)
	}
	h.outboxPass()
	if len(h.gh.Created()) != 0 {
		t.Fatal("the old draft was sent")
	}
	// The new one needs its own press.
	_, q3 := h.tg.Press(owner, owner.ID, mn.ID, data(mn, "Send"))
	h.answered(q3)
	h.wait("the new comment", func() bool { return len(h.gh.Created()) == 1 })
	if c := h.gh.Created()[0]; !strings.HasPrefix(c.Body, "second draft, better") {
		t.Errorf("sent %q", c.Body)
	}
}

func TestRedraftWithoutDrafterSaysSo(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	p := h.propose("draft")
	m := h.shown(p)
	_, qid := h.tg.Press(owner, owner.ID, m.ID, data(m, "Redraft"))
	if got := h.answered(qid); !strings.Contains(got, "language model") {
		t.Errorf("answer %q", got)
	}
	if h.state(p.ID) != approval.StatePending {
		t.Error("state changed")
	}
}

type drafter struct{}

func (drafter) Redraft(_ context.Context, p *approval.Proposal, instructions string) (any, error) {
	var pl approval.GitHubCommentPayload
	json.Unmarshal(p.Payload, &pl)
	pl.Body = strings.ToUpper(pl.Body) + " (" + instructions + ")"
	return pl, nil
}

func TestRedraftGoesToTheDrafter(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, drafter: drafter{}})
	p := h.propose("draft")
	m := h.shown(p)
	_, qid := h.tg.Press(owner, owner.ID, m.ID, data(m, "Redraft"))
	h.answered(qid)
	h.tg.SendText(owner, "shout")
	var nw *approval.Proposal
	h.wait("the redraft", func() bool {
		ps, _ := h.gate.List(context.Background(), approval.ListOptions{States: []approval.State{approval.StatePending}})
		if len(ps) == 1 && ps[0].ID != p.ID {
			nw = ps[0]
			return true
		}
		return false
	})
	if !strings.Contains(string(nw.Payload), "DRAFT (shout)") || nw.Origin != "agent" || h.state(p.ID) != approval.StateSuperseded {
		t.Errorf("redraft %s origin %s", nw.Payload, nw.Origin)
	}
	h.shown(nw)
}

func TestDuplicateUpdateProcessedOnce(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	p := h.propose("hello")
	m := h.shown(p)
	upd, qid := h.tg.Press(owner, owner.ID, m.ID, data(m, "Reject"))
	h.answered(qid)
	answers := len(h.tg.Answers())
	if !h.tg.Redeliver(upd) {
		t.Fatal("could not redeliver")
	}
	h.tg.SendText(owner, "/help") // a later update shows the duplicate was passed over
	h.wait("help", func() bool {
		for _, s := range h.tg.SentTo(owner.ID) {
			if strings.Contains(s.Text, "/proposals") {
				return true
			}
		}
		return false
	})
	if n := len(h.tg.Answers()); n != answers {
		t.Errorf("the duplicate press was handled again (%d answers, want %d)", n, answers)
	}
	audit, _ := h.gate.Audit(context.Background(), p.ID, 0)
	rejects := 0
	for _, a := range audit {
		if a.Action == "rejected" || a.Action == "refused" {
			rejects++
		}
	}
	if rejects != 1 {
		t.Errorf("audit %+v", audit)
	}
}

// The last processed update id survives a restart: Telegram resending
// updates the bot had handled changes nothing.
func TestLastUpdatePersistsAcrossRestart(t *testing.T) {
	tg := faketg.New(token)
	defer tg.Close()
	tg.OpenChat(owner.ID)
	home := t.TempDir()
	h := start(t, setup{ownerID: owner.ID, home: home, tg: tg})
	p := h.propose("hello")
	m := h.shown(p)
	upd, qid := tg.Press(owner, owner.ID, m.ID, data(m, "Snooze"))
	h.answered(qid)
	h.wait("the update recorded", func() bool {
		id, _, _ := telegram.StateOf(h.st.DB(), h.clock.Now).LastUpdate(context.Background())
		return id == upd
	})
	h.stop()

	answers := len(tg.Answers())
	tg.Redeliver(upd)
	h2 := start(t, setup{ownerID: owner.ID, home: home, tg: tg, gh: h.gh})
	h2.tg.SendText(owner, "/status")
	h2.wait("status", func() bool {
		for _, s := range tg.SentTo(owner.ID) {
			if strings.Contains(s.Text, "Waiting for you") {
				return true
			}
		}
		return false
	})
	if n := len(tg.Answers()); n != answers {
		t.Errorf("a handled update was handled again after a restart")
	}
}

// After a week without updates Telegram picks the next update id at
// random, possibly below the last one the bot handled: such updates are
// new, not duplicates, and the ones after them are handled too, also
// after a restart; a real duplicate of them is still ignored.
func TestUpdateIDsReseededAfterAQuietWeek(t *testing.T) {
	tg := faketg.New(token)
	defer tg.Close()
	tg.OpenChat(owner.ID)
	home := t.TempDir()
	h := start(t, setup{ownerID: owner.ID, home: home, tg: tg})
	statusReplies := func() int {
		n := 0
		for _, s := range tg.SentTo(owner.ID) {
			if strings.Contains(s.Text, "Waiting for you") {
				n++
			}
		}
		return n
	}
	tg.SendText(owner, "/status")
	h.wait("the first status", func() bool { return statusReplies() == 1 })

	h.clock.Add(8 * 24 * time.Hour)
	tg.ReseedUpdateIDs(7)
	if id := tg.SendText(owner, "/status"); id != 7 {
		t.Fatalf("update id %d, want the reseeded 7", id)
	}
	h.wait("the status after a quiet week", func() bool { return statusReplies() == 2 })
	tg.SendText(owner, "/status")
	h.wait("the next status", func() bool { return statusReplies() == 3 })
	h.wait("the lower id recorded", func() bool {
		id, _, _ := telegram.StateOf(h.st.DB(), h.clock.Now).LastUpdate(context.Background())
		return id == 8
	})
	h.stop()

	tg.Redeliver(8)
	h2 := start(t, setup{ownerID: owner.ID, home: home, tg: tg, gh: h.gh})
	last := tg.SendText(owner, "/status")
	h2.wait("the status after a restart", func() bool { return statusReplies() == 4 })
	h2.handled(last) // updates are handled in order: the redelivered one first
	if n := statusReplies(); n != 4 {
		t.Errorf("%d status replies, want 4: the redelivered update was handled again", n)
	}
}

func TestPairing(t *testing.T) {
	h := start(t, setup{})
	ctx := context.Background()
	p := h.propose("waiting for an owner")
	code, _, err := telegram.NewPairingCode(ctx, h.st.DB(), h.clock.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.wait("unpaired health", func() bool {
		c, _ := h.health.Get(telegram.HealthName)
		return c.State == health.Degraded && strings.Contains(c.Detail, "pair")
	})
	h.tg.SendText(stranger, "/start wrongcode22")
	h.tg.SendText(owner, "/start "+code)
	h.wait("paired", func() bool { return h.bot.Owner() == owner.ID })
	// The proposal waiting for an owner is delivered now, to the owner only.
	h.shown(p)
	for _, s := range h.tg.Sent() {
		if s.ChatID != owner.ID {
			t.Errorf("sent to %d: %q", s.ChatID, s.Text)
		}
	}
	// The code works once.
	h.handled(h.tg.SendText(stranger, "/start "+code))
	if h.bot.Owner() != owner.ID {
		t.Fatal("a used code paired someone else")
	}
	if id, _ := telegram.StateOf(h.st.DB(), h.clock.Now).Owner(ctx); id != owner.ID {
		t.Errorf("stored owner %d", id)
	}
	// An expired code pairs nobody.
	code2, _, _ := telegram.NewPairingCode(ctx, h.st.DB(), h.clock.Now(), time.Minute)
	h.clock.Add(2 * time.Minute)
	if ok, _ := telegram.StateOf(h.st.DB(), h.clock.Now).UsePairingCode(ctx, code2, stranger.ID); ok {
		t.Error("expired code accepted")
	}
}

func TestFreeTextFallsBackToSearch(t *testing.T) {
	s := &searcher{}
	h := start(t, setup{ownerID: owner.ID, search: s})
	h.tg.SendText(owner, "budget meeting")
	h.wait("search answer", func() bool {
		for _, m := range h.tg.SentTo(owner.ID) {
			if strings.Contains(m.Text, "Q3 budget &lt;final&gt;") {
				if !strings.Contains(m.Text, "the <b>budget</b> is") || strings.Contains(m.Text, "«") {
					t.Errorf("the query's match is not in bold:\n%s", m.Text)
				}
				if !strings.Contains(m.Text, "from Ann Lee &lt;ann@example.com&gt;") {
					t.Errorf("the sender is not shown:\n%s", m.Text)
				}
				return true
			}
		}
		return false
	})
	if s.query() != "budget meeting" {
		t.Errorf("searched %q", s.query())
	}
}

func TestFreeTextGoesToChat(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, chat: telegram.ChatFunc(func(_ context.Context, session, text string) (string, error) {
		return "you said <" + text + "> in " + session, nil
	})})
	h.tg.SendText(owner, "hello")
	h.wait("chat answer", func() bool {
		for _, m := range h.tg.SentTo(owner.ID) {
			if m.Text == "you said &lt;hello&gt; in telegram:1001" {
				return true
			}
		}
		return false
	})
}

type searcher struct {
	mu sync.Mutex
	q  string
}

func (s *searcher) Search(_ context.Context, q search.Query) ([]search.Hit, error) {
	s.mu.Lock()
	s.q = q.Text
	s.mu.Unlock()
	return []search.Hit{{Item: &store.Item{Title: "Q3 budget <final>", Source: "gmail", Time: time.Now(),
		Sender: "ann@example.com", People: []string{"Ann Lee", "ann@example.com"}}, Snippet: "the «budget» is"}}, nil
}

func (s *searcher) query() string { s.mu.Lock(); defer s.mu.Unlock(); return s.q }

func TestLongMessagesAreSplit(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	body := strings.Repeat("All work and no play makes Jack a dull boy & <Jill> too.\n", 200) // ~11,600 characters
	p := h.propose(body)
	m := h.shown(p)
	var parts []faketg.Message
	for _, s := range h.tg.SentTo(owner.ID) {
		if strings.Contains(s.Text, "dull boy") {
			parts = append(parts, s)
		}
	}
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	if parts[len(parts)-1].ID != m.ID {
		t.Error("the buttons are not on the last part")
	}
	// Every part was accepted by the fake's 4,096-character and HTML checks;
	// together they hold the whole body.
	n := 0
	for _, s := range parts {
		n += strings.Count(s.Text, "makes Jack a dull boy &amp; &lt;Jill&gt; too.")
	}
	if n != 200 {
		t.Errorf("%d of 200 lines arrived", n)
	}
}

func TestRateLimitIsWaitedOut(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	h.tg.WaitUntil(5*time.Second, func() bool { return len(h.tg.Commands()) > 0 })
	h.tg.Fail("sendMessage", faketg.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1}, 1)
	start := time.Now()
	h.queue.Notify(context.Background(), notify.Message{Level: notify.Important, Text: "after the limit"})
	h.wait("delivery", func() bool {
		for _, m := range h.tg.SentTo(owner.ID) {
			if m.Text == "after the limit" {
				return true
			}
		}
		return false
	})
	if time.Since(start) < time.Second {
		t.Error("retry_after was not honoured")
	}
	if n := h.tg.CallCount("sendMessage"); n != 2 {
		t.Errorf("%d sendMessage calls, want 2 (429, then success)", n)
	}
}

func TestNotificationsWaitWhileTelegramIsDownAndArriveOnce(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	h.tg.WaitUntil(5*time.Second, func() bool { return len(h.tg.Commands()) > 0 })
	h.tg.SetDown(true)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		h.queue.Notify(ctx, notify.Message{Level: notify.Important, Key: fmt.Sprint("n", i), Text: fmt.Sprint("note ", i)})
	}
	h.wait("degraded health", func() bool {
		c, _ := h.health.Get(telegram.HealthName)
		return c.State == health.Degraded
	})
	// The failed attempts are recorded with their reason, never with the
	// token that is in every Bot API URL (go-telegram/bot masks it in
	// transport errors; this guards that).
	h.wait("a failed attempt recorded", func() bool {
		ns, _ := h.st.Notifications(ctx, store.NotificationQueued, 50)
		for _, n := range ns {
			if n.LastError != "" {
				return true
			}
		}
		return false
	})
	ns, _ := h.st.Notifications(ctx, "", 50)
	for _, n := range ns {
		if strings.Contains(n.LastError, token) || strings.Contains(n.LastError, "TEST-token") {
			t.Fatalf("the bot token is in a notification's error: %q", n.LastError)
		}
	}
	h.tg.SetDown(false)
	h.wait("all delivered", func() bool { return len(h.tg.SentTo(owner.ID)) >= 20 })
	h.stored("all recorded as delivered", func() bool {
		ns, _ := h.st.Notifications(ctx, store.NotificationDelivered, 50)
		return len(ns) >= 20
	})
	h.dispatcherPass()
	var got []string
	for _, m := range h.tg.SentTo(owner.ID) {
		got = append(got, m.Text)
	}
	if len(got) != 20 {
		t.Fatalf("%d messages: %q", len(got), got)
	}
	for i, g := range got {
		if g != fmt.Sprint("note ", i) {
			t.Errorf("message %d is %q", i, g)
		}
	}
	h.wait("healthy again", func() bool {
		c, _ := h.health.Get(telegram.HealthName)
		return c.State == health.OK
	})
}

func TestCommands(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, search: &searcher{}})
	h.propose("waiting")
	ctx := context.Background()
	cases := []struct{ send, want string }{
		{"/help", "/quiet"},
		{"/status", "Waiting for you: 1 proposal(s)"},
		{"/settings", "timezone UTC"},
		{"/search budget", "Q3 budget"},
		{"/briefing", "not available"},
		{"/quiet 2h", "Quiet until"},
		{"/nonsense", "I do not know /nonsense"},
	}
	for _, c := range cases {
		before := len(h.tg.SentTo(owner.ID))
		h.tg.SendText(owner, c.send)
		h.wait(c.send, func() bool {
			for _, m := range h.tg.SentTo(owner.ID)[before:] {
				if strings.Contains(m.Text, c.want) {
					return true
				}
			}
			return false
		})
	}
	if until, _ := h.queue.QuietUntil(ctx); until.Sub(h.clock.Now().Add(2*time.Hour)).Abs() > time.Second {
		t.Errorf("quiet until %v", until)
	}
	// /proposals shows the waiting one whole, with buttons.
	h.tg.SendText(owner, "/proposals")
	h.wait("proposal list", func() bool {
		n := 0
		for _, m := range h.tg.SentTo(owner.ID) {
			if m.Keyboard != nil {
				n++
			}
		}
		return n == 2
	})
}

func TestLevelsReachTheBot(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	ctx := context.Background()
	h.queue.Notify(ctx, notify.Message{Level: notify.FYI, Text: "by the way"})
	h.queue.Notify(ctx, notify.Message{Level: notify.Critical, Text: "the build is on fire"})
	h.queue.Notify(ctx, notify.Message{Level: notify.Silent, Text: "only recorded"})
	h.wait("two messages", func() bool { return h.tg.CountSent(owner.ID) == 2 })
	quiet := map[string]string{}
	for _, c := range h.tg.Calls() {
		if c.Method == "sendMessage" {
			quiet[c.Params["text"]] = c.Params["disable_notification"]
		}
	}
	if quiet["by the way"] != "true" || quiet["🚨 the build is on fire"] != "" {
		t.Errorf("disable_notification per text: %v", quiet)
	}
	h.wait("the silent one held", func() bool {
		held, _ := h.queue.Held(ctx, 10)
		return len(held) == 1 && held[0].Text == "only recorded"
	})
	if n := h.tg.CountSent(owner.ID); n != 2 {
		t.Errorf("%d messages sent, want 2 (silent is never pushed)", n)
	}
}

// sentCount counts the owner's messages containing text.
func (h *harness) sentCount(text string) int {
	n := 0
	for _, m := range h.tg.SentTo(owner.ID) {
		if strings.Contains(m.Text, text) {
			n++
		}
	}
	return n
}

// /quiet really holds notifications: an important one waits while a
// critical one still comes, /settings says so, and /quiet off lets the
// held one through, once.
func TestQuietHoldsNotificationsUntilOff(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	ctx := context.Background()
	h.tg.SendText(owner, "/quiet 2h")
	h.wait("quiet confirmed", func() bool { return h.sentCount("Quiet until") == 1 })
	h.queue.Notify(ctx, notify.Message{Level: notify.Important, Key: "imp", Text: "the invoice is due"})
	h.queue.Notify(ctx, notify.Message{Level: notify.Critical, Key: "crit", Text: "the server is down"})
	// The dispatcher takes them in order: once the critical one is there,
	// the important one has been decided.
	h.wait("the critical one", func() bool { return h.sentCount("the server is down") == 1 })
	if h.sentCount("the invoice is due") != 0 {
		t.Fatal("an important notification came during quiet time")
	}
	h.tg.SendText(owner, "/settings")
	h.wait("settings with quiet on", func() bool { return h.sentCount("/quiet: on until") == 1 })
	if h.sentCount("the invoice is due") != 0 {
		t.Fatal("an important notification came during quiet time")
	}
	h.tg.SendText(owner, "/quiet off")
	h.wait("the held one delivered", func() bool { return h.sentCount("the invoice is due") == 1 })
	h.tg.SendText(owner, "/settings")
	h.wait("settings with quiet off", func() bool { return h.sentCount("/quiet: off") == 1 })
	if n := h.sentCount("the invoice is due"); n != 1 {
		t.Errorf("the held notification arrived %d times", n)
	}
	// The dispatcher records the delivery after Telegram answered: wait
	// for that, not for the message alone.
	h.stored("the held notification recorded as delivered", func() bool {
		n, _ := h.st.NotificationByKey(ctx, "imp")
		return n != nil && n.State == store.NotificationDelivered
	})
}

func TestRedraftAndEditNeedText(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, drafter: drafter{}})
	p, err := h.gate.Propose(context.Background(), approval.Draft{Kind: approval.KindCalendarDelete, Origin: "agent",
		Payload: approval.CalendarPayload{EventID: "ev123456", Summary: "Standup"}})
	if err != nil {
		t.Fatal(err)
	}
	m := h.shown(p)
	for _, label := range []string{"Redraft", "Edit"} {
		_, q := h.tg.Press(owner, owner.ID, m.ID, data(m, label))
		if got := h.answered(q); !strings.Contains(got, "no text to change") {
			t.Errorf("%s answered %q", label, got)
		}
	}
	// Nothing waits for text: the next message goes to the chat, and the
	// proposal is still the one shown.
	if aw, _ := telegram.StateOf(h.st.DB(), h.clock.Now).Awaiting(context.Background()); aw != "" {
		t.Errorf("awaiting %q", aw)
	}
	if h.state(p.ID) != approval.StatePending {
		t.Errorf("state %s", h.state(p.ID))
	}
}

// A press of Edit on a proposal decided elsewhere answers with its state
// and takes the buttons away.
func TestStaleEditPressShowsOutcome(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	p := h.propose("draft")
	m := h.shown(p)
	if _, err := h.gate.Reject(context.Background(), p.ID, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	_, q := h.tg.Press(owner, owner.ID, m.ID, data(m, "Edit"))
	if got := h.answered(q); !strings.Contains(got, "already rejected") {
		t.Errorf("answered %q", got)
	}
	h.wait("the message edited to Rejected", func() bool {
		cur, _ := h.tg.Message(owner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Rejected")
	})
	if aw, _ := telegram.StateOf(h.st.DB(), h.clock.Now).Awaiting(context.Background()); aw != "" {
		t.Errorf("awaiting %q after a stale press", aw)
	}
}

// The owner decides elsewhere while the proposal's message is on its way
// to Telegram: the edit to the outcome cannot find a message not yet
// recorded, so recording it brings the edit back; no buttons stay.
func TestDecidedWhileItsMessageIsSent(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	ctx := context.Background()
	h.tg.BeforeAnswer("sendMessage", func() {
		ps, err := h.gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StatePending}})
		if err != nil || len(ps) != 1 {
			t.Errorf("pending while sending: %d, %v", len(ps), err)
			return
		}
		if _, err := h.gate.Reject(ctx, ps[0].ID, approval.APIOwner()); err != nil {
			t.Error(err)
		}
		// The refresher runs now, with no message recorded yet.
		testutil.WaitPass(t, "refresher", h.bot.WaitRefresh)
	})
	p := h.propose("decided on the way")
	m := h.shown(p)
	h.wait("the message edited to Rejected", func() bool {
		cur, _ := h.tg.Message(owner.ID, m.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Rejected")
	})
}

type briefer struct{ text string }

func (b briefer) Briefing(_ context.Context, kind string) (string, error) {
	if kind != "evening" {
		return "", fmt.Errorf("unknown briefing %q", kind)
	}
	return b.text, nil
}

func TestBriefingCommand(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, briefer: briefer{text: "Evening <summary> & more"}})
	h.tg.SendText(owner, "/briefing evening")
	h.wait("the briefing", func() bool { return h.sentCount("Evening &lt;summary&gt; &amp; more") == 1 })
	h.tg.SendText(owner, "/briefing hourly")
	h.wait("the refusal", func() bool { return h.sentCount(`Could not write the briefing: unknown briefing "hourly"`) == 1 })
}

// A calendar change is shown with everything attendees will get: the
// time in the event's zone, the place, every attendee and who is told.
func TestCalendarProposalShownWhole(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID})
	start := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	p, err := h.gate.Propose(context.Background(), approval.Draft{Kind: approval.KindCalendarCreate, Origin: "agent", Reason: "Alice asked to meet",
		Payload: approval.CalendarPayload{Summary: "Q3 <review>", Location: "Room 2 & 3", Start: start, End: start.Add(90 * time.Minute),
			TimeZone: "Europe/Berlin", Attendees: []string{"Alice <alice@example.com>", "bob@example.com"}, Description: "Agenda: numbers"}})
	if err != nil {
		t.Fatal(err)
	}
	m := h.shown(p)
	for _, want := range []string{"📅 New event", "<b>Event:</b> Q3 &lt;review&gt;", "<b>When:</b> Tue 10 Mar 2026 15:00–16:30 CET",
		"<b>Where:</b> Room 2 &amp; 3", "<b>Attendees:</b> Alice &lt;alice@example.com&gt;, bob@example.com",
		"<b>Invitations sent to:</b> all attendees", "Agenda: numbers", "<i>Why:</i> Alice asked to meet"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("message lacks %q:\n%s", want, m.Text)
		}
	}
}
