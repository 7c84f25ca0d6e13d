package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// provider is one model endpoint behind its SDK. Errors from the API come
// back as *ProviderError without the provider's name, which the router
// adds; a stream's Response may be partial (usage so far) on error. A
// stream calls alive for every event it reads, text or not.
type provider interface {
	chat(ctx context.Context, req Request) (*Response, error)
	stream(ctx context.Context, req Request, emit func(text string), alive func()) (*Response, error)
}

// argumentsOrEmpty maps a tool call without arguments to {}; anything else,
// malformed or not, is kept as the model produced it.
func argumentsOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// schemaMap decodes a tool's parameter schema; none means no arguments.
func schemaMap(t ToolSpec) (map[string]any, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Parameters, &m); err != nil || m == nil {
		return nil, fmt.Errorf("router: tool %s: parameters must be a JSON schema object: %v", t.Name, err)
	}
	return m, nil
}

// retryableStatus: timeouts, lock conflicts, rate limits and server errors
// may pass on a second try; anything else is the request's fault.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// asProviderError makes every attempt error a *ProviderError: API errors
// already are; timeouts, dropped connections and refused connections are
// retryable; what remains (a bad tool schema, an unknown role) is ours and
// not. Cancellation by the caller is returned as is.
func asProviderError(err error, parent context.Context, timeout time.Duration) error {
	if parent.Err() != nil {
		return context.Cause(parent)
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	pe = &ProviderError{Err: err}
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		pe.Message, pe.Retryable = fmt.Sprintf("no complete answer within %s", timeout), true
	case errors.Is(err, syscall.ECONNREFUSED):
		pe.Message, pe.Retryable = "connection refused (is it running?)", true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		pe.Message, pe.Retryable = "connection dropped", true
		pe.Err = errors.Join(ErrStreamInterrupted, err)
	case errors.As(err, &netErr), errors.As(err, &urlErr):
		pe.Retryable = true
	case isDecodeError(err):
		pe.Message, pe.Retryable = "malformed answer", true
	}
	return pe
}

func isDecodeError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// refused reports a provider that is not there at all: no point retrying
// it before trying the next.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
