// Package llm provides wire-faithful httptest fakes of the two model APIs
// omnibrain speaks, for tests that drive the real SDK clients
// (github.com/openai/openai-go/v3 and github.com/anthropics/anthropic-sdk-go):
//
//   - OpenAI chat completions: POST /v1/chat/completions (JSON and SSE
//     streaming with tool_calls deltas split across chunks, the usage chunk
//     of stream_options.include_usage, "data: [DONE]"), GET /v1/models, and
//     errors as {"error":{"message","type","param","code"}}.
//   - Anthropic messages: POST /v1/messages (JSON and SSE: message_start,
//     content_block_start/delta/stop with text_delta and input_json_delta,
//     message_delta with stop_reason and usage, message_stop, ping, error
//     events), errors as {"type":"error","error":{"type","message"}}; the
//     anthropic-version header is required.
//
// # Scripting
//
// Each fake answers requests from a queue of scripted turns, one turn per
// request, in order:
//
//	f := llm.NewOpenAI(t)                  // or llm.NewAnthropic(t)
//	f.Script(
//		llm.Turn{Status: 429, RetryAfter: "2"},                       // a rate limit
//		llm.Turn{ToolCalls: []llm.ToolCall{{Name: "search", Arguments: `{"q":"budget"}`}}},
//		llm.Turn{Text: "The budget is due Friday [1]."},
//	)
//	// point the client at f.URL (OpenAI: ends in /v1; Anthropic: the root)
//
// A Turn is either an answer (Text and/or ToolCalls) or a fault: Status
// (an HTTP error with the API's error body, RetryAfter as the Retry-After
// header), Hang (never answer until the client gives up or the fake
// closes), or, for streams, CutAfter n events followed by a dropped
// connection, a stall (Hang) or an in-stream error event (StreamError).
// A non-streaming request with CutAfter gets half a body and a dropped
// connection. Arguments are sent verbatim, so malformed JSON reaches the
// client as a real model would produce it (for Anthropic only a stream can
// carry it; a non-streaming answer then has a malformed body).
//
// When the queue is empty, Respond (if set) computes the turn from the
// request, so a test can script a model that reacts to tool results or
// never stops calling tools; otherwise the fake answers 500 and fails the
// test.
//
// Close every stream you open: the Anthropic SDK does not close one that
// ends in an error, and its unread body keeps a connection (and goleak)
// busy.
//
// # Recording
//
// Requests returns every request received, decoded into one shape for both
// APIs (Request: model, stream flag, system prompt, messages with tool calls
// and tool results, tools with their JSON schemas, max tokens, headers and
// the raw body), so a test can assert exactly what the model saw. Requests
// the real API would reject (a tool result without its tool call, an
// unanswered tool call, a missing anthropic-version header, missing
// max_tokens, a wrong API key) are answered 400/401 like the real API and
// recorded with Invalid set.
package llm
