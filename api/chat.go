package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/omnibrain/omnibrain/agent"
)

// Chatter answers chat messages; *agent.Chat provides it.
type Chatter interface {
	Chat(ctx context.Context, sessionID, text string, onEvent func(agent.Event)) (*agent.Answer, error)
	SessionExists(ctx context.Context, id string) (bool, error)
}

// ChatRequest is the body of POST /api/v1/chat.
type ChatRequest struct {
	Message string `json:"message"`
	Session string `json:"session,omitempty"` // continue this session; empty starts one
}

// maxChatMessage bounds a chat message's size.
const maxChatMessage = 64 << 10

// handleChat streams the agent's events as server-sent events: one event
// per agent event, named by its type, its data the event as JSON, ending
// with "done" (whose answer has the text and citations) or "error".
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if s.b.Chat == nil {
		notConfigured(w, "chat")
		return
	}
	var req ChatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxChatMessage)).Decode(&req); err != nil {
		s.fail(w, r, BadRequest("chat: body must be JSON {message, session}: %v", err))
		return
	}
	if strings.TrimSpace(req.Message) == "" {
		s.fail(w, r, BadRequest("chat: message is empty"))
		return
	}
	if req.Session != "" {
		ok, err := s.b.Chat.SessionExists(r.Context(), req.Session)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !ok {
			s.fail(w, r, fmt.Errorf("no chat session %q (leave the session out to start one): %w", req.Session, ErrNotFound))
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var mu sync.Mutex // events may come from the agent's tool goroutines
	send := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	_, err := s.b.Chat.Chat(r.Context(), req.Session, req.Message, func(ev agent.Event) {
		send(string(ev.Type), ev)
	})
	if err != nil {
		s.log.Error("api: chat failed", "err", err)
		send(string(agent.EventError), agent.Event{Type: agent.EventError, Text: err.Error()})
	}
}

// Chat sends a message and calls onEvent (if not nil) with each event as
// it streams; it returns the final answer.
func (c *Client) Chat(ctx context.Context, req ChatRequest, onEvent func(agent.Event)) (*agent.Answer, error) {
	hreq, err := c.newRequest(ctx, http.MethodPost, "/api/v1/chat", req)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, decodeError(resp)
	}
	var ans *agent.Answer
	var lastErr string
	err = readSSE(resp, func(name string, data []byte) error {
		var ev agent.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("api: chat event %s: %w", name, err)
		}
		if onEvent != nil {
			onEvent(ev)
		}
		switch ev.Type {
		case agent.EventDone:
			ans = ev.Answer
		case agent.EventError:
			lastErr = ev.Text
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("api: chat stream: %w", err)
	}
	if ans == nil {
		if lastErr != "" {
			return nil, &Error{Status: http.StatusOK, Code: "chat_failed", Message: lastErr}
		}
		return nil, errors.New("api: chat stream ended without an answer (did the daemon stop?)")
	}
	return ans, nil
}

// readSSE parses a server-sent event stream: "event:" names, "data:"
// lines joined by newlines, a blank line ends an event.
func readSSE(resp *http.Response, fn func(name string, data []byte) error) error {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var name string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				if err := fn(name, data.Bytes()); err != nil {
					return err
				}
			}
			name = ""
			data.Reset()
		case strings.HasPrefix(line, ":"): // comment
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if data.Len() > 0 {
		return fn(name, data.Bytes())
	}
	return nil
}
