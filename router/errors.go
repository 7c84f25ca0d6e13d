package router

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNoModel: no provider can take the call — none is configured and no
	// Ollama answered on loopback, or a privacy: local task has no loopback
	// provider. Callers fall back to their no-model behaviour.
	ErrNoModel = errors.New("no language model configured")

	// ErrBudgetExceeded: today's spend (owner's timezone) has reached
	// llm.daily_budget_usd and the call is background work (or it has
	// reached llm.hard_limit_usd, which stops interactive calls too).
	ErrBudgetExceeded = errors.New("daily LLM budget spent")

	// ErrStreamInterrupted: a response ended before the provider said it was
	// complete (a dropped connection, a stream without its final event).
	ErrStreamInterrupted = errors.New("response ended before it was complete")

	// ErrMalformedArguments: a tool call's arguments are not a JSON object.
	ErrMalformedArguments = errors.New("tool call arguments are not a JSON object")
)

// ProviderError is one failed attempt at one provider. Retryable says
// whether trying the same provider again may succeed (429, 5xx, timeouts,
// dropped connections); the router has already retried and failed over
// by the time a caller sees it.
type ProviderError struct {
	Provider   string // the configured provider name
	Model      string
	Status     int    // HTTP status; 0 when no answer arrived
	Type       string // the provider's error type or code, e.g. rate_limit_error
	Message    string
	Retryable  bool
	RetryAfter time.Duration // what the provider asked for, 0 if nothing
	Err        error         // the SDK, network or context error
}

func (e *ProviderError) Error() string {
	s := "llm provider " + e.Provider
	if e.Model != "" {
		s += " (" + e.Model + ")"
	}
	switch {
	case e.Status != 0 && e.Type != "":
		s += fmt.Sprintf(": %d %s", e.Status, e.Type)
	case e.Status != 0:
		s += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ProviderError) Unwrap() error { return e.Err }

// ArgumentsError is a tool call whose arguments do not parse. The router
// passes such calls on unchanged; the agent answers the call with this
// error's text so the model can correct itself.
type ArgumentsError struct {
	Tool string
	Err  error // the JSON error
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("arguments of %s are not a valid JSON object: %v", e.Tool, e.Err)
}

func (e *ArgumentsError) Is(target error) bool { return target == ErrMalformedArguments }

func (e *ArgumentsError) Unwrap() error { return e.Err }
