package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Anthropic fakes the Anthropic messages API.
type Anthropic struct {
	// URL is the API root the SDK wants (it appends /v1/messages).
	URL string
	f   *fake

	mu  sync.Mutex
	key string
}

// NewAnthropic starts a fake; it is closed when the test ends.
func NewAnthropic(t testing.TB) *Anthropic {
	a := &Anthropic{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", a.handleMessages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		anthropicError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("Not found: %s %s", r.Method, r.URL.Path))
	})
	a.f = newFake(t, mux)
	a.URL = a.f.srv.URL
	return a
}

// Script appends turns to the queue; each request takes the next one.
func (a *Anthropic) Script(turns ...Turn) { a.f.script(turns) }

// Respond sets how requests are answered once the queue is empty.
func (a *Anthropic) Respond(fn func(Request) Turn) { a.f.setRespond(fn) }

// Requests returns every messages request received so far, in order.
func (a *Anthropic) Requests() []Request { return a.f.requests() }

// Pending is the number of scripted turns not yet used.
func (a *Anthropic) Pending() int { return a.f.pending() }

// RequireKey makes the fake answer 401 unless "x-api-key: key".
func (a *Anthropic) RequireKey(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.key = key
}

// Close stops the fake, ending any hanging request.
func (a *Anthropic) Close() { a.f.close() }

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream      bool     `json:"stream"`
	Temperature *float64 `json:"temperature"`
}

// blocksOf reads content that is a string or an array of blocks.
func blocksOf(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("content must be a string or an array of content blocks")
	}
	return bs, nil
}

func joinText(bs []anthropicBlock) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decodeAnthropic decodes and checks a body the way the real API does,
// returning a message for a 400 when the API would refuse it.
func decodeAnthropic(body []byte, req *Request) string {
	var in anthropicRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return "There was an issue with your request body: " + err.Error()
	}
	req.Model, req.Stream, req.MaxTokens, req.Temperature = in.Model, in.Stream, in.MaxTokens, in.Temperature
	if in.Model == "" {
		return "model: Field required"
	}
	if in.MaxTokens <= 0 {
		return "max_tokens: Field required"
	}
	sys, err := blocksOf(in.System)
	if err != nil {
		return "system: " + err.Error()
	}
	req.System = joinText(sys)
	for i, t := range in.Tools {
		if t.Name == "" || len(t.InputSchema) == 0 {
			return fmt.Sprintf("tools.%d: name and input_schema are required", i)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			return fmt.Sprintf("tools.%d.input_schema.type: Input should be 'object'", i)
		}
		req.Tools = append(req.Tools, Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if len(in.Messages) == 0 {
		return "messages: at least one message is required"
	}
	if in.Messages[0].Role != "user" {
		return "messages: first message must use the \"user\" role"
	}
	var open []string // tool_use ids of the previous assistant message
	for i, m := range in.Messages {
		bs, err := blocksOf(m.Content)
		if err != nil {
			return fmt.Sprintf("messages.%d.content: %v", i, err)
		}
		switch m.Role {
		case "user":
			answered := map[string]bool{}
			for j, b := range bs {
				switch b.Type {
				case "text":
					req.Messages = append(req.Messages, Message{Role: "user", Content: b.Text})
				case "tool_result":
					if !contains(open, b.ToolUseID) {
						return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
					}
					answered[b.ToolUseID] = true
					inner, err := blocksOf(b.Content)
					if err != nil {
						return fmt.Sprintf("messages.%d.content.%d.content: %v", i, j, err)
					}
					req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: b.ToolUseID, Content: joinText(inner), IsError: b.IsError})
				default:
					return fmt.Sprintf("messages.%d.content.%d.type: unsupported block type %q", i, j, b.Type)
				}
			}
			for _, id := range open {
				if !answered[id] {
					return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
				}
			}
			open = nil
		case "assistant":
			if len(open) > 0 {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, open[0])
			}
			msg := Message{Role: "assistant"}
			var text []string
			for j, b := range bs {
				switch b.Type {
				case "text":
					text = append(text, b.Text)
				case "tool_use":
					if b.ID == "" || b.Name == "" {
						return fmt.Sprintf("messages.%d.content.%d: tool_use needs id and name", i, j)
					}
					if !isObject(b.Input) {
						return fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
					}
					open = append(open, b.ID)
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				default:
					return fmt.Sprintf("messages.%d.content.%d.type: unsupported block type %q", i, j, b.Type)
				}
			}
			msg.Content = strings.Join(text, "")
			req.Messages = append(req.Messages, msg)
		default:
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
	}
	if len(open) > 0 {
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(in.Messages)-1, open[0])
	}
	return ""
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

func (a *Anthropic) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := Request{API: "anthropic", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	w.Header().Set("request-id", "req_fake")
	if err != nil {
		req.Invalid = err.Error()
		a.f.record(req)
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	a.mu.Lock()
	key := a.key
	a.mu.Unlock()
	if key != "" && r.Header.Get("X-Api-Key") != key {
		req.Invalid = "invalid x-api-key"
		a.f.record(req)
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		req.Invalid = "anthropic-version: header is required"
		a.f.record(req)
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", req.Invalid)
		return
	}
	if msg := decodeAnthropic(body, &req); msg != "" {
		req.Invalid = msg
		a.f.record(req)
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	turn, ok := a.f.next(req)
	if !ok {
		anthropicError(w, http.StatusInternalServerError, "api_error", "fake: no scripted turn left")
		return
	}
	if turn.Hang && turn.CutAfter == 0 {
		a.f.hang(r)
		return
	}
	if turn.Status != 0 {
		turn.writeRetryAfter(w)
		typ, msg := anthropicErrorDefaults(turn)
		anthropicError(w, turn.Status, typ, msg)
		return
	}
	ids := make([]string, len(turn.ToolCalls))
	for i, c := range turn.ToolCalls {
		ids[i] = c.ID
		if ids[i] == "" {
			ids[i] = a.f.callID("toolu_")
		}
	}
	if req.Stream {
		a.stream(w, r, req, turn, ids)
		return
	}
	b := anthropicMessage(req, turn, ids)
	if turn.CutAfter > 0 {
		cutBody(w, b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func anthropicStop(t Turn) string {
	switch r := t.stopReason(); r {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	default:
		return r
	}
}

// anthropicMessage renders a non-streaming answer. Tool arguments go in
// verbatim: malformed ones make a malformed body, as a broken intermediary
// would (the real API only ever returns parsed objects).
func anthropicMessage(req Request, turn Turn, ids []string) []byte {
	var content []map[string]any
	if turn.Text != "" || len(turn.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, c := range turn.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": ids[i], "name": c.Name, "input": fmt.Sprintf("\x00args%d\x00", i)})
	}
	b, _ := json.Marshal(map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": anthropicStop(turn), "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": turn.inputTokens(req.Body), "output_tokens": turn.outputTokens(),
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
		},
	})
	for i, c := range turn.ToolCalls {
		args := cmp.Or(c.Arguments, "{}")
		b = bytes.Replace(b, []byte(fmt.Sprintf(`"\u0000args%d\u0000"`, i)), []byte(args), 1)
	}
	return b
}

// stream writes the answer as the API's event sequence.
func (a *Anthropic) stream(w http.ResponseWriter, r *http.Request, req Request, turn Turn, ids []string) {
	s := newSSE(w)
	type event struct {
		name string
		data any
	}
	var events []event
	events = append(events, event{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": turn.inputTokens(req.Body), "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}}})
	index := 0
	if turn.Text != "" || len(turn.ToolCalls) == 0 {
		events = append(events,
			event{"content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}},
			event{"ping", map[string]any{"type": "ping"}})
		for _, piece := range chunks(turn.Text, turn.ChunkSize, false) {
			events = append(events, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": piece}}})
		}
		events = append(events, event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": index}})
		index++
	}
	for i, c := range turn.ToolCalls {
		events = append(events, event{"content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": ids[i], "name": c.Name, "input": map[string]any{}}}})
		for _, frag := range chunks(c.Arguments, turn.ChunkSize, true) {
			events = append(events, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": frag}}})
		}
		events = append(events, event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": index}})
		index++
	}
	events = append(events,
		event{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(turn), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": turn.outputTokens()}}},
		event{"message_stop", map[string]any{"type": "message_stop"}})
	for _, ev := range events {
		if turn.CutAfter > 0 && s.events == turn.CutAfter {
			switch {
			case turn.Hang:
				a.f.hang(r)
				return
			case turn.StreamError != "":
				s.send("error", map[string]any{"type": "error", "error": map[string]any{"type": turn.StreamError, "message": "Overloaded"}})
				return
			default:
				dropConnection()
			}
		}
		if !pause(r, turn.EventDelay) {
			return
		}
		s.send(ev.name, ev.data)
	}
}

func anthropicErrorDefaults(t Turn) (typ, msg string) {
	def := map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
		500: "api_error", 529: "overloaded_error",
	}[t.Status]
	if def == "" {
		def = "api_error"
		if t.Status < 500 {
			def = "invalid_request_error"
		}
	}
	typ = cmp.Or(t.ErrorType, def)
	msg = t.ErrorMessage
	if msg == "" {
		switch typ {
		case "rate_limit_error":
			msg = "Number of request tokens has exceeded your per-minute rate limit"
		case "overloaded_error":
			msg = "Overloaded"
		default:
			msg = cmp.Or(http.StatusText(t.Status), "error")
		}
	}
	return typ, msg
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
