package telegram_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/notify"
)

// TestEveryBotAPICallIsInTheSpec drives the bot through pairing-free
// commands, a proposal, every button and a decision, then checks every
// method and parameter it sent against the Bot API specification.
func TestEveryBotAPICallIsInTheSpec(t *testing.T) {
	spec := faketg.LoadSpec(t)
	h := start(t, setup{ownerID: owner.ID, search: &searcher{}})
	p := h.proposeEmail("Body")
	m := h.shown(p)
	for _, label := range []string{"Edit", "Redraft", "Snooze"} {
		_, q := h.tg.Press(owner, owner.ID, m.ID, data(m, label))
		h.answered(q)
	}
	h.tg.SendText(owner, "/status")
	h.tg.SendText(owner, "/search budget")
	// An fyi notification goes out without a sound (disable_notification).
	h.queue.Notify(context.Background(), notify.Message{Level: notify.FYI, Text: "by the way"})
	h.wait("the fyi", func() bool { return h.sentCount("by the way") == 1 })
	h.tg.Press(stranger, stranger.ID, 1, "junk")
	h.wait("edit to snoozed", func() bool {
		cur, _ := h.tg.Message(owner.ID, m.ID)
		return strings.Contains(cur.Text, "Snoozed")
	})
	h.wait("all answered", func() bool { return len(h.tg.Unanswered()) == 0 && h.tg.PendingUpdates() == 0 })

	used := map[string]map[string]bool{}
	for _, c := range h.tg.Calls() {
		if used[c.Method] == nil {
			used[c.Method] = map[string]bool{}
		}
		for name := range c.Params {
			used[c.Method][name] = true
		}
	}
	var methods []string
	for method, params := range used {
		methods = append(methods, method)
		fields, ok := spec[method]
		if !ok {
			t.Errorf("the bot calls %s, which is not in the Bot API", method)
			continue
		}
		for name := range params {
			if _, ok := fields[name]; !ok {
				t.Errorf("the bot sends %s.%s, which is not in the Bot API", method, name)
			}
		}
		for name, req := range fields {
			if req && !params[name] {
				t.Errorf("the bot calls %s without the required %s", method, name)
			}
		}
	}
	// The scenario exercised the optional parameters the bot relies on.
	for _, mp := range []string{"sendMessage.parse_mode", "sendMessage.reply_markup", "sendMessage.disable_notification",
		"sendMessage.link_preview_options", "editMessageText.reply_markup", "answerCallbackQuery.text", "getUpdates.offset",
		"getUpdates.allowed_updates", "setMyCommands.commands"} {
		method, param, _ := strings.Cut(mp, ".")
		if !used[method][param] {
			t.Errorf("the scenario never sent %s", mp)
		}
	}
	sort.Strings(methods)
	// Make sure the scenario covered what the bot uses.
	want := "answerCallbackQuery editMessageText getMe getUpdates sendMessage setMyCommands"
	if got := strings.Join(methods, " "); got != want {
		t.Errorf("methods used %q, want %q", got, want)
	}
}
