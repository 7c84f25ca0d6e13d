package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

type env struct {
	st    *store.Store
	gate  *approval.Gate
	queue *notify.Queue
	clock *testutil.Clock
	execs *fakeExecutors
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	q := notify.NewQueue(st, nil)
	ex := &fakeExecutors{byKind: map[approval.Kind]approval.Executor{}}
	g, err := approval.NewGate(approval.GateOptions{Store: st, Executors: ex, Notifier: q, Expiry: 24 * time.Hour, Snooze: 2 * time.Hour, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, gate: g, queue: q, clock: c, execs: ex}
}

func reply(body string) approval.Draft {
	return approval.Draft{
		Kind: approval.KindReply, Origin: "agent", Reason: "Alice asked for the numbers", Thread: "t-1",
		Payload: approval.EmailPayload{To: []string{"alice@example.com"}, Subject: "Re: Q3 budget", Body: body, InReplyTo: "<a1@example.com>", ThreadID: "t-1"},
	}
}

func TestProposeStoresCanonicalPayloadAndHash(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, err := e.gate.Propose(ctx, reply("Numbers attached.\n\n— B"))
	if err != nil {
		t.Fatal(err)
	}
	if !approval.ValidID(p.ID) {
		t.Errorf("id %q is not a valid short id", p.ID)
	}
	want := `{"to":["alice@example.com"],"subject":"Re: Q3 budget","body":"Numbers attached.\n\n— B","in_reply_to":"\u003ca1@example.com\u003e","thread_id":"t-1"}`
	if string(p.Payload) != want {
		t.Errorf("payload\n got %s\nwant %s", p.Payload, want)
	}
	// Alice never wrote and was never written to: the owner is told, and
	// what is shown is part of what is approved.
	if len(p.Warnings) != 1 || p.Warnings[0].Code != approval.WarnNewRecipient {
		t.Errorf("warnings %+v, want one new_recipient", p.Warnings)
	}
	if p.PayloadHash != approval.HashProposal([]byte(want), p.Warnings) || p.PayloadHash == approval.HashPayload([]byte(want)) || len(p.PayloadHash) != 64 {
		t.Errorf("hash %s is not the sha256 of the payload and its warnings", p.PayloadHash)
	}
	if p.State != approval.StatePending || !p.Expires.Equal(e.clock.Now().Add(24*time.Hour)) {
		t.Errorf("state %s expires %v", p.State, p.Expires)
	}
	if p.Title != "Reply to alice@example.com: Re: Q3 budget" {
		t.Errorf("default title %q", p.Title)
	}
	// The same payload given as JSON (any field order) is the same bytes.
	p2, err := e.gate.Propose(ctx, approval.Draft{Kind: approval.KindEmail, Origin: "proactive",
		Payload: json.RawMessage(`{"body":"Numbers attached.\n\n— B","subject":"Re: Q3 budget","to":["alice@example.com"],"in_reply_to":"<a1@example.com>","thread_id":"t-1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(p2.Payload) != want || p2.ID == p.ID {
		t.Errorf("second proposal %s payload %s", p2.ID, p2.Payload)
	}
	got, err := e.gate.Get(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Payload) != want || got.PayloadHash != p.PayloadHash || !slices.Equal(got.Warnings, p.Warnings) {
		t.Errorf("stored payload changed: %s", got.Payload)
	}
	n, err := e.st.NotificationByKey(ctx, "proposal:"+p.ID)
	if err != nil {
		t.Fatalf("proposal was not queued for the owner: %v", err)
	}
	if n.ProposalID != p.ID || n.Level != string(notify.Important) {
		t.Errorf("notification %+v", n)
	}
	audit, _ := e.gate.Audit(ctx, p.ID, 0)
	if len(audit) == 0 || audit[0].Action != "proposed" || audit[0].Actor != "agent" || audit[0].PayloadHash != p.PayloadHash {
		t.Errorf("audit %+v", audit)
	}
}

func TestProposeRejectsBadPayloads(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		d    approval.Draft
		want string
	}{
		{"no payload", approval.Draft{Kind: approval.KindEmail, Origin: "agent"}, "no payload"},
		{"unknown kind", approval.Draft{Kind: "teleport", Origin: "agent", Payload: map[string]any{}}, "unknown proposal kind"},
		{"no origin", approval.Draft{Kind: approval.KindEmail, Payload: approval.EmailPayload{To: []string{"a@b.c"}, Body: "x"}}, "origin"},
		{"header injection", approval.Draft{Kind: approval.KindEmail, Origin: "agent", Payload: approval.EmailPayload{To: []string{"a@b.c"}, Subject: "hi\r\nBcc: evil@x.y", Body: "x"}}, "one line"},
		{"bad address", approval.Draft{Kind: approval.KindEmail, Origin: "agent", Payload: approval.EmailPayload{To: []string{"not an address"}, Body: "x"}}, "not an email address"},
		{"unknown field", approval.Draft{Kind: approval.KindEmail, Origin: "agent", Payload: json.RawMessage(`{"to":["a@b.c"],"body":"x","attach":"/etc/passwd"}`)}, "unknown field"},
		{"reply without thread", approval.Draft{Kind: approval.KindReply, Origin: "agent", Payload: approval.EmailPayload{To: []string{"a@b.c"}, Body: "x"}}, "in_reply_to"},
		{"event without times", approval.Draft{Kind: approval.KindCalendarCreate, Origin: "agent", Payload: approval.CalendarPayload{Summary: "x"}}, "start and end"},
		{"comment without number", approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Payload: approval.GitHubCommentPayload{Owner: "o", Repo: "r", Body: "x"}}, "number"},
		{"comment repo with query", approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Payload: approval.GitHubCommentPayload{Owner: "o", Repo: "r?x=1", Number: 1, Body: "x"}}, "owner and repo"},
		{"comment repo with fragment", approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Payload: approval.GitHubCommentPayload{Owner: "o", Repo: "r#", Number: 1, Body: "x"}}, "owner and repo"},
		{"comment dot-dot path", approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Payload: approval.GitHubCommentPayload{Owner: "..", Repo: "..", Number: 1, Body: "x"}}, "owner and repo"},
		{"comment escaped dots", approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Payload: approval.GitHubCommentPayload{Owner: "o", Repo: "%2e%2e", Number: 1, Body: "x"}}, "owner and repo"},
		{"comment escaped slash", approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent", Payload: approval.GitHubCommentPayload{Owner: "a%2Fb", Repo: "c", Number: 1, Body: "x"}}, "owner and repo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.gate.Propose(context.Background(), c.d)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to mention %q", err, c.want)
			}
		})
	}
	ps, _ := e.gate.List(context.Background(), approval.ListOptions{})
	if len(ps) != 0 {
		t.Errorf("%d proposals stored from bad drafts", len(ps))
	}
}

func TestApproveIsCompareAndSet(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("ok"))
	owner := approval.TelegramOwner(42)

	if _, err := e.gate.Approve(ctx, p.ID, strings.Repeat("0", 64), owner); !errors.Is(err, approval.ErrHashMismatch) {
		t.Fatalf("wrong hash: %v", err)
	}
	if _, err := e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.Owner{}); !errors.Is(err, approval.ErrNotOwner) {
		t.Fatalf("no owner: %v", err)
	}
	got, err := e.gate.Approve(ctx, p.ID, p.PayloadHash, owner)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StateApproved || got.DecidedBy != "telegram:42" || !got.Decided.Equal(e.clock.Now()) {
		t.Errorf("after approve: %+v", got)
	}
	// A second decision, of any kind, changes nothing and is told the state.
	for name, decide := range map[string]func() (*approval.Proposal, error){
		"approve": func() (*approval.Proposal, error) {
			return e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
		},
		"reject": func() (*approval.Proposal, error) { return e.gate.Reject(ctx, p.ID, owner) },
		"snooze": func() (*approval.Proposal, error) { return e.gate.Snooze(ctx, p.ID, owner) },
		"edit":   func() (*approval.Proposal, error) { return e.gate.EditBody(ctx, p.ID, "other", owner) },
	} {
		_, err := decide()
		var se *approval.StaleError
		if !errors.As(err, &se) || se.Proposal.State != approval.StateApproved {
			t.Errorf("%s after approve: %v", name, err)
		}
	}
	audit, _ := e.gate.Audit(ctx, p.ID, 0)
	var actions []string
	for _, a := range audit {
		actions = append(actions, a.Action+"/"+a.Actor)
	}
	if want := "proposed/agent refused/telegram:42 refused/unknown approved/telegram:42"; strings.Join(actions, " ") != want {
		t.Errorf("audit %q, want %q", strings.Join(actions, " "), want)
	}
}

func TestConcurrentApprovalsOneWins(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("ok"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, stale := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, approval.ErrStale):
				stale++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || stale != 7 {
		t.Errorf("wins %d stale %d", wins, stale)
	}
}

func TestExpiry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("ok"))
	e.clock.Add(24*time.Hour + time.Second)
	_, err := e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
	var se *approval.StaleError
	if !errors.As(err, &se) || se.Proposal.State != approval.StateExpired {
		t.Fatalf("approve after expiry: %v", err)
	}
	// The sweeper expires what nobody touched.
	p2, _ := e.gate.Propose(ctx, approval.Draft{Kind: approval.KindEmail, Origin: "agent", Payload: approval.EmailPayload{To: []string{"b@example.com"}, Body: "hi"}})
	e.clock.Add(23 * time.Hour)
	if err := e.gate.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.gate.Get(ctx, p2.ID); got.State != approval.StatePending {
		t.Fatalf("expired early: %s", got.State)
	}
	e.clock.Add(2 * time.Hour)
	e.gate.Sweep(ctx)
	if got, _ := e.gate.Get(ctx, p2.ID); got.State != approval.StateExpired || got.DecidedBy != "system" {
		t.Fatalf("not expired: %+v", got)
	}
}

func TestSnoozeWakesAndRenotifies(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("ok"))
	sn, err := e.gate.Snooze(ctx, p.ID, approval.APIOwner())
	if err != nil {
		t.Fatal(err)
	}
	if sn.State != approval.StateSnoozed || !sn.SnoozeUntil.Equal(e.clock.Now().Add(2*time.Hour)) {
		t.Fatalf("snoozed: %+v", sn)
	}
	e.clock.Add(time.Hour)
	e.gate.Sweep(ctx)
	if got, _ := e.gate.Get(ctx, p.ID); got.State != approval.StateSnoozed {
		t.Fatalf("woke early: %s", got.State)
	}
	e.clock.Add(time.Hour + time.Second)
	e.gate.Sweep(ctx)
	got, _ := e.gate.Get(ctx, p.ID)
	if got.State != approval.StatePending || !got.SnoozeUntil.IsZero() {
		t.Fatalf("after snooze: %+v", got)
	}
	ns, _ := e.st.Notifications(ctx, "", 10)
	shown := 0
	for _, n := range ns {
		if n.ProposalID == p.ID {
			shown++
		}
	}
	if shown != 2 {
		t.Errorf("proposal queued %d times, want 2 (new, after snooze)", shown)
	}
	// Approving from snoozed also works (the CLI can decide any time).
	e.gate.Snooze(ctx, p.ID, approval.APIOwner())
	if _, err := e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
		t.Errorf("approve snoozed: %v", err)
	}
}

func TestEditSupersedesAndNeedsItsOwnApproval(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	old, _ := e.gate.Propose(ctx, reply("first draft"))
	owner := approval.TelegramOwner(42)
	nw, err := e.gate.EditBody(ctx, old.ID, "better draft", owner)
	if err != nil {
		t.Fatal(err)
	}
	if nw.State != approval.StatePending || nw.Supersedes != old.ID || nw.PayloadHash == old.PayloadHash {
		t.Errorf("new: %+v", nw)
	}
	var ep approval.EmailPayload
	json.Unmarshal(nw.Payload, &ep)
	if ep.Body != "better draft" || ep.To[0] != "alice@example.com" || ep.InReplyTo != "<a1@example.com>" {
		t.Errorf("edited payload %+v", ep)
	}
	o, _ := e.gate.Get(ctx, old.ID)
	if o.State != approval.StateSuperseded || o.SupersededBy != nw.ID {
		t.Errorf("old: %+v", o)
	}
	// The old payload can never be approved.
	if _, err := e.gate.Approve(ctx, old.ID, old.PayloadHash, owner); !errors.Is(err, approval.ErrStale) {
		t.Errorf("approve old: %v", err)
	}
	// Nor can the new one be approved with the old hash.
	if _, err := e.gate.Approve(ctx, nw.ID, old.PayloadHash, owner); !errors.Is(err, approval.ErrHashMismatch) {
		t.Errorf("approve new with old hash: %v", err)
	}
	if _, err := e.gate.EditBody(ctx, nw.ID, "better draft", owner); err == nil {
		t.Error("an edit that changes nothing was accepted")
	}
	if _, err := e.st.NotificationByKey(ctx, "proposal:"+nw.ID); err != nil {
		t.Errorf("the new draft was not shown to the owner: %v", err)
	}
}

func TestNewerDraftSupersedesOlderInThread(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a, _ := e.gate.Propose(ctx, reply("one"))
	e.clock.Add(time.Minute)
	b, _ := e.gate.Propose(ctx, reply("two"))
	if got, _ := e.gate.Get(ctx, a.ID); got.State != approval.StateSuperseded || got.SupersededBy != b.ID {
		t.Errorf("older draft: %+v", got)
	}
	if got, _ := e.gate.Get(ctx, b.ID); got.State != approval.StatePending {
		t.Errorf("newer draft: %s", got.State)
	}
}

func TestOwnerReplyInGmailSupersedes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, _ := e.gate.Propose(ctx, reply("draft"))
	other, _ := e.gate.Propose(ctx, approval.Draft{Kind: approval.KindEmail, Origin: "agent", Thread: "t-2",
		Payload: approval.EmailPayload{To: []string{"bob@example.com"}, Body: "x", ThreadID: "t-2"}})
	e.clock.Add(10 * time.Minute)
	items := []*store.Item{
		// Inbound mail in the thread does not count.
		{Source: "gmail", ExternalID: "m1", Kind: "email", Thread: "t-1", Time: e.clock.Now(), Meta: map[string]any{"outbound": false}},
		{Source: "gmail", ExternalID: "m2", Kind: "email", Thread: "t-1", Time: e.clock.Now(), Meta: map[string]any{"outbound": true}},
	}
	if _, err := e.st.UpsertItems(ctx, items, store.UpsertOptions{Event: true}); err != nil {
		t.Fatal(err)
	}
	n, err := e.gate.SupersedeAnswered(ctx)
	if err != nil || n != 2 {
		t.Fatalf("read %d events: %v", n, err)
	}
	got, _ := e.gate.Get(ctx, p.ID)
	if got.State != approval.StateSuperseded || got.DecidedBy != "gmail" {
		t.Errorf("answered thread: %+v", got)
	}
	if got, _ := e.gate.Get(ctx, other.ID); got.State != approval.StatePending {
		t.Errorf("other thread: %s", got.State)
	}
	if n, _ := e.gate.SupersedeAnswered(ctx); n != 0 {
		t.Errorf("events read twice: %d", n)
	}
}

func TestRejectAndList(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a, _ := e.gate.Propose(ctx, reply("a"))
	b, _ := e.gate.Propose(ctx, approval.Draft{Kind: approval.KindGitHubComment, Origin: "proactive",
		Payload: approval.GitHubCommentPayload{Owner: "o", Repo: "r", Number: 3, Body: "LGTM"}})
	if _, err := e.gate.Reject(ctx, a.ID, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	pending, _ := e.gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StatePending}})
	if len(pending) != 1 || pending[0].ID != b.ID {
		t.Errorf("pending: %v", pending)
	}
	rejected, _ := e.gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StateRejected}})
	if len(rejected) != 1 || rejected[0].ID != a.ID || rejected[0].DecidedBy != "api" {
		t.Errorf("rejected: %v", rejected)
	}
	if _, err := e.gate.Get(ctx, "zzzzzzzzzz"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := e.gate.Get(ctx, "'; DROP TABLE"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("garbage id: %v", err)
	}
}

// The very same action proposed again while the first is still waiting or
// under way (a resumed run, a repeated pattern pass) is the one proposal,
// announced once, so the owner cannot approve it twice; once decided
// against, it may be proposed anew. A different kind with the same
// payload, or a different payload, is its own proposal.
func TestProposeTheSameActionTwiceIsOneProposal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	comment := func(body string) approval.Draft {
		return approval.Draft{Kind: approval.KindGitHubComment, Origin: "agent",
			Payload: approval.GitHubCommentPayload{Owner: "acme", Repo: "api", Number: 7, Body: body}}
	}
	p1, err := e.gate.Propose(ctx, comment("LGTM"))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := e.gate.Propose(ctx, comment("LGTM"))
	if err != nil || p2.ID != p1.ID || p2.State != approval.StatePending {
		t.Fatalf("second proposal %+v, %v; want the first one back", p2, err)
	}
	other, err := e.gate.Propose(ctx, comment("LGTM, thanks"))
	if err != nil || other.ID == p1.ID {
		t.Fatalf("a different comment: %+v, %v", other, err)
	}
	if _, err := e.gate.Approve(ctx, p1.ID, p1.PayloadHash, approval.TelegramOwner(42)); err != nil {
		t.Fatal(err)
	}
	if p3, err := e.gate.Propose(ctx, comment("LGTM")); err != nil || p3.ID != p1.ID || p3.State != approval.StateApproved {
		t.Fatalf("proposed while approved: %+v, %v; want the approved one", p3, err)
	}
	ps, err := e.gate.List(ctx, approval.ListOptions{})
	if err != nil || len(ps) != 2 {
		t.Fatalf("%d proposals, %v; want 2", len(ps), err)
	}
	if _, err := e.gate.Reject(ctx, other.ID, approval.TelegramOwner(42)); err != nil {
		t.Fatal(err)
	}
	again, err := e.gate.Propose(ctx, comment("LGTM, thanks"))
	if err != nil || again.ID == other.ID || again.State != approval.StatePending {
		t.Errorf("proposed again after a rejection: %+v, %v; want a new pending proposal", again, err)
	}
	audit, _ := e.gate.Audit(ctx, p1.ID, 0)
	if proposed := countAction(audit, "proposed"); proposed != 1 {
		t.Errorf("%d 'proposed' audit entries for the first, want 1", proposed)
	}
}

func countAction(entries []approval.AuditEntry, action string) int {
	n := 0
	for _, a := range entries {
		if a.Action == action {
			n++
		}
	}
	return n
}
