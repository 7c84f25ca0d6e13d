package router

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// openaiProvider speaks the chat-completions API: OpenAI, DeepSeek,
// OpenRouter, Ollama's /v1, llama.cpp, LM Studio.
type openaiProvider struct {
	client openai.Client
	model  string
	// maxCompletion: api.openai.com wants max_completion_tokens (its
	// reasoning models refuse max_tokens); compatible servers know max_tokens.
	maxCompletion bool
}

func newOpenAI(baseURL, apiKey, model string, hc *http.Client) *openaiProvider {
	u, _ := url.Parse(baseURL)
	return &openaiProvider{
		client: openai.NewClient(
			option.WithBaseURL(baseURL),
			option.WithAPIKey(apiKey), // explicit, so OPENAI_API_KEY never leaks to another server
			option.WithHeaderDel("OpenAI-Organization"),
			option.WithHeaderDel("OpenAI-Project"),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0), // the router retries, with its own policy and records
		),
		model:         model,
		maxCompletion: u != nil && u.Hostname() == "api.openai.com",
	}
}

func (p *openaiProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.model)}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(argumentsOrEmpty(c.Arguments))},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return params, fmt.Errorf("router: message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return params, err
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if p.maxCompletion {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	return params, nil
}

func (p *openaiProvider) chat(ctx context.Context, req Request) (*Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	res, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, openaiError(err)
	}
	if len(res.Choices) == 0 {
		return nil, &ProviderError{Message: "answer has no choices", Retryable: true}
	}
	choice := res.Choices[0]
	out := &Response{
		Content: choice.Message.Content,
		Model:   cmp.Or(res.Model, p.model),
		Usage:   Usage{InputTokens: int(res.Usage.PromptTokens), OutputTokens: int(res.Usage.CompletionTokens)},
	}
	for _, c := range choice.Message.ToolCalls {
		if c.Type != "" && c.Type != "function" {
			continue // custom tools are never offered
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: argumentsOrEmpty(json.RawMessage(c.Function.Arguments))})
	}
	out.StopReason = openaiStop(choice.FinishReason, len(out.ToolCalls) > 0)
	return out, nil
}

func (p *openaiProvider) stream(ctx context.Context, req Request, emit func(string), alive func()) (*Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()

	out := &Response{Model: p.model}
	var text strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	var calls []*partial            // in the order they started
	byIndex := map[int64]*partial{} // the call each delta index continues
	finish := ""
	for stream.Next() {
		alive()
		ch := stream.Current()
		if ch.Model != "" {
			out.Model = ch.Model
		}
		if ch.JSON.Usage.Valid() {
			out.Usage = Usage{InputTokens: int(ch.Usage.PromptTokens), OutputTokens: int(ch.Usage.CompletionTokens)}
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			if c.Delta.Content != "" {
				text.WriteString(c.Delta.Content)
				emit(c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				// A new id starts a new call even at a reused index: some
				// compatible servers (Ollama) send every call whole at index 0.
				pc := byIndex[tc.Index]
				if pc == nil || (tc.ID != "" && pc.id != "" && tc.ID != pc.id) {
					pc = &partial{}
					calls = append(calls, pc)
					byIndex[tc.Index] = pc
				}
				if tc.ID != "" {
					pc.id = tc.ID
				}
				if name := tc.Function.Name; name != "" && !strings.HasSuffix(pc.name, name) {
					pc.name += name // a name sent again is not doubled
				}
				pc.args.WriteString(tc.Function.Arguments)
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	out.Content = text.String()
	if err := stream.Err(); err != nil {
		return out, openaiError(err)
	}
	if finish == "" {
		return out, &ProviderError{Message: "stream ended without a finish reason", Retryable: true, Err: ErrStreamInterrupted}
	}
	for _, pc := range calls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: pc.id, Name: pc.name, Arguments: argumentsOrEmpty(json.RawMessage(pc.args.String()))})
	}
	out.StopReason = openaiStop(finish, len(out.ToolCalls) > 0)
	return out, nil
}

// openaiStop normalises a finish reason. Some compatible servers say "stop"
// even when they return tool calls.
func openaiStop(reason string, toolCalls bool) string {
	switch {
	case reason == "length":
		return "length"
	case toolCalls, reason == "function_call":
		return "tool_calls"
	default:
		return reason
	}
}

// openaiError turns an SDK error into a *ProviderError (the router adds the
// provider's name); network and context errors are classified by the router.
func openaiError(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		pe := &ProviderError{
			Status:  apiErr.StatusCode,
			Type:    cmp.Or(apiErr.Code, apiErr.Type),
			Message: apiErr.Message,
			// A 429 for an exhausted quota does not pass by waiting.
			Retryable: retryableStatus(apiErr.StatusCode) && apiErr.Code != "insufficient_quota",
			Err:       err,
		}
		if apiErr.Response != nil {
			pe.RetryAfter, _ = retry.FromHeader(apiErr.Response.Header, time.Now())
		}
		return pe
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error event inside a 200 stream: the server failed midway.
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(se.Event.Data, &body)
		return &ProviderError{Type: body.Error.Type, Message: cmp.Or(body.Error.Message, se.Message), Retryable: true, Err: err}
	}
	return err
}
