package telegram_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/telegram"
)

func FuzzParseCallback(f *testing.F) {
	for _, s := range []string{"send:abcdefghij:0123456789ab", "reject:zzzzzzzzzz:ffffffffffff", "", ":", "send::", "send:abc:def",
		"send:abcdefghij:0123456789ab:extra", "SEND:abcdefghij:0123456789ab", "snooze:abcdefgh1j:0123456789ab", "edit:abcdefghij:0123456789aB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		cb, err := telegram.ParseCallback(data)
		if err != nil {
			return
		}
		// Whatever parses is exactly what the bot itself would produce.
		if cb.String() != data {
			t.Fatalf("%q parsed to %+v, which encodes as %q", data, cb, cb.String())
		}
		if !approval.ValidID(cb.ProposalID) || len(data) > 64 {
			t.Fatalf("accepted %q", data)
		}
	})
}

// FuzzHandleUpdate feeds arbitrary updates to the bot: it must never
// panic, never send anything to anyone but the owner, and only the
// owner's own presses may decide the proposal.
func FuzzHandleUpdate(f *testing.F) {
	seed := func(v any) {
		b, _ := json.Marshal(v)
		f.Add(string(b))
	}
	msg := func(from, chat int64, text string) map[string]any {
		return map[string]any{"update_id": 1, "message": map[string]any{"message_id": 5, "date": 1, "from": map[string]any{"id": from, "is_bot": false, "first_name": "x"},
			"chat": map[string]any{"id": chat, "type": "private"}, "text": text}}
	}
	press := func(from, chat int64, data string, date int) map[string]any {
		return map[string]any{"update_id": 2, "callback_query": map[string]any{"id": "q1", "from": map[string]any{"id": from, "first_name": "x"}, "chat_instance": "c",
			"data": data, "message": map[string]any{"message_id": 5, "date": date, "chat": map[string]any{"id": chat, "type": "private"}}}}
	}
	seed(msg(owner.ID, owner.ID, "/help"))
	seed(msg(owner.ID, owner.ID, "/quiet 3h"))
	seed(msg(owner.ID, owner.ID, "/search x"))
	seed(msg(stranger.ID, stranger.ID, "/start 123"))
	seed(msg(stranger.ID, stranger.ID, "hello"))
	seed(msg(owner.ID, -100, "/status"))
	seed(press(owner.ID, owner.ID, "reject:PROPOSAL", 1))
	seed(press(stranger.ID, owner.ID, "send:PROPOSAL", 1))
	seed(press(owner.ID, owner.ID, "send:PROPOSAL", 0))
	seed(press(owner.ID, owner.ID, "junk", 1))
	f.Add(`{"update_id":3,"message":{"message_id":1,"date":1,"chat":{"id":1001,"type":"private"}}}`)
	f.Add(`{"update_id":4,"callback_query":{"id":"q","from":{"id":1001},"data":"send:x"}}`)
	f.Add(`{"update_id":5,"edited_message":{"message_id":1}}`)

	h := start(f, setup{ownerID: owner.ID, noRunning: true})
	p := h.propose("fuzz")
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw string) {
		raw = strings.ReplaceAll(raw, "PROPOSAL", fmt.Sprintf("%s:%s", p.ID, p.PayloadHash[:12]))
		var upd models.Update
		if err := json.Unmarshal([]byte(raw), &upd); err != nil {
			return
		}
		before := len(h.tg.Calls())
		h.bot.HandleUpdate(ctx, &upd)
		answered := false
		for _, c := range h.tg.Calls()[before:] {
			if id, ok := c.Params["chat_id"]; ok && id != fmt.Sprint(owner.ID) {
				t.Fatalf("%s to chat %s for update %s", c.Method, id, raw)
			}
			answered = answered || c.Method == "answerCallbackQuery"
		}
		if upd.CallbackQuery != nil && !answered {
			t.Fatalf("a button press was not answered: %s", raw)
		}
		cur, _ := h.gate.Get(ctx, p.ID)
		if cur.State != approval.StatePending && cur.DecidedBy != fmt.Sprintf("telegram:%d", owner.ID) {
			t.Fatalf("decided by %q after %s", cur.DecidedBy, raw)
		}
	})
}
