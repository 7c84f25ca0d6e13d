// Package telegram is an httptest fake of the Telegram Bot API, faithful
// on the wire for the methods omnibrain uses: POST {root}/bot{token}/{method}
// with multipart form data (reply_markup as a JSON string), answers in
// {"ok":…,"result":…} or {"ok":false,"error_code":…,"description":…,
// "parameters":{"retry_after":…}}, long-polled getUpdates honouring offset
// and timeout, callback queries whose message has a non-zero date, HTML
// entity parsing and the 4,096-character limit. Tests script updates
// (owner text, /start CODE, button presses, strangers, duplicates) and read
// back everything the bot sent, edited and answered.
package telegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Params is one request's form fields.
type Params map[string]string

// Call is one request the bot made.
type Call struct {
	Method string
	Params Params
	Time   time.Time
}

// Button is one inline keyboard button.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
}

// Message is a message in a chat, as the fake holds it now.
type Message struct {
	ID        int
	ChatID    int64
	FromBot   bool
	Text      string // as sent (HTML source for parse_mode HTML)
	ParseMode string
	Keyboard  [][]Button // nil when the message has no inline keyboard
	Date      int64
	Edits     int
}

// Answer is an answerCallbackQuery.
type Answer struct {
	CallbackQueryID string
	Text            string
	ShowAlert       bool
}

// Failure is a scripted error answer.
type Failure struct {
	Code        int    // error_code and HTTP status
	Description string // e.g. "Too Many Requests: retry after 1"
	RetryAfter  int    // parameters.retry_after (429)
}

// Server is the fake. Create it with New; Close it when done.
type Server struct {
	Token string
	// BotID is the bot's user id (the token's prefix).
	BotID int64

	srv *httptest.Server
	now func() time.Time

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	updates   []pending
	delivered []pending // every update handed out, for Redeliver
	nextUpd   int64
	nextMsg   int
	chats     map[int64]bool
	messages  map[int64]map[int]*Message
	sent      []*Message // every sendMessage, in order
	calls     []Call
	answers   []Answer
	queries   map[string]bool // callback query id -> answered
	commands  []map[string]string
	failures  map[string][]Failure
	before    map[string]func()
	down      bool
	pollCalls int
	offset    int64
}

type pending struct {
	id     int64
	raw    json.RawMessage
	forced bool // delivered once whatever the offset (a duplicate)
}

// New starts a fake for the bot with token ("123456:ABC…").
func New(token string) *Server {
	id, _ := strconv.ParseInt(strings.SplitN(token, ":", 2)[0], 10, 64)
	s := &Server{
		Token: token, BotID: id, now: time.Now,
		changed:  make(chan struct{}),
		nextUpd:  100,
		nextMsg:  1,
		chats:    map[int64]bool{},
		messages: map[int64]map[int]*Message{},
		queries:  map[string]bool{},
		failures: map[string][]Failure{},
		before:   map[string]func(){},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the API root to give the client (bot.WithServerURL).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.down = true
	s.notifyLocked()
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitUntil waits until cond (called with the server unlocked) is true or
// timeout passes; it reports whether cond became true.
func (s *Server) WaitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

// Changed returns a channel closed at the next change (a request served,
// an update queued).
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// SetDown makes the server unreachable (every connection is closed
// without an answer) or reachable again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.notifyLocked()
	s.mu.Unlock()
	if down {
		s.srv.CloseClientConnections()
	}
}

// BeforeAnswer runs fn once, on the next call of method, after the call
// took effect and before its answer is written: what happens while the
// answer is on its way.
func (s *Server) BeforeAnswer(method string, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before[method] = fn
}

// Fail makes the next times calls of method fail with f.
func (s *Server) Fail(method string, f Failure, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < times; i++ {
		s.failures[method] = append(s.failures[method], f)
	}
}

// User is a Telegram user writing to the bot.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

type chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	FirstName string `json:"first_name,omitempty"`
	Title     string `json:"title,omitempty"`
}

type msgJSON struct {
	MessageID      int             `json:"message_id"`
	From           *User           `json:"from,omitempty"`
	Date           int64           `json:"date"`
	Chat           chat            `json:"chat"`
	Text           string          `json:"text,omitempty"`
	Entities       []entity        `json:"entities,omitempty"`
	ReplyToMessage *msgJSON        `json:"reply_to_message,omitempty"`
	ForwardOrigin  map[string]any  `json:"forward_origin,omitempty"`
	ReplyMarkup    json.RawMessage `json:"reply_markup,omitempty"`
}

type entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

func (s *Server) pushLocked(v map[string]any, forcedID int64) int64 {
	id := forcedID
	if id == 0 {
		id = s.nextUpd
		s.nextUpd++
	}
	v["update_id"] = id
	raw, _ := json.Marshal(v)
	s.updates = append(s.updates, pending{id: id, raw: raw, forced: forcedID != 0})
	s.notifyLocked()
	return id
}

// OpenChat marks a user as having started a chat with the bot, so the bot
// may message them (Telegram answers "chat not found" otherwise).
func (s *Server) OpenChat(userID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[userID] = true
}

// SendText queues a private message from user to the bot and returns its
// update id. Commands ("/start CODE") get a bot_command entity, as Telegram
// sends them.
func (s *Server) SendText(from User, text string) int64 {
	return s.sendText(from, chat{ID: from.ID, Type: "private", FirstName: from.FirstName}, text, 0)
}

// SendReply is SendText replying to one of the chat's messages.
func (s *Server) SendReply(from User, text string, replyTo int) int64 {
	return s.sendText(from, chat{ID: from.ID, Type: "private", FirstName: from.FirstName}, text, replyTo)
}

// SendGroupText queues a message from user in a group chat.
func (s *Server) SendGroupText(from User, groupID int64, text string) int64 {
	return s.sendText(from, chat{ID: groupID, Type: "group", Title: "a group"}, text, 0)
}

// SendForwarded queues a message user forwarded into their private chat
// with the bot: origin's text, with a forward_origin of type "user".
func (s *Server) SendForwarded(from, origin User, text string) int64 {
	return s.send(from, chat{ID: from.ID, Type: "private", FirstName: from.FirstName}, text, 0,
		map[string]any{"type": "user", "date": s.now().Add(-time.Hour).Unix(), "sender_user": origin})
}

func (s *Server) sendText(from User, c chat, text string, replyTo int) int64 {
	return s.send(from, c, text, replyTo, nil)
}

func (s *Server) send(from User, c chat, text string, replyTo int, forwardOrigin map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[c.ID] = true
	m := &msgJSON{MessageID: s.nextMsg, From: &from, Date: s.now().Unix(), Chat: c, Text: text, ForwardOrigin: forwardOrigin}
	s.nextMsg++
	if strings.HasPrefix(text, "/") {
		cmd, _, _ := strings.Cut(text, " ")
		m.Entities = []entity{{Type: "bot_command", Offset: 0, Length: utf16Len(cmd)}}
	}
	if replyTo != 0 {
		if orig := s.messages[c.ID][replyTo]; orig != nil {
			m.ReplyToMessage = s.messageJSONLocked(orig)
		}
	}
	s.storeLocked(&Message{ID: m.MessageID, ChatID: c.ID, Text: text, Date: m.Date})
	return s.pushLocked(map[string]any{"message": m}, 0)
}

// Press queues a press of the button with data on message messageID of
// chat chatID by user, and returns the update id and the callback query id.
func (s *Server) Press(from User, chatID int64, messageID int, data string) (int64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	qid := fmt.Sprintf("cq%d", s.nextUpd)
	s.queries[qid] = false
	var mj *msgJSON
	if m := s.messages[chatID][messageID]; m != nil {
		mj = s.messageJSONLocked(m)
	} else {
		// A message the fake does not know: still accessible (date set).
		mj = &msgJSON{MessageID: messageID, Date: s.now().Unix(), Chat: chat{ID: chatID, Type: "private"}}
	}
	cq := map[string]any{"id": qid, "from": from, "message": mj, "chat_instance": fmt.Sprint("ci", chatID), "data": data}
	return s.pushLocked(map[string]any{"callback_query": cq}, 0), qid
}

// ReseedUpdateIDs makes the next update id next, as Telegram does after a
// week without updates ("chosen randomly instead of sequentially"), which
// may be below every id the bot has seen. Nothing from before is pending
// then (Telegram keeps updates 24 hours), so the queue is emptied.
func (s *Server) ReseedUpdateIDs(next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpd = next
	s.updates = nil
}

// Redeliver queues the update with id again, as a duplicate that arrives
// whatever offset the bot confirmed.
func (s *Server) Redeliver(updateID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.delivered {
		if u.id == updateID {
			s.updates = append(s.updates, pending{id: u.id, raw: u.raw, forced: true})
			s.notifyLocked()
			return true
		}
	}
	return false
}

// PushRaw queues an arbitrary update object (update_id is set by the fake
// unless id is not zero).
func (s *Server) PushRaw(update map[string]any, id int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(update, id)
}

func (s *Server) messageJSONLocked(m *Message) *msgJSON {
	mj := &msgJSON{MessageID: m.ID, Date: m.Date, Chat: chat{ID: m.ChatID, Type: "private"}, Text: m.Text}
	if m.FromBot {
		mj.From = &User{ID: s.BotID, IsBot: true, FirstName: "omnibrain"}
		mj.Text = visibleText(m.Text, m.ParseMode)
		if m.Keyboard != nil {
			mj.ReplyMarkup, _ = json.Marshal(map[string]any{"inline_keyboard": m.Keyboard})
		}
	}
	return mj
}

func (s *Server) storeLocked(m *Message) {
	if s.messages[m.ChatID] == nil {
		s.messages[m.ChatID] = map[int]*Message{}
	}
	s.messages[m.ChatID][m.ID] = m
}

// Sent returns copies of every message the bot sent, in order, as they
// are now (edits applied).
func (s *Server) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.sent))
	for _, m := range s.sent {
		out = append(out, copyMessage(m))
	}
	return out
}

// CountSent counts the messages the bot sent to chat (cheaper than SentTo
// for waiting on many).
func (s *Server) CountSent(chatID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.sent {
		if m.ChatID == chatID {
			n++
		}
	}
	return n
}

// SentTo returns the messages the bot sent to chat.
func (s *Server) SentTo(chatID int64) []Message {
	var out []Message
	for _, m := range s.Sent() {
		if m.ChatID == chatID {
			out = append(out, m)
		}
	}
	return out
}

// Message returns a message as it is now.
func (s *Server) Message(chatID int64, id int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[chatID][id]
	if m == nil {
		return Message{}, false
	}
	return copyMessage(m), true
}

func copyMessage(m *Message) Message {
	c := *m
	if m.Keyboard != nil {
		c.Keyboard = make([][]Button, len(m.Keyboard))
		for i, row := range m.Keyboard {
			c.Keyboard[i] = append([]Button(nil), row...)
		}
	}
	return c
}

// Answers returns every answerCallbackQuery, in order.
func (s *Server) Answers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Answer(nil), s.answers...)
}

// Unanswered returns the callback queries nobody answered.
func (s *Server) Unanswered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, ok := range s.queries {
		if !ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Calls returns every request, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount counts the requests of one method.
func (s *Server) CallCount(method string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Commands returns the last command list set with setMyCommands.
func (s *Server) Commands() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]string(nil), s.commands...)
}

// PendingUpdates counts updates not yet confirmed by the bot.
func (s *Server) PendingUpdates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Offset is the last offset the bot confirmed with getUpdates.
func (s *Server) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// apiError is an ok:false answer.
type apiError struct {
	code int
	desc string
	wait int
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		hangUp(w)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		writeError(w, apiError{code: 404, desc: "Not Found"})
		return
	}
	token, method, ok := strings.Cut(rest, "/")
	if !ok || token != s.Token {
		writeError(w, apiError{code: 401, desc: "Unauthorized"})
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, apiError{code: 405, desc: "Method Not Allowed"})
		return
	}
	params, err := readParams(r)
	if err != nil {
		writeError(w, apiError{code: 400, desc: "Bad Request: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params, Time: time.Now()})
	var fail *Failure
	if fs := s.failures[method]; len(fs) > 0 {
		fail = &fs[0]
		s.failures[method] = fs[1:]
	}
	s.notifyLocked()
	s.mu.Unlock()
	if fail != nil {
		writeError(w, apiError{code: fail.Code, desc: fail.Description, wait: fail.RetryAfter})
		return
	}
	if err := checkParams(method, params); err != nil {
		writeError(w, *err)
		return
	}
	var result any
	var aerr *apiError
	switch method {
	case "getMe":
		result = User{ID: s.BotID, IsBot: true, FirstName: "omnibrain", Username: "omnibrain_test_bot"}
	case "getUpdates":
		result, aerr = s.getUpdates(r, params)
	case "sendMessage":
		result, aerr = s.sendMessage(params)
	case "editMessageText":
		result, aerr = s.editMessage(params, true)
	case "editMessageReplyMarkup":
		result, aerr = s.editMessage(params, false)
	case "answerCallbackQuery":
		result, aerr = s.answerCallbackQuery(params)
	case "setMyCommands":
		result, aerr = s.setMyCommands(params)
	case "deleteWebhook":
		result = true
	}
	if aerr != nil {
		writeError(w, *aerr)
		return
	}
	s.mu.Lock()
	before := s.before[method]
	delete(s.before, method)
	s.mu.Unlock()
	if before != nil {
		before()
	}
	if r.Context().Err() != nil {
		return
	}
	writeResult(w, result)
}

// hangUp closes the connection without an answer: the client sees a
// network error, as when Telegram is unreachable.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	w.WriteHeader(http.StatusBadGateway)
}

func readParams(r *http.Request) (Params, error) {
	p := Params{}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		body, _ := io.ReadAll(r.Body)
		if len(bytes.TrimSpace(body)) > 0 {
			return nil, fmt.Errorf("request has a body but no Content-Type")
		}
		for k, v := range r.URL.Query() {
			p[k] = v[0]
		}
		return p, nil
	}
	mt, mp, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, fmt.Errorf("bad Content-Type: %v", err)
	}
	switch mt {
	case "multipart/form-data":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if len(body) == 0 {
			return p, nil // go-telegram/bot sends getMe with an empty body
		}
		mr := multipart.NewReader(bytes.NewReader(body), mp["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("bad multipart body: %v", err)
			}
			b, err := io.ReadAll(part)
			if err != nil {
				return nil, err
			}
			p[part.FormName()] = string(b)
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.PostForm {
			p[k] = v[0]
		}
	case "application/json":
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, err
		}
		for k, v := range m {
			if s, ok := v.(string); ok {
				p[k] = s
			} else {
				b, _ := json.Marshal(v)
				p[k] = string(b)
			}
		}
	default:
		return nil, fmt.Errorf("unsupported Content-Type %s", mt)
	}
	return p, nil
}

func writeResult(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": v})
}

func writeError(w http.ResponseWriter, e apiError) {
	body := map[string]any{"ok": false, "error_code": e.code, "description": e.desc}
	if e.wait > 0 {
		body["parameters"] = map[string]any{"retry_after": e.wait}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.code)
	json.NewEncoder(w).Encode(body)
}
