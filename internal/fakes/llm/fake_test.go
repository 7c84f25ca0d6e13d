package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/internal/fakes/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openaiClient(f *llm.OpenAI) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(f.URL), ooption.WithAPIKey("sk-test"), ooption.WithMaxRetries(0))
}

func anthropicClient(f *llm.Anthropic) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(f.URL), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
}

var searchTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "search",
	Description: openai.String("search memory"),
	Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
})

func TestOpenAIChatRecordsRequestAndAnswers(t *testing.T) {
	f := llm.NewOpenAI(t)
	f.RequireKey("sk-test")
	f.Script(llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q":"budget"}`}}, InputTokens: 11, OutputTokens: 7})
	c := openaiClient(f)
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("what is due?")},
		Tools:    []openai.ChatCompletionToolUnionParam{searchTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].FinishReason; got != "tool_calls" {
		t.Errorf("finish_reason = %q", got)
	}
	calls := res.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "search" || calls[0].Function.Arguments != `{"q":"budget"}` || calls[0].ID == "" {
		t.Errorf("tool calls = %+v", calls)
	}
	if res.Usage.PromptTokens != 11 || res.Usage.CompletionTokens != 7 {
		t.Errorf("usage = %+v", res.Usage)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gpt-test" || r.Stream || r.System != "be brief" || len(r.Messages) != 2 || r.Messages[1].Content != "what is due?" {
		t.Errorf("recorded %+v", r)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "search" || !strings.Contains(string(r.Tools[0].Parameters), `"q"`) {
		t.Errorf("tools %+v", r.Tools)
	}

	// The next turn answers the tool result; the fake checks the pairing.
	f.Script(llm.Turn{Text: "Friday."})
	res2, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("what is due?"), res.Choices[0].Message.ToParam(),
			openai.ToolMessage("budget due Friday", calls[0].ID),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Choices[0].Message.Content != "Friday." {
		t.Errorf("content %q", res2.Choices[0].Message.Content)
	}
	last := f.Requests()[1].Messages
	if last[2].Role != "tool" || last[2].ToolCallID != calls[0].ID || last[1].ToolCalls[0].Name != "search" {
		t.Errorf("tool round trip recorded as %+v", last)
	}
}

func TestOpenAIRejectsWhatTheRealAPIRejects(t *testing.T) {
	f := llm.NewOpenAI(t)
	c := openaiClient(f)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.ToolMessage("orphan", "call_9")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "tool") {
		t.Fatalf("want a 400 about the orphan tool message, got %v", err)
	}
	if f.Requests()[0].Invalid == "" {
		t.Error("rejected request not marked Invalid")
	}
	f.RequireKey("other")
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Fatalf("want 401 invalid_api_key, got %v", err)
	}
}

func TestOpenAIStreamSplitsToolCallsAndReportsUsage(t *testing.T) {
	f := llm.NewOpenAI(t)
	f.Script(llm.Turn{
		Text:      "Let me look.",
		ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q":"budget review"}`}, {Name: "calendar", Arguments: `{}`}},
		ChunkSize: 2, InputTokens: 20, OutputTokens: 9,
	})
	c := openaiClient(f)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gpt-test",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	chunks, argChunks := 0, 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		chunks++
		for _, c := range ch.Choices {
			for _, tc := range c.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					argChunks++
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if argChunks < 5 {
		t.Errorf("tool arguments came in %d chunks; want them split", argChunks)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Let me look." || len(msg.ToolCalls) != 2 || msg.ToolCalls[0].Function.Arguments != `{"q":"budget review"}` || msg.ToolCalls[1].Function.Name != "calendar" {
		t.Errorf("accumulated %+v", msg)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.PromptTokens != 20 || acc.Usage.CompletionTokens != 9 {
		t.Errorf("finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	if r := f.Requests()[0]; !r.Stream || !r.IncludeUsage {
		t.Errorf("stream flags not recorded: %+v", r)
	}
}

func TestOpenAIFaults(t *testing.T) {
	f := llm.NewOpenAI(t)
	c := openaiClient(f)
	params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	f.Script(llm.Turn{Status: 429, RetryAfter: "2"})
	_, err := c.Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Response.Header.Get("Retry-After") != "2" || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("429: %v", err)
	}

	f.Script(llm.Turn{Status: 500})
	_, err = c.Chat.Completions.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Type != "server_error" {
		t.Fatalf("500: %v", err)
	}

	f.Script(llm.Turn{Text: "a long answer that is cut", CutAfter: 3})
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	defer stream.Close()
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || n != 3 {
		t.Fatalf("cut stream: %d chunks, err %v", n, stream.Err())
	}

	f.Script(llm.Turn{Text: "overloaded midway", CutAfter: 2, StreamError: "server_error"})
	stream = c.Chat.Completions.NewStreaming(context.Background(), params)
	defer stream.Close()
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "server_error") {
		t.Fatalf("stream error event: %v", err)
	}

	f.Script(llm.Turn{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Chat.Completions.New(ctx, params)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}

	f.Script(llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q": "bud`}}})
	res, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil || res.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"q": "bud` {
		t.Fatalf("malformed arguments not passed verbatim: %v %+v", err, res)
	}
	if f.Pending() != 0 {
		t.Errorf("%d turns unused", f.Pending())
	}
}

func TestOpenAIModels(t *testing.T) {
	f := llm.NewOpenAI(t)
	f.SetModels("llama3.2:latest", "qwen2.5")
	c := openaiClient(f)
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].ID != "llama3.2:latest" {
		t.Errorf("models %+v", page.Data)
	}
}

func anthropicParams(msgs ...anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages: msgs,
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "search", Description: anthropic.String("search memory"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"q": map[string]any{"type": "string"}}},
		}}},
	}
}

func TestAnthropicMessagesRecordsRequestAndAnswers(t *testing.T) {
	f := llm.NewAnthropic(t)
	f.RequireKey("sk-ant-test")
	f.Script(llm.Turn{Text: "Checking.", ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q":"budget"}`}}, InputTokens: 30, OutputTokens: 12})
	c := anthropicClient(f)
	msg, err := c.Messages.New(context.Background(), anthropicParams(anthropic.NewUserMessage(anthropic.NewTextBlock("what is due?"))))
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 || msg.Content[0].Text != "Checking." {
		t.Fatalf("message %+v", msg)
	}
	tu := msg.Content[1].AsToolUse()
	if tu.Name != "search" || string(tu.Input) != `{"q":"budget"}` || tu.ID == "" {
		t.Errorf("tool_use %+v", tu)
	}
	if msg.Usage.InputTokens != 30 || msg.Usage.OutputTokens != 12 {
		t.Errorf("usage %+v", msg.Usage)
	}
	r := f.Requests()[0]
	if r.System != "be brief" || r.MaxTokens != 1024 || r.Header.Get("Anthropic-Version") == "" || len(r.Tools) != 1 || !strings.Contains(string(r.Tools[0].Parameters), `"object"`) {
		t.Errorf("recorded %+v", r)
	}

	f.Script(llm.Turn{Text: "Friday."})
	_, err = c.Messages.New(context.Background(), anthropicParams(
		anthropic.NewUserMessage(anthropic.NewTextBlock("what is due?")),
		msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "budget due Friday", false)),
	))
	if err != nil {
		t.Fatal(err)
	}
	got := f.Requests()[1].Messages
	if len(got) != 3 || got[1].ToolCalls[0].ID != tu.ID || got[2].Role != "tool" || got[2].ToolCallID != tu.ID || got[2].Content != "budget due Friday" {
		t.Errorf("tool round trip recorded as %+v", got)
	}

	// A tool_use without its tool_result is refused, as the real API does.
	_, err = c.Messages.New(context.Background(), anthropicParams(
		anthropic.NewUserMessage(anthropic.NewTextBlock("what is due?")), msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewTextBlock("never mind")),
	))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), "tool_result") {
		t.Fatalf("want 400 about the missing tool_result, got %v", err)
	}
}

func TestAnthropicStreamAccumulates(t *testing.T) {
	f := llm.NewAnthropic(t)
	f.Script(llm.Turn{Text: "Looking it up.", ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q":"budget review"}`}}, ChunkSize: 2, InputTokens: 40, OutputTokens: 15})
	c := anthropicClient(f)
	stream := c.Messages.NewStreaming(context.Background(), anthropicParams(anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))))
	defer stream.Close()
	var msg anthropic.Message
	jsonDeltas := 0
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			jsonDeltas++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if jsonDeltas < 5 {
		t.Errorf("input_json_delta events: %d; want the arguments split", jsonDeltas)
	}
	if len(msg.Content) != 2 || msg.Content[0].Text != "Looking it up." {
		t.Fatalf("accumulated %+v", msg.Content)
	}
	var args map[string]string
	if err := json.Unmarshal(msg.Content[1].Input, &args); err != nil || args["q"] != "budget review" {
		t.Errorf("tool input %s: %v", msg.Content[1].Input, err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.InputTokens != 40 || msg.Usage.OutputTokens != 15 {
		t.Errorf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}
}

func TestAnthropicFaults(t *testing.T) {
	f := llm.NewAnthropic(t)
	c := anthropicClient(f)
	params := anthropicParams(anthropic.NewUserMessage(anthropic.NewTextBlock("hi")))

	f.Script(llm.Turn{Status: 429, RetryAfter: "3"})
	_, err := c.Messages.New(context.Background(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Response.Header.Get("Retry-After") != "3" || apiErr.Type() != "rate_limit_error" {
		t.Fatalf("429: %v", err)
	}

	f.Script(llm.Turn{Status: 529})
	_, err = c.Messages.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != "overloaded_error" {
		t.Fatalf("529: %v", err)
	}

	f.Script(llm.Turn{Text: "cut short", CutAfter: 4})
	stream := c.Messages.NewStreaming(context.Background(), params)
	defer stream.Close()
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || n != 3 { // the ping event is not surfaced
		t.Fatalf("cut stream: %d events, err %v", n, stream.Err())
	}

	f.Script(llm.Turn{Text: "overloaded midway", CutAfter: 3, StreamError: "overloaded_error"})
	stream = c.Messages.NewStreaming(context.Background(), params)
	defer stream.Close()
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("stream error event: %v", err)
	}

	f.Script(llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q": "bud`}}})
	stream = c.Messages.NewStreaming(context.Background(), params)
	defer stream.Close()
	partial := ""
	for stream.Next() {
		if ev := stream.Current(); ev.Delta.Type == "input_json_delta" {
			partial += ev.Delta.PartialJSON
		}
	}
	if stream.Err() != nil || partial != `{"q": "bud` {
		t.Fatalf("malformed arguments not streamed verbatim: %q %v", partial, stream.Err())
	}

	f.Script(llm.Turn{Text: "stalls", CutAfter: 2, Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	stream = c.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	for stream.Next() {
	}
	if !errors.Is(stream.Err(), context.DeadlineExceeded) {
		t.Fatalf("hang midway: %v", stream.Err())
	}
}

func TestRespondAnswersOnceTheQueueIsEmpty(t *testing.T) {
	f := llm.NewAnthropic(t)
	f.Script(llm.Turn{Text: "first"})
	f.Respond(func(r llm.Request) llm.Turn {
		return llm.Turn{Text: "echo: " + r.Messages[len(r.Messages)-1].Content}
	})
	c := anthropicClient(f)
	for i, want := range []string{"first", "echo: hi", "echo: hi"} {
		msg, err := c.Messages.New(context.Background(), anthropicParams(anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))))
		if err != nil {
			t.Fatal(err)
		}
		if msg.Content[0].Text != want {
			t.Errorf("answer %d = %q, want %q", i, msg.Content[0].Text, want)
		}
	}
}
