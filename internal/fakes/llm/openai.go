package llm

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// OpenAI fakes the OpenAI chat-completions API (and so every
// OpenAI-compatible server: Ollama's /v1, llama.cpp, LM Studio, DeepSeek,
// OpenRouter).
type OpenAI struct {
	// URL is the base URL the SDK wants: http://127.0.0.1:PORT/v1.
	URL string
	f   *fake

	mu     sync.Mutex
	key    string
	models []string
}

// NewOpenAI starts a fake; it is closed when the test ends.
func NewOpenAI(t testing.TB) *OpenAI {
	o := &OpenAI{models: []string{"fake-model"}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", o.handleChat)
	mux.HandleFunc("GET /v1/models", o.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		openAIError(w, http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	})
	o.f = newFake(t, mux)
	o.URL = o.f.srv.URL + "/v1"
	return o
}

// Script appends turns to the queue; each request takes the next one.
func (o *OpenAI) Script(turns ...Turn) { o.f.script(turns) }

// Respond sets how requests are answered once the queue is empty.
func (o *OpenAI) Respond(fn func(Request) Turn) { o.f.setRespond(fn) }

// Requests returns every chat request received so far, in order.
func (o *OpenAI) Requests() []Request { return o.f.requests() }

// Pending is the number of scripted turns not yet used.
func (o *OpenAI) Pending() int { return o.f.pending() }

// RequireKey makes the fake answer 401 unless "Authorization: Bearer key".
func (o *OpenAI) RequireKey(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.key = key
}

// SetModels sets the list GET /v1/models returns (default ["fake-model"]).
func (o *OpenAI) SetModels(ids ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.models = ids
}

// Close stops the fake, ending any hanging request.
func (o *OpenAI) Close() { o.f.close() }

func (o *OpenAI) authorized(r *http.Request) bool {
	o.mu.Lock()
	key := o.key
	o.mu.Unlock()
	return key == "" || r.Header.Get("Authorization") == "Bearer "+key
}

func (o *OpenAI) handleModels(w http.ResponseWriter, r *http.Request) {
	if !o.authorized(r) {
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	o.mu.Lock()
	ids := append([]string(nil), o.models...)
	o.mu.Unlock()
	data := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{"id": id, "object": "model", "created": created, "owned_by": "fake"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// openAIRequest is the part of a chat-completions body the fake reads.
type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
}

// textOf reads OpenAI message content: a string, null, or an array of parts.
func textOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// decodeOpenAI decodes and checks a body the way the real API does,
// returning a message for a 400 when the API would refuse it.
func decodeOpenAI(body []byte, req *Request) string {
	var in openAIRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return "We could not parse the JSON body of your request: " + err.Error()
	}
	req.Model, req.Stream, req.IncludeUsage = in.Model, in.Stream, in.StreamOptions.IncludeUsage
	req.MaxTokens = max(in.MaxTokens, in.MaxCompletionTokens)
	req.Temperature = in.Temperature
	if in.Model == "" {
		return "you must provide a model parameter"
	}
	if len(in.Messages) == 0 {
		return "[] is too short - 'messages'"
	}
	for _, t := range in.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return "Invalid 'tools': every tool needs type function and a name"
		}
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	var system []string
	open := map[string]bool{} // tool calls awaiting their result
	for i, m := range in.Messages {
		text, err := textOf(m.Content)
		if err != nil {
			return fmt.Sprintf("Invalid 'messages[%d].content': %v", i, err)
		}
		if m.Role != "tool" && len(open) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'."
		}
		msg := Message{Role: m.Role, Content: text}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
		case "assistant":
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" {
					return fmt.Sprintf("Invalid 'messages[%d].tool_calls': id and function.name are required", i)
				}
				open[c.ID] = true
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
		case "tool":
			if !open[m.ToolCallID] {
				return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id %q).", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			msg.ToolCallID = m.ToolCallID
		default:
			return fmt.Sprintf("Invalid value for 'messages[%d].role': %q", i, m.Role)
		}
		req.Messages = append(req.Messages, msg)
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'."
	}
	req.System = strings.Join(system, "\n")
	return ""
}

func (o *OpenAI) handleChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := Request{API: "openai", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err != nil {
		req.Invalid = err.Error()
		o.f.record(req)
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	if !o.authorized(r) {
		req.Invalid = "wrong API key"
		o.f.record(req)
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	if msg := decodeOpenAI(body, &req); msg != "" {
		req.Invalid = msg
		o.f.record(req)
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", msg)
		return
	}
	turn, ok := o.f.next(req)
	if !ok {
		openAIError(w, http.StatusInternalServerError, "server_error", "", "fake: no scripted turn left")
		return
	}
	if turn.Hang && turn.CutAfter == 0 {
		o.f.hang(r)
		return
	}
	if turn.Status != 0 {
		turn.writeRetryAfter(w)
		typ, code, msg := openAIErrorDefaults(turn)
		openAIError(w, turn.Status, typ, code, msg)
		return
	}
	ids := make([]string, len(turn.ToolCalls))
	for i, c := range turn.ToolCalls {
		ids[i] = c.ID
		if ids[i] == "" {
			ids[i] = o.f.callID("call_")
		}
	}
	if req.Stream {
		o.stream(w, r, req, turn, ids)
		return
	}
	b, _ := json.Marshal(openAICompletion(req, turn, ids))
	if turn.CutAfter > 0 {
		cutBody(w, b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func openAIUsage(req Request, turn Turn) map[string]any {
	in, out := turn.inputTokens(req.Body), turn.outputTokens()
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

func openAICompletion(req Request, turn Turn, ids []string) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if turn.Text != "" || len(turn.ToolCalls) == 0 {
		msg["content"] = turn.Text
	}
	if len(turn.ToolCalls) > 0 {
		calls := make([]map[string]any, len(turn.ToolCalls))
		for i, c := range turn.ToolCalls {
			calls[i] = map[string]any{"id": ids[i], "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": created, "model": req.Model,
		"choices":            []map[string]any{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": turn.stopReason()}},
		"usage":              openAIUsage(req, turn),
		"system_fingerprint": "fp_fake",
	}
}

// stream writes the answer as chat.completion.chunk events: the role, the
// text in pieces, each tool call's id and name and then its arguments in
// fragments, the finish reason, the usage chunk if asked for, and [DONE].
func (o *OpenAI) stream(w http.ResponseWriter, r *http.Request, req Request, turn Turn, ids []string) {
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"system_fingerprint": "fp_fake",
			"choices":            []map[string]any{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if req.IncludeUsage {
			c["usage"] = nil
		}
		return c
	}
	var events []any
	events = append(events, chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	for _, piece := range chunks(turn.Text, turn.ChunkSize, false) {
		events = append(events, chunk(map[string]any{"content": piece}, nil))
	}
	for i, c := range turn.ToolCalls {
		events = append(events, chunk(map[string]any{"tool_calls": []map[string]any{{
			"index": i, "id": ids[i], "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil))
		for _, frag := range chunks(c.Arguments, turn.ChunkSize, true) {
			events = append(events, chunk(map[string]any{"tool_calls": []map[string]any{{
				"index": i, "function": map[string]any{"arguments": frag},
			}}}, nil))
		}
	}
	events = append(events, chunk(map[string]any{}, turn.stopReason()))
	if req.IncludeUsage {
		events = append(events, map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{}, "usage": openAIUsage(req, turn),
		})
	}
	events = append(events, "[DONE]")
	for _, ev := range events {
		if turn.CutAfter > 0 && s.events == turn.CutAfter {
			switch {
			case turn.Hang:
				o.f.hang(r)
				return
			case turn.StreamError != "":
				s.send("", map[string]any{"error": map[string]any{"message": "The server had an error while processing your request.", "type": turn.StreamError, "param": nil, "code": nil}})
				return
			default:
				dropConnection()
			}
		}
		if !pause(r, turn.EventDelay) {
			return
		}
		s.send("", ev)
	}
}

func openAIErrorDefaults(t Turn) (typ, code, msg string) {
	typ, msg = t.ErrorType, t.ErrorMessage
	switch {
	case t.Status == http.StatusTooManyRequests && typ == "insufficient_quota":
		code = typ // the account is out of credit: a 429 that waiting does not cure
		msg = cmp.Or(msg, "You exceeded your current quota, please check your plan and billing details.")
	case t.Status == http.StatusTooManyRequests:
		code = "rate_limit_exceeded"
		typ = cmp.Or(typ, "requests")
		msg = cmp.Or(msg, "Rate limit reached for requests. Please try again later.")
	case t.Status == http.StatusUnauthorized:
		code = "invalid_api_key"
		typ = cmp.Or(typ, "invalid_request_error")
		msg = cmp.Or(msg, "Incorrect API key provided.")
	case t.Status >= 500:
		typ = cmp.Or(typ, "server_error")
		msg = cmp.Or(msg, "The server had an error while processing your request. Sorry about that!")
	default:
		typ = cmp.Or(typ, "invalid_request_error")
		msg = cmp.Or(msg, http.StatusText(t.Status))
	}
	return typ, code, msg
}

func openAIError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// HostedTransport delivers requests for any host to this fake (see
// fake.hostedTransport).
func (o *OpenAI) HostedTransport() http.RoundTripper { return o.f.hostedTransport() }
