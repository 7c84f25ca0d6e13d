package telegram

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Methods lists the parameters the fake accepts per method — taken from
// the Bot API specification (a test checks them against it). A parameter
// outside this list is refused, so a typo in the client shows up here
// instead of being silently ignored as Telegram would.
var Methods = map[string][]string{
	"getMe":                  {},
	"getUpdates":             {"offset", "limit", "timeout", "allowed_updates"},
	"sendMessage":            {"business_connection_id", "chat_id", "message_thread_id", "direct_messages_topic_id", "text", "parse_mode", "entities", "link_preview_options", "disable_notification", "protect_content", "allow_paid_broadcast", "message_effect_id", "suggested_post_parameters", "reply_parameters", "reply_markup"},
	"editMessageText":        {"business_connection_id", "chat_id", "message_id", "inline_message_id", "text", "parse_mode", "entities", "link_preview_options", "reply_markup"},
	"editMessageReplyMarkup": {"business_connection_id", "chat_id", "message_id", "inline_message_id", "reply_markup"},
	"answerCallbackQuery":    {"callback_query_id", "text", "show_alert", "url", "cache_time"},
	"setMyCommands":          {"commands", "scope", "language_code"},
	"deleteWebhook":          {"drop_pending_updates"},
}

var required = map[string][]string{
	"sendMessage":         {"chat_id", "text"},
	"answerCallbackQuery": {"callback_query_id"},
	"setMyCommands":       {"commands"},
}

func checkParams(method string, p Params) *apiError {
	known, ok := Methods[method]
	if !ok {
		return &apiError{code: 404, desc: "Not Found: method not found"}
	}
	for name := range p {
		found := false
		for _, k := range known {
			if k == name {
				found = true
				break
			}
		}
		if !found {
			return &apiError{code: 400, desc: fmt.Sprintf("Bad Request: unexpected parameter %q for %s", name, method)}
		}
	}
	for _, name := range required[method] {
		if _, ok := p[name]; !ok {
			return &apiError{code: 400, desc: fmt.Sprintf("Bad Request: parameter %q is required", name)}
		}
	}
	return nil
}

func intParam(p Params, name string) (int64, *apiError) {
	v, ok := p[name]
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, &apiError{code: 400, desc: fmt.Sprintf("Bad Request: %s must be an integer, got %q", name, v)}
	}
	return n, nil
}

// getUpdates confirms updates below offset, then answers at once if any
// are pending, else waits up to timeout seconds for one (long polling).
func (s *Server) getUpdates(r *http.Request, p Params) (any, *apiError) {
	offset, aerr := intParam(p, "offset")
	if aerr != nil {
		return nil, aerr
	}
	limit, aerr := intParam(p, "limit")
	if aerr != nil {
		return nil, aerr
	}
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, aerr := intParam(p, "timeout")
	if aerr != nil {
		return nil, aerr
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		s.pollCalls++
		offset := offset
		if offset > s.nextUpd {
			// An offset past every id issued since the ids were reseeded
			// confirms nothing: Telegram hands out the lower ids regardless
			// (go-telegram-bot-api/telegram-bot-api#156).
			offset = 0
		}
		if offset > 0 {
			s.offset = offset
			kept := s.updates[:0]
			for _, u := range s.updates {
				if u.id >= offset || u.forced {
					kept = append(kept, u)
				}
			}
			s.updates = kept
		}
		var out []json.RawMessage
		rest := s.updates[:0:0]
		for _, u := range s.updates {
			if int64(len(out)) < limit && (u.id >= offset || u.forced) {
				out = append(out, u.raw)
				s.delivered = append(s.delivered, pending{id: u.id, raw: u.raw})
				if u.forced {
					continue // a duplicate is delivered once
				}
			}
			rest = append(rest, u)
		}
		s.updates = rest
		ch := s.changed
		s.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return []json.RawMessage{}, nil
		case <-r.Context().Done():
			return nil, &apiError{code: 499, desc: "client went away"}
		}
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			return []json.RawMessage{}, nil
		}
	}
}

// keyboard decodes reply_markup: it must be a JSON string of an
// InlineKeyboardMarkup whose buttons carry at most 64 bytes of data.
func keyboard(p Params) ([][]Button, bool, *apiError) {
	raw, ok := p["reply_markup"]
	if !ok {
		return nil, false, nil
	}
	var m struct {
		InlineKeyboard *[][]Button `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, false, &apiError{code: 400, desc: "Bad Request: can't parse reply keyboard markup JSON object"}
	}
	if m.InlineKeyboard == nil {
		return nil, true, nil // another keyboard kind (ForceReply, ...): no inline buttons
	}
	for _, row := range *m.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				return nil, false, &apiError{code: 400, desc: "Bad Request: text buttons are unallowed in the inline keyboard"}
			}
			if len(b.CallbackData) > 64 {
				return nil, false, &apiError{code: 400, desc: "Bad Request: BUTTON_DATA_INVALID"}
			}
		}
	}
	if len(*m.InlineKeyboard) == 0 {
		return nil, true, nil
	}
	return *m.InlineKeyboard, true, nil
}

func (s *Server) checkText(text, parseMode string) *apiError {
	if strings.TrimSpace(text) == "" {
		return &apiError{code: 400, desc: "Bad Request: message text is empty"}
	}
	visible := text
	switch parseMode {
	case "":
	case "HTML":
		v, err := parseHTML(text)
		if err != nil {
			return &apiError{code: 400, desc: "Bad Request: can't parse entities: " + err.Error()}
		}
		visible = v
	default:
		return &apiError{code: 400, desc: "Bad Request: unsupported parse_mode " + parseMode}
	}
	if utf16Len(visible) > 4096 {
		return &apiError{code: 400, desc: "Bad Request: message is too long"}
	}
	return nil
}

func (s *Server) sendMessage(p Params) (any, *apiError) {
	chatID, aerr := intParam(p, "chat_id")
	if aerr != nil {
		return nil, aerr
	}
	if aerr := s.checkText(p["text"], p["parse_mode"]); aerr != nil {
		return nil, aerr
	}
	kb, _, aerr := keyboard(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.chats[chatID] {
		return nil, &apiError{code: 400, desc: "Bad Request: chat not found"}
	}
	m := &Message{ID: s.nextMsg, ChatID: chatID, FromBot: true, Text: p["text"], ParseMode: p["parse_mode"], Keyboard: kb, Date: s.now().Unix()}
	s.nextMsg++
	s.storeLocked(m)
	s.sent = append(s.sent, m)
	s.notifyLocked()
	return s.messageJSONLocked(m), nil
}

func (s *Server) editMessage(p Params, withText bool) (any, *apiError) {
	if p["inline_message_id"] != "" {
		return nil, &apiError{code: 400, desc: "Bad Request: inline messages are not supported by this fake"}
	}
	chatID, aerr := intParam(p, "chat_id")
	if aerr != nil {
		return nil, aerr
	}
	msgID, aerr := intParam(p, "message_id")
	if aerr != nil {
		return nil, aerr
	}
	if withText {
		if aerr := s.checkText(p["text"], p["parse_mode"]); aerr != nil {
			return nil, aerr
		}
	}
	kb, _, aerr := keyboard(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[chatID][int(msgID)]
	if m == nil {
		return nil, &apiError{code: 400, desc: "Bad Request: message to edit not found"}
	}
	if !m.FromBot {
		return nil, &apiError{code: 400, desc: "Bad Request: message can't be edited"}
	}
	text, mode := m.Text, m.ParseMode
	if withText {
		text, mode = p["text"], p["parse_mode"]
	}
	// Editing without reply_markup removes the inline keyboard.
	if visibleText(text, mode) == visibleText(m.Text, m.ParseMode) && sameKeyboard(kb, m.Keyboard) {
		return nil, &apiError{code: 400, desc: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"}
	}
	m.Text, m.ParseMode, m.Keyboard = text, mode, kb
	m.Edits++
	s.notifyLocked()
	return s.messageJSONLocked(m), nil
}

func sameKeyboard(a, b [][]Button) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func (s *Server) answerCallbackQuery(p Params) (any, *apiError) {
	id := p["callback_query_id"]
	s.mu.Lock()
	defer s.mu.Unlock()
	answered, known := s.queries[id]
	if !known || answered {
		return nil, &apiError{code: 400, desc: "Bad Request: query is too old and response timeout expired or query ID is invalid"}
	}
	if utf16Len(p["text"]) > 200 {
		return nil, &apiError{code: 400, desc: "Bad Request: MESSAGE_TOO_LONG"}
	}
	s.queries[id] = true
	s.answers = append(s.answers, Answer{CallbackQueryID: id, Text: p["text"], ShowAlert: p["show_alert"] == "true"})
	s.notifyLocked()
	return true, nil
}

var commandRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

func (s *Server) setMyCommands(p Params) (any, *apiError) {
	var cmds []map[string]string
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		return nil, &apiError{code: 400, desc: "Bad Request: can't parse commands JSON"}
	}
	for _, c := range cmds {
		if !commandRE.MatchString(c["command"]) {
			return nil, &apiError{code: 400, desc: "Bad Request: BOT_COMMAND_INVALID"}
		}
		if d := utf16Len(c["description"]); d < 1 || d > 256 {
			return nil, &apiError{code: 400, desc: "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID"}
		}
	}
	s.mu.Lock()
	s.commands = cmds
	s.mu.Unlock()
	return true, nil
}
