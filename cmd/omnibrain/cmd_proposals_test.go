package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// approvalHome is a home wired to a fake Gmail (and optionally a fake
// Telegram) through the OMNIBRAIN_* variables, with a Google token.
type approvalHome struct {
	dir    string
	google *fakegoogle.Server
	env    []string
}

func newApprovalHome(t *testing.T) *approvalHome {
	t.Helper()
	h := &approvalHome{dir: t.TempDir(), google: fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})}
	h.env = []string{
		"OMNIBRAIN_GOOGLE_API_URL=" + h.google.URL, "OMNIBRAIN_GOOGLE_TOKEN_URL=" + h.google.TokenURL(),
		"OMNIBRAIN_GOOGLE_CLIENT_ID=" + h.google.ClientID(), "OMNIBRAIN_GOOGLE_CLIENT_SECRET=" + h.google.ClientSecret(),
	}
	// The notification policy is not under test: no quiet hours, no budget.
	// A short send delay: approve waits it out before it sends.
	cfg := "notifications:\n  quiet_start: \"\"\n  quiet_end: \"\"\n  daily_budget: 100000\napproval:\n  send_delay: 1s\n"
	if err := os.WriteFile(filepath.Join(h.dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := h.google.IssueToken(240 * time.Hour)
	data := `{"access_token":"` + tok.AccessToken + `","refresh_token":"` + tok.RefreshToken + `","expiry":"` + tok.Expiry.Format(time.RFC3339) + `"}`
	if err := google.ImportToken(filepath.Join(h.dir, google.TokenFileName), []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}
	return h
}

// propose stores a proposal the way the agent would, with no daemon running.
func (h *approvalHome) propose(t *testing.T, body string) *approval.Proposal {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(h.dir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g, err := approval.NewGate(approval.GateOptions{Store: st, Notifier: notify.NewQueue(st, nil)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Propose(ctx, approval.Draft{Kind: approval.KindEmail, Origin: "agent", Reason: "test",
		Payload: approval.EmailPayload{To: []string{"alice@example.org"}, Subject: "Numbers", Body: body}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (h *approvalHome) run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runBinary(t, h.dir, h.env, strings.NewReader(stdin), args...)
}

func TestCLIProposalsApproveRejectEdit(t *testing.T) {
	h := newApprovalHome(t)
	a := h.propose(t, "first body")
	b := h.propose(t, "second body")

	out, errOut, code := h.run(t, "", "proposals", "--json")
	if code != 0 {
		t.Fatalf("proposals --json: %d %s", code, errOut)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 {
		t.Fatalf("proposals --json: %v %s", err, out)
	}
	for _, field := range []string{"id", "kind", "state", "created", "expires", "payload", "warnings"} {
		if _, ok := list[0][field]; !ok {
			t.Errorf("proposals --json lacks %q: %v", field, list[0])
		}
	}
	// alice@example.org never exchanged mail with the owner: said, with
	// its code, in the JSON and the listing.
	if ws, _ := list[0]["warnings"].([]any); len(ws) != 1 || ws[0].(map[string]any)["code"] != approval.WarnNewRecipient || ws[0].(map[string]any)["text"] == "" {
		t.Errorf("warnings = %v", list[0]["warnings"])
	}
	if out, _, _ := h.run(t, "", "proposals"); strings.Count(out, "⚠️") != 2 {
		t.Errorf("the listing does not show each proposal's warning:\n%s", out)
	}
	if pl, _ := list[0]["payload"].(map[string]any); pl["body"] == nil || pl["to"] == nil {
		t.Errorf("payload not whole: %v", list[0]["payload"])
	}
	if out, _, _ := h.run(t, "", "proposals", "--state", "bogus"); out != "" {
		t.Errorf("bad state printed %q", out)
	}

	// approve shows the exact payload and hash, then (no daemon) sends it here.
	out, errOut, code = h.run(t, "", "approve", a.ID)
	if code != 0 {
		t.Fatalf("approve: %d %s\n%s", code, errOut, out)
	}
	for _, want := range []string{a.PayloadHash, "To: alice@example.org", "Subject: Numbers", "first body", "⚠️  You have never exchanged mail with alice@example.org",
		"It runs after the send delay (1s)", "approved and done"} {
		if !strings.Contains(out, want) {
			t.Errorf("approve output lacks %q:\n%s", want, out)
		}
	}
	if sent := h.google.Sent(); len(sent) != 1 || !strings.Contains(string(sent[0].Raw), "first body") {
		t.Fatalf("sent %d mails", len(sent))
	}
	// Approving again changes nothing and says why.
	_, errOut, code = h.run(t, "", "approve", a.ID)
	if code == 0 || !strings.Contains(errOut, "executed") {
		t.Errorf("second approve: %d %q", code, errOut)
	}
	// --hash must match what is stored.
	if _, errOut, code = h.run(t, "", "approve", b.ID, "--hash", a.PayloadHash); code == 0 || !strings.Contains(errOut, "review it again") {
		t.Errorf("approve with a stale hash: %d %q", code, errOut)
	}

	// edit from standard input makes a new proposal; the old one is gone for good.
	out, errOut, code = h.run(t, "a better body\n", "edit", b.ID, "--file", "-", "--json")
	if code != 0 {
		t.Fatalf("edit: %d %s", code, errOut)
	}
	var nw approval.Proposal
	if err := json.Unmarshal([]byte(out), &nw); err != nil || nw.Supersedes != b.ID || nw.State != approval.StatePending {
		t.Fatalf("edit: %v %s", err, out)
	}
	if _, errOut, code = h.run(t, "", "approve", b.ID); code == 0 || !strings.Contains(errOut, "superseded") {
		t.Errorf("approve the edited-away proposal: %d %q", code, errOut)
	}
	if out, errOut, code = h.run(t, "", "reject", nw.ID); code != 0 || !strings.Contains(out, "rejected") {
		t.Errorf("reject: %d %q %q", code, out, errOut)
	}
	out, _, _ = h.run(t, "", "proposals", "show", b.ID)
	for _, want := range []string{"superseded", "replaced by " + nw.ID, "edited", "api"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if n := len(h.google.Sent()); n != 1 {
		t.Errorf("%d mails sent in all, want 1", n)
	}
}

// TestDaemonKilledWhileExecutingSendsOnce kills the real daemon with
// SIGKILL after Gmail accepted the mail but before it answered; the next
// daemon finds the mail by its Message-ID and sends nothing more.
func TestDaemonKilledWhileExecutingSendsOnce(t *testing.T) {
	h := newApprovalHome(t)
	const token = "555:cli-e2e-token"
	owner := faketg.User{ID: 777, FirstName: "Owner"}
	tg := faketg.New(token)
	defer tg.Close()
	tg.OpenChat(owner.ID)
	h.env = append(h.env, "OMNIBRAIN_TELEGRAM_TOKEN="+token, "OMNIBRAIN_TELEGRAM_API_URL="+tg.URL(), "OMNIBRAIN_TELEGRAM_OWNER_ID=777")
	p := h.propose(t, "exactly once")

	d := startDaemon(t, h.dir, h.env...)
	var msg faketg.Message
	if !tg.WaitUntil(30*time.Second, func() bool {
		for _, m := range tg.SentTo(owner.ID) {
			if m.Keyboard != nil && strings.Contains(m.Keyboard[0][0].CallbackData, p.ID) {
				msg = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the proposal never reached Telegram\n%s", d.stderr.String())
	}
	h.google.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", After: true, Delay: time.Hour, Status: 500, Times: 1})
	tg.Press(owner, owner.ID, msg.ID, msg.Keyboard[0][0].CallbackData)
	deadline := time.Now().Add(30 * time.Second)
	for len(h.google.Sent()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the send never reached Gmail\n%s", d.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.stop(t, syscall.SIGKILL)

	d2 := startDaemon(t, h.dir, h.env...)
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, _, _ := h.run(t, "", "proposals", "show", p.ID, "--json")
		if strings.Contains(out, `"state": "executed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not resolved after the restart: %s\n%s", out, d2.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, reqs := len(h.google.Sent()), h.google.CountRequests("POST", "/gmail/v1/users/me/messages/send"); n != 1 || reqs != 1 {
		t.Errorf("%d mails, %d send requests; want 1 and 1", n, reqs)
	}
	d2.stop(t, syscall.SIGTERM)
}

// Mistakes with proposal ids and states: a wrong state or a missing id is a
// usage error (exit 2); an id that names nothing says so once, plainly, and
// where the ids are.
func TestProposalCommandMistakes(t *testing.T) {
	env := map[string]string{"OMNIBRAIN_HOME": t.TempDir(), "OMNIBRAIN_LLM_PROVIDER": "none"}
	tests := []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"proposals", "--state", "bogus"}, true, `--state "bogus"`},
		{[]string{"proposals", "--state", "pending,nope"}, true, `"nope"`},
		{[]string{"proposals", "show"}, true, "one proposal id"},
		{[]string{"proposals", "show", "p_missing"}, false, `no proposal "p_missing" (omnibrain proposals lists them)`},
		{[]string{"approve", "p_missing"}, false, `no proposal "p_missing"`},
		{[]string{"reject", "p_missing"}, false, `no proposal "p_missing"`},
		{[]string{"edit", "p_missing", "--body", "x"}, false, `no proposal "p_missing"`},
		{[]string{"explain", "nope"}, false, `no item or proposal has the id "nope"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runInProcess(t, env, tc.args...)
			var ue usageError
			if err == nil || errors.As(err, &ue) != tc.usage || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "not found:") {
				t.Errorf("error %v (usage error: %v), want %q (usage error: %v)", err, errors.As(err, &ue), tc.want, tc.usage)
			}
		})
	}
}

// With the daemon running, approve returns at once and the mail waits out
// the send delay; undo puts it back and nothing is sent; approved again,
// exactly one mail goes out after the delay.
func TestCLIUndoDuringTheSendDelay(t *testing.T) {
	h := newApprovalHome(t)
	if err := os.WriteFile(filepath.Join(h.dir, "config.yaml"), []byte("approval:\n  send_delay: 3s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := h.propose(t, "undo me")
	d := startDaemon(t, h.dir, h.env...)
	out, errOut, code := h.run(t, "", "approve", p.ID)
	if code != 0 || !strings.Contains(out, "omnibrain undo "+p.ID) {
		t.Fatalf("approve: %d %s\n%s", code, errOut, out)
	}
	out, errOut, code = h.run(t, "", "undo", p.ID)
	if code != 0 || !strings.Contains(out, "nothing was sent") {
		t.Fatalf("undo: %d %s\n%s", code, errOut, out)
	}
	if n := len(h.google.Sent()); n != 0 {
		t.Fatalf("%d mails sent after undo", n)
	}
	var got []approval.Proposal
	out, _, _ = h.run(t, "", "proposals", "--json")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].State != approval.StatePending {
		t.Fatalf("after undo: %v %s", err, out)
	}
	approvedAt := time.Now()
	if out, errOut, code = h.run(t, "", "approve", p.ID); code != 0 {
		t.Fatalf("approve again: %d %s\n%s", code, errOut, out)
	}
	waitFor(t, d, "the mail approved again", func() bool { return len(h.google.Sent()) == 1 })
	if d := time.Since(approvedAt); d < 3*time.Second {
		t.Errorf("sent %s after the approval, before the 3s delay", d)
	}
	// Once it ran, undo is too late and says so.
	if _, errOut, code = h.run(t, "", "undo", p.ID); code == 0 || !strings.Contains(errOut, "nothing changed") {
		t.Errorf("undo after the send: %d %q", code, errOut)
	}
	if n := len(h.google.Sent()); n != 1 {
		t.Errorf("%d mails sent, want 1", n)
	}
}

// When a daemon holds the home but does not answer on its socket, approve
// does not run an outbox of its own: nothing is approved or sent, and the
// owner is told how to restart the daemon.
func TestCLIApproveWithAnUnresponsiveDaemonExecutesNothing(t *testing.T) {
	h := newApprovalHome(t)
	p := h.propose(t, "never from the CLI")
	lock, err := os.OpenFile(filepath.Join(h.dir, "omnibrain.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	// The socket exists and accepts, but nothing answers: a hung daemon.
	ln, err := net.Listen("unix", filepath.Join(h.dir, api.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, errOut, code := h.run(t, "", "approve", p.ID)
	if code == 0 || !strings.Contains(errOut, "does not answer") || !strings.Contains(errOut, fmt.Sprintf("kill %d", os.Getpid())) {
		t.Errorf("approve with a hung daemon: %d %q", code, errOut)
	}
	if n := len(h.google.Sent()); n != 0 {
		t.Errorf("the CLI sent %d mails beside the daemon", n)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	ln.Close()
	out, _, _ := h.run(t, "", "proposals", "--json")
	var got []approval.Proposal
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].State != approval.StatePending {
		t.Errorf("after the refused approve: %v %s", err, out)
	}
}
