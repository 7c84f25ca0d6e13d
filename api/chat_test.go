package api

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/internal/logging"
	"github.com/omnibrain/omnibrain/store"
)

// TestChatStreamsEventsAndKeepsTheSession drives POST /api/v1/chat through
// the Client with the real chat over a real store, with no model
// configured: the answer still arrives (no error wall), as SSE events
// ending in done, and the session continues across requests.
func TestChatStreamsEventsAndKeepsTheSession(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chat, err := agent.NewChat(agent.ChatOptions{Sessions: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(logging.Discard(), "", Backends{Chat: chat})
	c, stop := NewInProcessClient(srv.SocketHandler())
	defer stop()

	var types []agent.EventType
	ans, err := c.Chat(ctx, ChatRequest{Message: "hello"}, func(ev agent.Event) { types = append(types, ev.Type) })
	if err != nil {
		t.Fatal(err)
	}
	if !ans.NoModel || ans.Stop != agent.StopNoModel || !strings.Contains(ans.Text, "language model") || ans.SessionID == "" {
		t.Fatalf("answer = %+v", ans)
	}
	if len(types) < 2 || types[len(types)-1] != agent.EventDone || types[0] != agent.EventText {
		t.Fatalf("events = %v, want text … done", types)
	}
	if _, err := c.Chat(ctx, ChatRequest{Message: "and again", Session: ans.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
	h, err := st.ChatHistory(ctx, ans.SessionID, 10)
	if err != nil || len(h) != 4 || h[0].Content != "hello" || h[2].Content != "and again" {
		t.Fatalf("session history = %+v, %v", h, err)
	}

	_, err = c.Chat(ctx, ChatRequest{Message: "  "}, nil)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("empty message: %v", err)
	}
	// A mistyped session is an error, not a conversation started over.
	_, err = c.Chat(ctx, ChatRequest{Message: "and more", Session: ans.SessionID + "x"}, nil)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !strings.Contains(err.Error(), "no chat session") {
		t.Fatalf("unknown session: %v", err)
	}
	if ok, _ := st.ChatSessionExists(ctx, ans.SessionID+"x"); ok {
		t.Error("the unknown session was created")
	}
}

func TestChatWithoutBackendIs501(t *testing.T) {
	c, stop := NewInProcessClient(testServer("").SocketHandler())
	defer stop()
	_, err := c.Chat(context.Background(), ChatRequest{Message: "hi"}, nil)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotImplemented {
		t.Fatalf("err = %v, want 501", err)
	}
}

func TestReadSSE(t *testing.T) {
	body := ": comment\nevent: text\ndata: {\"a\":1}\n\nevent: multi\ndata: line1\ndata: line2\n\ndata: tail"
	resp := &http.Response{Body: readCloser{strings.NewReader(body)}}
	var got []string
	if err := readSSE(resp, func(name string, data []byte) error {
		got = append(got, name+"="+string(data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`text={"a":1}`, "multi=line1\nline2", "=tail"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
