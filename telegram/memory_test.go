package telegram_test

import (
	"context"
	"strings"
	"testing"

	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/memory"
)

// lastWith waits for a message to the owner containing text.
func (h *harness) lastWith(text string) faketg.Message {
	h.t.Helper()
	var msg faketg.Message
	h.wait("a message with "+text, func() bool {
		for _, m := range h.tg.SentTo(owner.ID) {
			if strings.Contains(m.Text, text) {
				msg = m
			}
		}
		return msg.ID != 0
	})
	return msg
}

// /memory lists the facts with a forget button each; a press forgets the
// fact and shows the list again; a stranger's press changes nothing.
func TestMemoryCommandForgetButtons(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, memory: true})
	m := h.memory
	ctx := context.Background()
	for _, s := range []string{"My sister Ana lives in Lisbon", "I prefer aisle seats"} {
		if _, err := m.Add(ctx, memory.AddRequest{Text: s}); err != nil {
			t.Fatal(err)
		}
	}
	h.tg.SendText(owner, "/memory")
	list := h.lastWith("What I remember about you")
	if !strings.Contains(list.Text, "<code>m1</code> My sister Ana lives in Lisbon") || !strings.Contains(list.Text, "Preferences") {
		t.Fatalf("list:\n%s", list.Text)
	}
	forget := data(list, "🗑 m1")
	if forget == "" {
		t.Fatalf("no forget button: %+v", list.Keyboard)
	}
	_, qid := h.tg.Press(stranger, stranger.ID, list.ID, forget)
	if a := h.answered(qid); a != "Not available." {
		t.Fatalf("stranger answered %q", a)
	}
	if fs, _ := m.List(ctx); len(fs) != 2 {
		t.Fatal("a stranger's press forgot a fact")
	}
	_, qid = h.tg.Press(owner, owner.ID, list.ID, forget)
	if a := h.answered(qid); !strings.Contains(a, "Forgotten: My sister Ana") {
		t.Fatalf("answer %q", a)
	}
	if fs, _ := m.List(ctx); len(fs) != 1 || fs[0].Text != "I prefer aisle seats" {
		t.Fatalf("facts after forget: %+v", fs)
	}
	h.wait("the list shown again", func() bool {
		cur, _ := h.tg.Message(owner.ID, list.ID)
		return !strings.Contains(cur.Text, "Lisbon") && strings.Contains(cur.Text, "aisle seats")
	})
}

// A suggested fact reaches the owner with ✅ Keep and ❌ Drop; Keep makes
// it a fact, and a second press changes nothing.
func TestSuggestionKeepAndDrop(t *testing.T) {
	h := start(t, setup{ownerID: owner.ID, memory: true})
	m := h.memory
	ctx := context.Background()
	s, _, err := m.Suggest(ctx, "My dentist is Dr Gomes", memory.Notes, "gmail:m1", "Appointment reminder")
	if err != nil {
		t.Fatal(err)
	}
	msg := h.lastWith("My dentist is Dr Gomes")
	keep, drop := data(msg, "Keep"), data(msg, "Drop")
	if keep == "" || drop == "" || !strings.Contains(msg.Text, "Appointment reminder (gmail:m1)") {
		t.Fatalf("suggestion message %+v", msg)
	}
	_, qid := h.tg.Press(owner, owner.ID, msg.ID, keep)
	if a := h.answered(qid); a != "✅ Kept" {
		t.Fatalf("answer %q", a)
	}
	if fs, _ := m.List(ctx); len(fs) != 1 || fs[0].ID != s.ID {
		t.Fatalf("facts %+v", fs)
	}
	h.wait("the buttons removed", func() bool {
		cur, _ := h.tg.Message(owner.ID, msg.ID)
		return cur.Keyboard == nil || len(cur.Keyboard) == 0
	})
	_, qid = h.tg.Press(owner, owner.ID, msg.ID, drop)
	if a := h.answered(qid); !strings.Contains(a, "already answered") {
		t.Fatalf("second press answered %q", a)
	}
	if fs, _ := m.List(ctx); len(fs) != 1 {
		t.Fatal("a late Drop changed the kept fact")
	}
	// /memory shows waiting suggestions with their buttons too.
	d, _, _ := m.Suggest(ctx, "My PIN is 0000", memory.Notes, "gmail:m2", "")
	h.tg.SendText(owner, "/memory")
	h.wait("the suggestion in /memory", func() bool {
		n := 0
		for _, x := range h.tg.SentTo(owner.ID) {
			if strings.Contains(x.Text, "My PIN is 0000") && data(x, "Drop") != "" {
				n++
			}
		}
		return n == 2 // the notification and /memory's
	})
	var last faketg.Message
	for _, x := range h.tg.SentTo(owner.ID) {
		if strings.Contains(x.Text, "My PIN is 0000") {
			last = x
		}
	}
	_, qid = h.tg.Press(owner, owner.ID, last.ID, data(last, "Drop"))
	h.answered(qid)
	if p, _ := m.List(ctx, memory.Pending); len(p) != 0 {
		t.Fatalf("pending after drop: %+v (%d)", p, d.ID)
	}
}
