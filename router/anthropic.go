package router

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/omnibrain/omnibrain/internal/retry"
)

// defaultAnthropicMaxTokens is sent when a request sets none: the messages
// API requires max_tokens.
const defaultAnthropicMaxTokens = 4096

// anthropicProvider speaks Anthropic's messages API.
type anthropicProvider struct {
	client anthropic.Client
	model  string
}

func newAnthropic(baseURL, apiKey, model string, hc *http.Client) *anthropicProvider {
	return &anthropicProvider{
		client: anthropic.NewClient(
			option.WithBaseURL(baseURL),
			option.WithAPIKey(apiKey), // explicit: suppresses the SDK's own credential discovery
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0), // the router retries, with its own policy and records
		),
		model: model,
	}
}

func (p *anthropicProvider) params(req Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.model),
		MaxTokens: defaultAnthropicMaxTokens,
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature != nil {
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	// The API takes the system prompt apart from the turns, and wants turns
	// that alternate: tool results travel in the next user turn, so
	// consecutive user and tool messages merge into one user turn.
	var system []string
	for i, m := range req.Messages {
		var role anthropic.MessageParamRole
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
			continue
		case RoleUser:
			role = anthropic.MessageParamRoleUser
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
		case RoleTool:
			role = anthropic.MessageParamRoleUser
			blocks = append(blocks, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError))
		case RoleAssistant:
			role = anthropic.MessageParamRoleAssistant
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				// The API only takes an object; a malformed call from the
				// model goes back as {} and its tool result explains.
				var input any = json.RawMessage(argumentsOrEmpty(c.Arguments))
				if c.CheckArguments() != nil {
					input = map[string]any{}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
		default:
			return params, fmt.Errorf("router: message %d has unknown role %q", i, m.Role)
		}
		if len(blocks) == 0 {
			continue // the API refuses empty turns
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			continue
		}
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	if len(system) > 0 {
		params.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return params, err
		}
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "type" && k != "properties" && k != "required" {
				in.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params, nil
}

func (p *anthropicProvider) chat(ctx context.Context, req Request) (*Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	msg, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return nil, anthropicError(err)
	}
	out := &Response{
		Model:      cmp.Or(msg.Model, p.model),
		StopReason: anthropicStop(string(msg.StopReason)),
		Usage: Usage{
			InputTokens:  int(msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens),
			OutputTokens: int(msg.Usage.OutputTokens),
		},
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: argumentsOrEmpty(append(json.RawMessage(nil), b.Input...))})
		}
	}
	out.Content = text.String()
	return out, nil
}

func (p *anthropicProvider) stream(ctx context.Context, req Request, emit func(string), alive func()) (*Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	out := &Response{Model: p.model}
	var text strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	calls := map[int64]*partial{}
	stopped := false
	for stream.Next() {
		alive()
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			out.Model = cmp.Or(ev.Message.Model, p.model)
			u := ev.Message.Usage
			out.Usage.InputTokens = int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
			out.Usage.OutputTokens = int(u.OutputTokens)
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				calls[ev.Index] = &partial{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				text.WriteString(ev.Delta.Text)
				emit(ev.Delta.Text)
			case "input_json_delta":
				if pc := calls[ev.Index]; pc != nil {
					pc.args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "message_delta":
			out.StopReason = anthropicStop(string(ev.Delta.StopReason))
			out.Usage.OutputTokens = int(ev.Usage.OutputTokens) // cumulative
		case "message_stop":
			stopped = true
		}
	}
	out.Content = text.String()
	if err := stream.Err(); err != nil {
		return out, anthropicError(err)
	}
	if !stopped {
		return out, &ProviderError{Message: "stream ended without message_stop", Retryable: true, Err: ErrStreamInterrupted}
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		pc := calls[i]
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: pc.id, Name: pc.name, Arguments: argumentsOrEmpty(json.RawMessage(pc.args.String()))})
	}
	return out, nil
}

func anthropicStop(reason string) string {
	switch reason {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	default:
		return reason
	}
}

// anthropicError turns an SDK error into a *ProviderError (the router adds
// the provider's name); network and context errors are classified by the
// router.
func anthropicError(err error) error {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		if strings.HasPrefix(err.Error(), "received error while streaming") {
			return &ProviderError{Message: err.Error(), Retryable: true, Err: err}
		}
		return err
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	pe := &ProviderError{
		Status:  apiErr.StatusCode,
		Type:    string(apiErr.Type()),
		Message: body.Error.Message,
		Err:     err,
	}
	switch {
	case apiErr.StatusCode == http.StatusOK:
		// An error event inside a stream: the server failed midway.
		pe.Status = 0
		pe.Retryable = pe.Type != "invalid_request_error" && pe.Type != "authentication_error" && pe.Type != "permission_error"
	default:
		pe.Retryable = retryableStatus(apiErr.StatusCode)
	}
	if apiErr.Response != nil && apiErr.StatusCode != http.StatusOK {
		pe.RetryAfter, _ = retry.FromHeader(apiErr.Response.Header, time.Now())
	}
	return pe
}
