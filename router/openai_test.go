package router

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Ollama's OpenAI-compatible stream sends each tool call whole, every one
// at index 0 and sometimes naming it twice; they must stay separate calls.
func TestOpenAIStreamSeparatesCallsAtTheSameIndex(t *testing.T) {
	chunks := []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"a\"}"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_2","type":"function","function":{"name":"calendar","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"calendar","arguments":""}}]},"finish_reason":"stop"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	p := newOpenAI(srv.URL+"/v1", "", "llama", httpClient(true))
	resp, err := p.stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, func(string) {}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "search" || string(resp.ToolCalls[0].Arguments) != `{"query":"a"}` ||
		resp.ToolCalls[1].ID != "call_2" || resp.ToolCalls[1].Name != "calendar" || string(resp.ToolCalls[1].Arguments) != "{}" {
		t.Errorf("tool calls %+v", resp.ToolCalls)
	}
	if resp.StopReason != "tool_calls" {
		t.Errorf("stop reason %q", resp.StopReason)
	}
}
