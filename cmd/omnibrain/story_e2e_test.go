package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/internal/untrusted"
)

// TestStoryMailToApprovedReply is the product's promise, end to end through
// the real binary and nothing but the OMNIBRAIN_* contract: a mail arrives
// in Gmail, the daemon collects and triages it, a model drafts a reply, the
// proposal appears in Telegram with its whole payload, the owner presses
// Send, and exactly that reply reaches Gmail exactly once, in the thread.
func TestStoryMailToApprovedReply(t *testing.T) {
	const (
		owner    = "owner@example.com"
		alice    = "alice@partner.example"
		tgToken  = "4242:story-token"
		draft    = "Hi Alice,\n\nyes, the signed contract will be with you before Friday.\n\nBest regards,\nOwen"
		question = "Hi Owen,\n\ncould you send me the signed contract by Friday? Legal needs it for the board.\n\nThanks,\nAlice"
	)
	home := t.TempDir()
	gm := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true, Email: owner})
	tg := faketg.New(tgToken)
	defer tg.Close()
	me := faketg.User{ID: 31337, FirstName: "Owen"}
	tg.OpenChat(me.ID)
	model := fakellm.NewOpenAI(t)
	defer model.Close()
	model.Respond(func(r fakellm.Request) fakellm.Turn {
		if strings.Contains(r.System, "Plan for: Draft the owner's reply") {
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "propose_reply", Arguments: fmt.Sprintf(`{"body":%q}`, draft)}}}
		}
		return fakellm.Turn{Text: "A quiet day."} // briefing narratives and the like
	})

	cfg := fmt.Sprintf(`owner:
  name: Owen Owner
  emails: [%s]
  vips: [%s]
schedule:
  mail: 10s
notifications:
  quiet_start: ""
  quiet_end: ""
  daily_budget: 1000
`, owner, alice)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := gm.IssueToken(240 * time.Hour)
	tokJSON, _ := json.Marshal(map[string]string{"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken,
		"token_type": "Bearer", "expiry": tok.Expiry.Format(time.RFC3339)})
	tokFile := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(tokFile, tokJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"OMNIBRAIN_GOOGLE_API_URL=" + gm.URL, "OMNIBRAIN_GOOGLE_TOKEN_URL=" + gm.TokenURL(),
		"OMNIBRAIN_GOOGLE_CLIENT_ID=" + gm.ClientID(), "OMNIBRAIN_GOOGLE_CLIENT_SECRET=" + gm.ClientSecret(),
		"OMNIBRAIN_TELEGRAM_TOKEN=" + tgToken, "OMNIBRAIN_TELEGRAM_API_URL=" + tg.URL(),
		fmt.Sprintf("OMNIBRAIN_TELEGRAM_OWNER_ID=%d", me.ID),
		"OMNIBRAIN_LLM_PROVIDER=openai", "OMNIBRAIN_LLM_BASE_URL=" + model.URL,
		"OMNIBRAIN_LLM_API_KEY=sk-story", "OMNIBRAIN_LLM_MODEL=story-model",
		"OMNIBRAIN_TIMEZONE=Europe/Berlin",
	}
	h := &approvalHome{dir: home, google: gm, env: env}
	if out, errOut, code := h.run(t, "", "auth", "google", "--token-file", tokFile); code != 0 {
		t.Fatalf("auth google --token-file: %d %s %s", code, out, errOut)
	}
	if fi, err := os.Stat(filepath.Join(home, google.TokenFileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}

	// Old mail is already there: the first sync stores it but does not
	// push weeks of history at the owner.
	old := time.Now().Add(-5 * 24 * time.Hour)
	gm.AddMessage(rawMail("Bob <bob@partner.example>", owner, "Lunch?", "<lunch@partner.example>", old,
		"Lunch next week, can you make it?"), fakegoogle.MessageOptions{})

	d := startDaemon(t, home, env...)
	waitFor(t, d, "the backfill stored the old mail", func() bool {
		out, _, _ := h.run(t, "", "search", "--json", "lunch")
		return strings.Contains(out, `"title": "Lunch?"`)
	})

	// Alice's question arrives while the daemon runs.
	added := gm.AddMessage(rawMail("Alice Partner <"+alice+">", "Owen Owner <"+owner+">", "Contract", "<contract-q@partner.example>",
		time.Now(), question), fakegoogle.MessageOptions{})

	var msg faketg.Message
	waitFor(t, d, "the reply proposal in Telegram", func() bool {
		for _, m := range tg.SentTo(me.ID) {
			if m.Keyboard != nil && strings.Contains(m.Text, "Re: Contract") {
				msg = m
				return true
			}
		}
		return false
	})
	for _, want := range []string{alice, "Re: Contract", "the signed contract will be with you before Friday", "Owen"} {
		if !strings.Contains(msg.Text, want) {
			t.Errorf("the approval message lacks %q:\n%s", want, msg.Text)
		}
	}
	for _, m := range tg.SentTo(me.ID) {
		if strings.Contains(m.Text, "Lunch") {
			t.Errorf("five-day-old mail was pushed: %q", m.Text)
		}
	}
	// The drafting run read Alice's mail with its thread, and the model
	// saw it only as marked, untrusted data.
	var drafted bool
	for _, r := range model.Requests() {
		if strings.Contains(r.System, "Plan for: Draft the owner's reply") {
			drafted = true
			shown := false
			for _, m := range r.Messages {
				shown = shown || m.Role == "tool" && strings.Contains(m.Content, untrusted.Open) && strings.Contains(m.Content, "Legal needs it")
			}
			if !shown {
				t.Errorf("draft request without the delimited mail: %+v", r.Messages)
			}
		}
	}
	if !drafted {
		t.Fatal("no draft request reached the model")
	}
	if n := len(gm.Sent()); n != 0 {
		t.Fatalf("%d mails sent before any approval", n)
	}
	// The owner asks why: every factor of the decision, and what came of it.
	if out, errOut, code := h.run(t, "", "explain", added.ID); code != 0 {
		t.Errorf("explain %s: %d %s", added.ID, code, errOut)
	} else {
		for _, want := range []string{"Triage: respond", "Factors:", "vip", "configured: " + alice, "addressed to you", "Proposal ", "Re: Contract"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
	}

	send := ""
	for _, row := range msg.Keyboard {
		for _, b := range row {
			if strings.Contains(b.Text, "Send") {
				send = b.CallbackData
			}
		}
	}
	if send == "" {
		t.Fatalf("no Send button: %+v", msg.Keyboard)
	}
	tg.Press(me, me.ID, msg.ID, send)
	waitFor(t, d, "the approved reply at Gmail", func() bool { return len(gm.Sent()) > 0 })
	waitFor(t, d, "the Telegram message showing the outcome without buttons", func() bool {
		cur, _ := tg.Message(me.ID, msg.ID)
		return cur.Keyboard == nil && strings.Contains(cur.Text, "Sent")
	})

	// Another collection pass sees the sent reply in the thread; nothing
	// is proposed or sent again.
	if out, errOut, code := h.run(t, "", "collect", "gmail"); code != 0 {
		t.Fatalf("collect gmail: %d %s %s", code, out, errOut)
	}
	out, _, _ := h.run(t, "", "proposals", "--json")
	var props []map[string]any
	if err := json.Unmarshal([]byte(out), &props); err != nil {
		t.Fatalf("proposals --json: %v\n%s", err, out)
	}
	executed := 0
	for _, p := range props {
		if p["state"] == "executed" {
			executed++
		}
		if p["state"] == "pending" {
			t.Errorf("a pending proposal after the reply: %v", p)
		}
	}
	if executed != 1 {
		t.Errorf("%d executed proposals, want 1: %s", executed, out)
	}

	sent := gm.Sent()
	if n, reqs := len(sent), gm.CountRequests("POST", "/gmail/v1/users/me/messages/send"); n != 1 || reqs != 1 {
		t.Fatalf("%d mails and %d send requests, want exactly 1 and 1", n, reqs)
	}
	hd := sent[0].Header
	if !strings.Contains(hd.Get("To"), alice) || hd.Get("Subject") != "Re: Contract" ||
		hd.Get("In-Reply-To") != "<contract-q@partner.example>" || !strings.Contains(hd.Get("References"), "<contract-q@partner.example>") {
		t.Errorf("reply headers: %v", hd)
	}
	if sent[0].RequestThreadID != added.ThreadID {
		t.Errorf("sent in thread %q, want Alice's %q", sent[0].RequestThreadID, added.ThreadID)
	}
	if got := textBody(t, sent[0].Raw); strings.TrimSpace(got) != draft {
		t.Errorf("sent body\n%q\nwant the approved draft\n%q", got, draft)
	}
	for _, m := range tg.Sent() {
		if m.ChatID != me.ID {
			t.Errorf("a message went to chat %d", m.ChatID)
		}
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v\n%s", err, d.stderr.String())
	}
	if strings.Contains(d.stderr.String(), tgToken) || strings.Contains(d.stderr.String(), "sk-story") || strings.Contains(d.stderr.String(), tok.RefreshToken) {
		t.Error("a secret appeared in the daemon's log")
	}
}

// waitFor polls cond for up to two minutes (collection runs every 10s; a
// loaded machine can be slow).
func waitFor(t *testing.T, d *daemonProc, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, d.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawMail is a plain RFC 5322 message as a mail server delivers it.
func rawMail(from, to, subject, messageID string, date time.Time, body string) []byte {
	return []byte("From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject + "\r\nDate: " + date.Format(time.RFC1123Z) +
		"\r\nMessage-ID: " + messageID + "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
		strings.ReplaceAll(body, "\n", "\r\n") + "\r\n")
}

// textBody decodes a sent single-part message's body, CRLF as LF.
func textBody(t *testing.T, raw []byte) string {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader = m.Body
	switch strings.ToLower(m.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
}
