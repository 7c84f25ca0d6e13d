package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/omnibrain/omnibrain/memory"
)

// Memory is what omnibrain remembers about the owner, as /memory and the
// buttons of a suggested fact use it (*memory.Memory).
type Memory interface {
	List(ctx context.Context, states ...memory.State) ([]*memory.Fact, error)
	Forget(ctx context.Context, id int64, why string) (*memory.Fact, error)
	Keep(ctx context.Context, id int64) (*memory.AddResult, error)
	Drop(ctx context.Context, id int64) (*memory.Fact, error)
}

// Memory buttons carry "mem:ACTION:ID" (at most 30 bytes).
const memPrefix = "mem:"

const (
	memForget = "forget"
	memKeep   = "keep"
	memDrop   = "drop"
)

// Bounds of /memory: facts with a forget button, suggestions shown.
const (
	maxForgetButtons   = 30
	maxSuggestionsShow = 5
)

func memData(action string, id int64) string {
	return memPrefix + action + ":" + strconv.FormatInt(id, 10)
}

// parseMemData decodes a memory button strictly (the data comes from outside).
func parseMemData(data string) (string, int64, bool) {
	rest, ok := strings.CutPrefix(data, memPrefix)
	if !ok || len(data) > 64 {
		return "", 0, false
	}
	action, num, ok := strings.Cut(rest, ":")
	id, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || id <= 0 || strconv.FormatInt(id, 10) != num {
		return "", 0, false
	}
	switch action {
	case memForget, memKeep, memDrop:
		return action, id, true
	}
	return "", 0, false
}

// suggestionButtons are a suggested fact's ✅ Keep / ❌ Drop.
func suggestionButtons(id int64) [][]button {
	return [][]button{{{"✅ Keep", memData(memKeep, id)}, {"❌ Drop", memData(memDrop, id)}}}
}

// suggestionID reads the fact id of a suggestion's notification key.
func suggestionID(key string) (int64, bool) {
	n, ok := strings.CutPrefix(key, memory.SuggestionKeyPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(n, 10, 64)
	return id, err == nil && id > 0
}

// showMemory answers /memory: the facts by category with a forget
// button each, then the suggestions waiting with Keep and Drop.
func (b *Bot) showMemory(ctx context.Context) {
	if b.o.Memory == nil {
		b.reply(ctx, "Memory is not available in this setup.")
		return
	}
	html, kb, err := b.memoryList(ctx)
	if err != nil {
		b.reply(ctx, "Could not read what I remember: "+userError(err))
		return
	}
	if _, err := b.send(ctx, html, kb, false); err != nil {
		b.log.Warn("telegram: could not show memory", "err", err)
		return
	}
	pending, err := b.o.Memory.List(ctx, memory.Pending)
	if err != nil {
		return
	}
	for i, f := range pending {
		if i == maxSuggestionsShow {
			b.reply(ctx, fmt.Sprintf("…and %d more suggestions: omnibrain memory --pending lists them.", len(pending)-maxSuggestionsShow))
			break
		}
		if _, err := b.send(ctx, suggestionHTML(f), suggestionButtons(f.ID), false); err != nil {
			return
		}
	}
}

// memoryList renders the facts and their forget buttons (the newest
// facts get buttons when there are more than fit).
func (b *Bot) memoryList(ctx context.Context) (string, [][]button, error) {
	facts, err := b.o.Memory.List(ctx, memory.Active)
	if err != nil {
		return "", nil, err
	}
	if len(facts) == 0 {
		return "I remember nothing about you yet. Tell me “remember that …” and I will.", nil, nil
	}
	var sb strings.Builder
	sb.WriteString("<b>What I remember about you</b>\n")
	for _, c := range memory.Categories {
		first := true
		for _, f := range facts {
			if f.Category != c {
				continue
			}
			if first {
				fmt.Fprintf(&sb, "\n<b>%s</b>\n", esc(c.Title()))
				first = false
			}
			fmt.Fprintf(&sb, "<code>%s</code> %s\n", f.Ref(), esc(f.Text))
		}
	}
	sb.WriteString("\nPress 🗑 to forget a fact, or write “forget that …”.")
	var kb [][]button
	from := max(0, len(facts)-maxForgetButtons)
	var row []button
	for _, f := range facts[from:] {
		row = append(row, button{"🗑 " + f.Ref(), memData(memForget, f.ID)})
		if len(row) == 3 {
			kb, row = append(kb, row), nil
		}
	}
	if len(row) > 0 {
		kb = append(kb, row)
	}
	return sb.String(), kb, nil
}

func suggestionHTML(f *memory.Fact) string {
	return fmt.Sprintf("💡 Remember this about you?\n<b>%s</b>\nSuggested from %s (<code>%s</code>). It is used nowhere until you keep it.",
		esc(f.Text), esc(f.PublicSource()), f.Ref())
}

// onMemoryCallback handles a memory button of the owner's.
func (b *Bot) onMemoryCallback(ctx context.Context, queryID string, chatID int64, msgID int, data string) {
	action, id, ok := parseMemData(data)
	if !ok || b.o.Memory == nil {
		b.answer(ctx, queryID, "This button is not valid.")
		return
	}
	ref := memory.Ref(id)
	switch action {
	case memForget:
		f, err := b.o.Memory.Forget(ctx, id, "forgotten in Telegram")
		switch {
		case errors.Is(err, memory.ErrNotFound):
			b.answer(ctx, queryID, ref+" is already gone.")
		case err != nil:
			b.answer(ctx, queryID, "Nothing changed: "+truncate(userError(err), 150))
			return
		default:
			b.answer(ctx, queryID, "Forgotten: "+truncate(f.Text, 150))
		}
		// The list is shown again as it is now.
		if html, kb, err := b.memoryList(ctx); err == nil {
			b.editMessage(ctx, chatID, msgID, html, kb)
		}
	case memKeep, memDrop:
		var err error
		var outcome string
		if action == memKeep {
			_, err = b.o.Memory.Keep(ctx, id)
			outcome = "✅ Kept: I will remember it."
		} else {
			_, err = b.o.Memory.Drop(ctx, id)
			outcome = "❌ Dropped: I will not remember it."
		}
		switch {
		case errors.Is(err, memory.ErrDecided), errors.Is(err, memory.ErrNotFound):
			b.answer(ctx, queryID, "Nothing changed: this suggestion was already answered.")
			b.editMessage(ctx, chatID, msgID, "This suggestion was already answered ("+ref+").", nil)
		case err != nil:
			b.answer(ctx, queryID, "Nothing changed: "+truncate(userError(err), 150))
		default:
			b.answer(ctx, queryID, strings.SplitN(outcome, ":", 2)[0])
			b.editMessage(ctx, chatID, msgID, outcome+" ("+ref+")", nil)
		}
	}
}

// editMessage replaces a message's text and buttons (nil: none).
func (b *Bot) editMessage(ctx context.Context, chatID int64, msgID int, html string, kb [][]button) {
	if msgID == 0 {
		return
	}
	rm := &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	if kb != nil {
		rm = markup(kb)
	}
	html = splitHTML(html, MaxMessage)[0]
	_, err := b.call(ctx, func(ctx context.Context) (any, error) {
		return b.tg.EditMessageText(ctx, &tgbot.EditMessageTextParams{ChatID: chatID, MessageID: msgID, Text: html, ParseMode: models.ParseModeHTML, ReplyMarkup: rm, LinkPreviewOptions: noPreview()})
	})
	if err != nil && !strings.Contains(err.Error(), "message is not modified") && ctx.Err() == nil {
		b.log.Warn("telegram: could not edit a memory message", "err", err)
	}
}
