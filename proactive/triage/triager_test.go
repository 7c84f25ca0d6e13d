package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var houston = func() *time.Location {
	loc, err := time.LoadLocation("America/Chicago")
	if err != nil {
		panic(err)
	}
	return loc
}()

// env is a store with a gate and a notification queue: the real pieces
// triage hands its decisions to.
type env struct {
	st    *store.Store
	gate  *approval.Gate
	queue *notify.Queue
	now   time.Time
	mu    sync.Mutex
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{now: time.Date(2001, 10, 25, 10, 0, 0, 0, houston)}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{Now: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	e.queue = notify.NewQueue(st, nil)
	e.gate, err = approval.NewGate(approval.GateOptions{Store: st, Notifier: e.queue, Now: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddOwnerAddresses(context.Background(), "config", "owner@example.com"); err != nil {
		t.Fatal(err)
	}
	return e
}

// deliver stores a raw mail the way a collector does: parsed, counted
// into contacts and threads, recorded in the event log.
func (e *env) deliver(t testing.TB, raw string) *store.Item {
	t.Helper()
	msg, err := mailparse.Parse([]byte(strings.ReplaceAll(raw, "\n", "\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	it, mail := msg.Item(mailparse.ItemOptions{Source: "gmail", ExternalID: "g-" + msg.MessageID, Thread: "t-" + msg.ThreadKey()})
	err = e.st.Tx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.UpsertMail(it, mail, store.UpsertOptions{Event: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func rawMail(id, from, to, subject, date, body string, headers ...string) string {
	h := fmt.Sprintf("Message-ID: <%s>\nFrom: %s\nTo: %s\nSubject: %s\nDate: %s\n", id, from, to, subject, date)
	for _, x := range headers {
		h += x + "\n"
	}
	return h + "\n" + body + "\n"
}

func (e *env) notifications(t testing.TB) map[string]*store.Notification {
	t.Helper()
	ns, err := e.st.Notifications(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*store.Notification{}
	for _, n := range ns {
		out[n.Key] = n
	}
	return out
}

func TestTriagePipeline(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// The owner wrote to Alice before: she is a correspondent.
	e.deliver(t, rawMail("o1@example.com", "Owner <owner@example.com>", "Alice Smith <alice@example.com>", "Lunch", "Mon, 22 Oct 2001 09:00:00 -0500", "Lunch this week?"))
	boss := e.deliver(t, rawMail("b1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget numbers",
		"Thu, 25 Oct 2001 09:30:00 -0500", "I need the Q4 budget numbers by 5pm today. Can you send them?"))
	alice := e.deliver(t, rawMail("a1@example.com", "Alice Smith <alice@example.com>", "owner@example.com", "Re: Lunch",
		"Thu, 25 Oct 2001 09:40:00 -0500", "Sure! Could you tell me which day works for you?", "In-Reply-To: <o1@example.com>", "References: <o1@example.com>"))
	news := e.deliver(t, rawMail("n1@example.com", "Weekly News <news@lists.example.org>", "owner@example.com", "This week in energy",
		"Thu, 25 Oct 2001 09:45:00 -0500", "Top stories... To unsubscribe click here.", "List-Unsubscribe: <mailto:leave@lists.example.org>", "Precedence: bulk"))
	spam := e.deliver(t, rawMail("s1@example.com", "Deals <x83921@cheap-deals.biz>", "undisclosed-recipients@cheap-deals.biz", "MAKE MONEY FAST!!! $$$",
		"Thu, 25 Oct 2001 09:50:00 -0500", "Act now! 100% free, risk free, click here to be removed. Viagra cheap."))
	sent := e.deliver(t, rawMail("o2@example.com", "Owner <owner@example.com>", "carol@example.com", "Hello", "Thu, 25 Oct 2001 09:55:00 -0500", "How are you?"))

	tr, err := New(Options{Store: e.st, OwnerName: "Mike Carson", VIPs: []string{"boss@example.com"}, Location: houston,
		Proposer: e.gate, Notifier: e.queue, Now: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 6 || st.Triaged != 6 {
		t.Errorf("stats %+v: want 6 events, 6 triaged", st)
	}
	want := map[int64]struct {
		decision, category, level string
	}{
		boss.ID:  {"respond", "personal", "critical"},
		alice.ID: {"respond", "personal", "important"},
		news.ID:  {"ignore", "bulk", "silent"},
		spam.ID:  {"ignore", "spam", "silent"},
		sent.ID:  {"ignore", "outbound", "silent"},
	}
	for id, w := range want {
		got, err := e.st.TriageOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Decision != w.decision || got.Category != w.category || got.Level != w.level {
			t.Errorf("item %d: %s/%s/%s, want %+v; %s", id, got.Decision, got.Category, got.Level, w, got.Reason)
		}
		if len(got.Factors) == 0 || got.Reason == "" {
			t.Errorf("item %d has no explanation", id)
		}
	}
	bossTriage, _ := e.st.TriageOf(ctx, boss.ID)
	if want := time.Date(2001, 10, 25, 17, 0, 0, 0, houston); !bossTriage.Deadline.Equal(want) {
		t.Errorf("boss deadline %v, want %v", bossTriage.Deadline, want)
	}

	// Two reply proposals, threaded exactly.
	props, err := e.gate.List(ctx, approval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 2 {
		t.Fatalf("%d proposals, want 2", len(props))
	}
	for _, p := range props {
		var pl approval.EmailPayload
		if err := json.Unmarshal(p.Payload, &pl); err != nil {
			t.Fatal(err)
		}
		if p.Kind != approval.KindReply || p.Origin != "proactive" || p.State != approval.StatePending {
			t.Errorf("proposal %+v", p)
		}
		if !strings.Contains(p.Reason, "Templated acknowledgement") {
			t.Errorf("a templated reply is not marked as such: %q", p.Reason)
		}
		switch p.ItemID {
		case boss.ID:
			if pl.InReplyTo != "<b1@example.com>" || strings.Join(pl.References, " ") != "<b1@example.com>" || pl.ThreadID != boss.Thread ||
				pl.To[0] != "boss@example.com" || pl.Subject != "Re: Budget numbers" || !strings.Contains(pl.Body, "Hi Big") || !strings.Contains(pl.Body, "Thursday, October 25 at 17:00") {
				t.Errorf("boss reply payload %+v", pl)
			}
		case alice.ID:
			if pl.InReplyTo != "<a1@example.com>" || strings.Join(pl.References, " ") != "<o1@example.com> <a1@example.com>" || pl.Subject != "Re: Lunch" {
				t.Errorf("alice reply payload %+v", pl)
			}
		default:
			t.Errorf("proposal for item %d", p.ItemID)
		}
		if got, _ := e.st.TriageByProposal(ctx, p.ID); got == nil || got.ItemID != p.ItemID {
			t.Errorf("proposal %s is not linked to its triage", p.ID)
		}
	}

	// Notifications: the gate announced both proposals; triage added the
	// critical alert for the boss and nothing for the rest.
	ns := e.notifications(t)
	if n := ns[fmt.Sprintf("triage:gmail:%s:respond", boss.ExternalID)]; n == nil || n.Level != "critical" || !strings.Contains(n.Text, "Deadline") {
		t.Errorf("critical notification for the boss missing or wrong: %+v", n)
	}
	if len(ns) != 3 {
		var keys []string
		for k := range ns {
			keys = append(keys, k)
		}
		t.Errorf("notification keys %v, want the 2 proposals and the critical alert", keys)
	}
	if evs, _ := e.st.PendingEvents(ctx, DefaultConsumer, 10); len(evs) != 0 {
		t.Errorf("%d events left unacknowledged", len(evs))
	}

	// A replay (a crash before the acks, simulated by a second consumer)
	// reuses the decisions: no new proposal, no new notification.
	again, err := New(Options{Store: e.st, VIPs: []string{"boss@example.com"}, Location: houston, Proposer: e.gate, Notifier: e.queue, Now: e.clock, Consumer: "replay"})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := again.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Events != 6 || st2.Triaged != 0 || st2.Proposals != 0 {
		t.Errorf("replay stats %+v: want 6 events, nothing decided or proposed again", st2)
	}
	if props, _ := e.gate.List(ctx, approval.ListOptions{}); len(props) != 2 {
		t.Errorf("%d proposals after the replay, want still 2", len(props))
	}
	if ns := e.notifications(t); len(ns) != 3 {
		t.Errorf("%d notifications after the replay, want still 3", len(ns))
	}
}

// countingModel is a fake OpenAI server behind the real router that
// answers every triage request and counts them.
type countingModel struct {
	fake   *llm.OpenAI
	router *router.Router
	mu     sync.Mutex
	calls  int
	answer string
}

func newCountingModel(t testing.TB, st *store.Store, now func() time.Time, budget float64) *countingModel {
	t.Helper()
	cm := &countingModel{fake: llm.NewOpenAI(t), answer: `{"decision":"notify","priority":62,"reason":"a colleague's update"}`}
	cm.fake.Respond(func(r llm.Request) llm.Turn {
		cm.mu.Lock()
		defer cm.mu.Unlock()
		cm.calls++
		return llm.Turn{Text: cm.answer}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cfg := config.LLM{Provider: "openai", BaseURL: cm.fake.URL, Model: "gpt-test", APIKey: "sk-test", Timeout: 30 * time.Second,
		DailyBudgetUSD: budget, Prices: map[string]config.Price{"gpt-test": {InputPerMTok: 1000, OutputPerMTok: 1000}}}
	r, err := router.New(context.Background(), router.Options{LLM: cfg, Location: houston, Calls: st, Now: now, OllamaURL: "http://" + closed + "/v1",
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	cm.router = r
	return cm
}

func (cm *countingModel) count() int {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.calls
}

func TestModelOnlyForTheUncertainMiddle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	cm := newCountingModel(t, e.st, e.clock, 0)
	// Clear cases: a VIP with a deadline (high), a newsletter (low). An
	// uncertain one: an unknown person writing to the owner with no ask.
	e.deliver(t, rawMail("b1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget", "Thu, 25 Oct 2001 09:30:00 -0500", "I need the numbers by 5pm today, can you send them?"))
	e.deliver(t, rawMail("n1@example.com", "News <news@lists.example.org>", "owner@example.com", "Weekly", "Thu, 25 Oct 2001 09:45:00 -0500", "Stories. Unsubscribe here.", "List-Id: <weekly.lists.example.org>"))
	mid := e.deliver(t, rawMail("m1@example.com", "Dana Lee <dana@partner.example.net>", "owner@example.com", "Pipeline capacity update", "Thu, 25 Oct 2001 09:50:00 -0500", "The pipeline capacity figures for November are attached for your files."))

	tr, _ := New(Options{Store: e.st, VIPs: []string{"boss@example.com"}, Location: houston, Model: cm.router, Notifier: e.queue, Now: e.clock})
	st, err := tr.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cm.count() != 1 || st.Model != 1 {
		t.Fatalf("model asked %d times (stats %+v), want once: only the uncertain mail", cm.count(), st)
	}
	got, _ := e.st.TriageOf(ctx, mid.ID)
	if got.Decision != "notify" || got.Model == "" || got.Tokens == 0 {
		t.Errorf("middle mail %+v: want the model's notify, with tokens recorded", got)
	}
	req := cm.fake.Requests()[0]
	if !strings.Contains(req.System, untrusted.Rule) || !strings.Contains(req.Messages[len(req.Messages)-1].Content, untrusted.Open) {
		t.Errorf("the model was not told the mail is untrusted data: %q", req.System)
	}
}

func TestModelNeverCalledWhenTheBudgetIsSpent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// Price 1000 USD per million tokens and a budget of 0.01 USD: the
	// first call spends it.
	cm := newCountingModel(t, e.st, e.clock, 0.01)
	for i := range 5 {
		e.deliver(t, rawMail(fmt.Sprintf("m%d@example.com", i), fmt.Sprintf("Dana Lee <dana%d@partner.example.net>", i), "owner@example.com",
			fmt.Sprintf("Capacity update %d", i), "Thu, 25 Oct 2001 09:50:00 -0500", "The capacity figures for November are attached for your files."))
	}
	tr, _ := New(Options{Store: e.st, Location: houston, Model: cm.router, Now: e.clock})
	st, err := tr.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cm.count() != 1 {
		t.Fatalf("model called %d times, want 1: after the budget is spent triage must not call it", cm.count())
	}
	if st.Model != 5 || st.Triaged != 5 {
		t.Errorf("stats %+v", st)
	}
	skipped := 0
	ts, _ := e.st.TriagedItems(ctx, store.TriageFilter{Limit: 10})
	for _, ti := range ts {
		for _, f := range ti.Triage.Factors {
			if f.Name == "model_skipped" {
				skipped++
			}
		}
	}
	if skipped != 4 {
		t.Errorf("%d decisions say the budget was spent, want 4", skipped)
	}
}

func TestTriageWithoutAnyModelOrGate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	it := e.deliver(t, rawMail("b1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget", "Thu, 25 Oct 2001 09:30:00 -0500", "Can you send the numbers by Friday?"))
	tr, _ := New(Options{Store: e.st, VIPs: []string{"@example.com"}, Location: houston, Now: e.clock})
	if _, err := tr.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.st.TriageOf(ctx, it.ID)
	if err != nil || got.Decision != "respond" {
		t.Fatalf("triage %+v %v", got, err)
	}
}

func TestBackfilledMailIsDecidedNotAnnounced(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	old := e.deliver(t, rawMail("b0@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Old budget", "Mon, 22 Oct 2001 09:30:00 -0500", "Can you send the numbers by 5pm?"))
	tr, _ := New(Options{Store: e.st, VIPs: []string{"boss@example.com"}, Location: houston, Proposer: e.gate, Notifier: e.queue, Now: e.clock})
	st, err := tr.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := e.st.TriageOf(ctx, old.ID)
	if got.Decision != "respond" || st.Proposals != 0 || st.Notified != 0 {
		t.Errorf("a 3-day-old mail: %s, %d proposals, %d notifications; want decided respond, nothing announced", got.Decision, st.Proposals, st.Notified)
	}
	if len(e.notifications(t)) != 0 {
		t.Error("the backfill was announced")
	}
}

// A collector that stored mail kicks triage: the mail is decided at once,
// not after the interval (an hour here, so only the kick can explain it).
func TestKickTriagesWithoutWaitingForTheInterval(t *testing.T) {
	e := newEnv(t)
	reg := health.NewRegistry(e.clock)
	tr, _ := New(Options{Store: e.st, VIPs: []string{"@example.com"}, Location: houston, Now: e.clock, Interval: time.Hour, Health: reg})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitUntil("the first pass", func() bool { c, _ := reg.Get(HealthName); return c.State == health.OK })

	it := e.deliver(t, rawMail("k1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget", "Thu, 25 Oct 2001 09:30:00 -0500", "Can you send the numbers by Friday?"))
	tr.Kick()
	waitUntil("the kicked pass", func() bool {
		got, err := e.st.TriageOf(ctx, it.ID)
		return err == nil && got.Decision == "respond"
	})
}

// A question the owner answered in Gmail before triage got to it (both
// arrived in one collection pass) gets no draft: it would only replace the
// owner's own answer.
func TestNoDraftForMailTheOwnerAlreadyAnswered(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	q := e.deliver(t, rawMail("q1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget", "Thu, 25 Oct 2001 09:30:00 -0500", "Can you send the numbers by Friday?"))
	open := e.deliver(t, rawMail("q2@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Hiring", "Thu, 25 Oct 2001 09:40:00 -0500", "Can you interview Sam on Monday?"))
	e.deliver(t, rawMail("a1@example.com", "Owner <owner@example.com>", "boss@example.com", "Re: Budget", "Thu, 25 Oct 2001 09:50:00 -0500", "Attached.", "In-Reply-To: <q1@example.com>", "References: <q1@example.com>"))
	tr, _ := New(Options{Store: e.st, VIPs: []string{"@example.com"}, Location: houston, Proposer: e.gate, Notifier: e.queue, Now: e.clock})
	st, err := tr.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	answered, _ := e.st.TriageOf(ctx, q.ID)
	waiting, _ := e.st.TriageOf(ctx, open.ID)
	if answered.ProposalID != "" || waiting.ProposalID == "" || st.Proposals != 1 {
		t.Errorf("answered mail: proposal %q; open question: proposal %q; %d proposals in all, want only the open one", answered.ProposalID, waiting.ProposalID, st.Proposals)
	}
}

// Mail the owner deleted for good takes its events with it. The next
// mail's event must not reuse the deleted event's id: triage has acked
// that id already and would never see the new mail.
func TestMailAfterADeletedOneIsTriaged(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tr, _ := New(Options{Store: e.st, VIPs: []string{"@example.com"}, Location: houston, Now: e.clock})
	gone := e.deliver(t, rawMail("d1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Lunch", "Thu, 25 Oct 2001 09:30:00 -0500", "Lunch today?"))
	if _, err := tr.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	err := e.st.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.DeleteItem(gone.Source, gone.ExternalID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	next := e.deliver(t, rawMail("d2@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget", "Thu, 25 Oct 2001 09:40:00 -0500", "Can you send the numbers by Friday?"))
	st, err := tr.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.TriageOf(ctx, next.ID); err != nil || st.Triaged != 1 {
		t.Errorf("the mail after a deleted one: %d triaged, decision: %v; want it triaged", st.Triaged, err)
	}
}

// failingNotifier is the real queue, except that it fails for one item.
type failingNotifier struct {
	q    *notify.Queue
	item int64
}

func (f failingNotifier) Notify(ctx context.Context, m notify.Message) error {
	if m.ItemID == f.item {
		return errors.New("injected: this item cannot be queued")
	}
	return f.q.Notify(ctx, m)
}

// One mail that fails every time holds back the mail after it for a few
// passes only: then triage gives up on it, says so in health, and goes
// on; the mail stays stored.
func TestOneFailingMailDoesNotBlockTheRest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	bad := e.deliver(t, rawMail("b1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Budget numbers",
		"Thu, 25 Oct 2001 09:30:00 -0500", "I need the Q4 budget numbers by 5pm today."))
	next := e.deliver(t, rawMail("c1@example.com", "Big Boss <boss@example.com>", "owner@example.com", "Board meeting",
		"Thu, 25 Oct 2001 09:35:00 -0500", "The board meets at 4pm today, urgent."))
	reg := health.NewRegistry(e.clock)
	tr, err := New(Options{Store: e.st, VIPs: []string{"boss@example.com"}, Location: houston, Notifier: failingNotifier{q: e.queue, item: bad.ID},
		Now: e.clock, Health: reg})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < maxAttempts; i++ {
		if _, err := tr.Pass(ctx); err == nil {
			t.Fatalf("pass %d succeeded with a mail that cannot be queued", i)
		}
		if _, err := e.st.TriageOf(ctx, next.ID); err == nil && len(e.notifications(t)) > 0 {
			t.Fatalf("pass %d went past the failing mail", i)
		}
	}
	if _, err := tr.Pass(ctx); err != nil {
		t.Fatalf("pass %d: %v; want it to give up on the failing mail and go on", maxAttempts, err)
	}
	if _, err := e.st.TriageOf(ctx, next.ID); err != nil {
		t.Errorf("the next mail was not triaged: %v", err)
	}
	queued := false
	for _, n := range e.notifications(t) {
		queued = queued || n.ItemID == next.ID
	}
	if !queued {
		t.Errorf("nothing was queued for the next mail: %v", e.notifications(t))
	}
	comp, _ := reg.Get(HealthName)
	if comp.Counters["gave_up"] != 1 || !strings.Contains(comp.LastError, fmt.Sprintf("gave up on item %d", bad.ID)) {
		t.Errorf("health = %+v", comp)
	}
	if _, err := e.st.Item(ctx, bad.ID); err != nil {
		t.Errorf("the failing mail is gone: %v", err)
	}
}
