package main

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
)

// TestTelegramPairThroughTheBinary: `omnibrain telegram pair` prints a
// one-time code; a stranger's guesses pair nobody and get no answer; the
// owner's /start CODE binds them, the proposal that waited for an owner
// reaches them, the used code pairs nobody else, and the pairing survives
// a restart.
func TestTelegramPairThroughTheBinary(t *testing.T) {
	h := newApprovalHome(t)
	const token = "556:pair-e2e-token"
	owner := faketg.User{ID: 4711, FirstName: "Owner"}
	stranger := faketg.User{ID: 666, FirstName: "Mallory"}
	tg := faketg.New(token)
	defer tg.Close()
	tg.OpenChat(owner.ID)
	tg.OpenChat(stranger.ID)
	h.env = append(h.env, "OMNIBRAIN_TELEGRAM_TOKEN="+token, "OMNIBRAIN_TELEGRAM_API_URL="+tg.URL())
	p := h.propose(t, "waiting for an owner")
	d := startDaemon(t, h.dir, h.env...)

	out, errOut, code := h.run(t, "", "telegram", "pair")
	m := regexp.MustCompile(`/start (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("telegram pair: %d %q %q", code, out, errOut)
	}
	pairCode := m[1]
	out, _, code = h.run(t, "", "telegram", "pair", "--json")
	var res struct {
		Code    string    `json:"code"`
		Expires time.Time `json:"expires"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Code == "" || res.Code == pairCode || !res.Expires.After(time.Now()) {
		t.Errorf("telegram pair --json: %d %v %q", code, err, out)
	}

	tg.SendText(stranger, "/start wrongcode2")
	tg.SendText(stranger, "what is in the owner's mail?")
	tg.SendText(owner, "/start "+pairCode)
	if !tg.WaitUntil(30*time.Second, func() bool {
		paired, shown := false, false
		for _, s := range tg.SentTo(owner.ID) {
			paired = paired || strings.HasPrefix(s.Text, "Paired.")
			shown = shown || (s.Keyboard != nil && strings.Contains(s.Keyboard[0][0].CallbackData, p.ID))
		}
		return paired && shown
	}) {
		t.Fatalf("the owner was not paired or never saw the proposal: %+v\n%s", tg.SentTo(owner.ID), d.stderr.String())
	}
	// The used code pairs nobody else.
	tg.SendText(stranger, "/start "+pairCode)
	tg.SendText(owner, "/status")
	if !tg.WaitUntil(30*time.Second, func() bool { return tg.PendingUpdates() == 0 && countText(tg, owner.ID, "Waiting for you") == 1 }) {
		t.Fatal("the owner's /status got no answer")
	}
	d.stop(t, syscall.SIGTERM)

	d2 := startDaemon(t, h.dir, h.env...)
	tg.SendText(owner, "/status")
	if !tg.WaitUntil(30*time.Second, func() bool { return countText(tg, owner.ID, "Waiting for you") == 2 }) {
		t.Fatalf("after a restart the owner is not paired any more\n%s", d2.stderr.String())
	}
	d2.stop(t, syscall.SIGTERM)
	if got := tg.SentTo(stranger.ID); len(got) != 0 {
		t.Errorf("the stranger got %d messages: %+v", len(got), got)
	}
	for _, s := range tg.Sent() {
		if s.ChatID != owner.ID {
			t.Errorf("a message went to chat %d", s.ChatID)
		}
	}
}

func countText(tg *faketg.Server, chatID int64, text string) int {
	n := 0
	for _, s := range tg.SentTo(chatID) {
		if strings.Contains(s.Text, text) {
			n++
		}
	}
	return n
}

// Without a bot token a pairing code can reach nobody: `telegram pair`
// fails and says what to set, rather than printing a code and exiting 0.
func TestTelegramPairWithoutTokenFails(t *testing.T) {
	env := map[string]string{"OMNIBRAIN_HOME": t.TempDir(), "OMNIBRAIN_LLM_PROVIDER": "none"}
	out, err := runInProcess(t, env, "telegram", "pair")
	var ue usageError
	if err == nil || errors.As(err, &ue) || strings.Contains(out, "/start") || !strings.Contains(err.Error(), "OMNIBRAIN_TELEGRAM_TOKEN") {
		t.Errorf("telegram pair: %v\n%s", err, out)
	}
	// Under --json: one error object, and no code that cannot be used.
	out, err = runInProcess(t, env, "telegram", "pair", "--json")
	var res jsonError
	if !errors.Is(err, errSilent) || json.Unmarshal([]byte(out), &res) != nil || !strings.Contains(res.Error.Message, "OMNIBRAIN_TELEGRAM_TOKEN") ||
		strings.Contains(out, "expires") {
		t.Errorf("telegram pair --json: %v\n%s", err, out)
	}
}
