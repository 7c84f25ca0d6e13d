package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/omnibrain/omnibrain/router"
)

// Limits are the run's safety caps. Zero fields take the defaults.
type Limits struct {
	MaxIterations     int // model calls per run (default 50)
	MaxCallsPerIter   int // tool calls honoured per model turn (default 20)
	MaxCallsPerRun    int // tool calls per run (default 500)
	MaxIdenticalCalls int // identical calls allowed before the next is blocked (default 2)
	MaxSameErrors     int // the same model error this many times stops the run (default 3)
	MaxBlockedTurns   int // turns in a row made only of blocked repeats stop the run (default 3)
	CheckpointEvery   int // save the run every N iterations (default 1)
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxIterations, 50)
	def(&l.MaxCallsPerIter, 20)
	def(&l.MaxCallsPerRun, 500)
	def(&l.MaxIdenticalCalls, 2)
	def(&l.MaxSameErrors, 3)
	def(&l.MaxBlockedTurns, 3)
	def(&l.CheckpointEvery, 1)
	return l
}

// callKey identifies a tool call by tool and canonical arguments.
func callKey(name string, canonArgs []byte) string {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(canonArgs)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// breaker trips when the same model error happens MaxSameErrors times in
// a row: a provider that keeps failing the same way will not recover
// within this run, and retrying only spends money and time.
type breaker struct {
	Last  string `json:"last,omitempty"`
	Count int    `json:"count,omitempty"`
}

// record notes a failed call and reports whether the breaker tripped.
func (b *breaker) record(err error, limit int) bool {
	sig := errorSignature(err)
	if sig == b.Last {
		b.Count++
	} else {
		b.Last, b.Count = sig, 1
	}
	return b.Count >= limit
}

func (b *breaker) reset() { b.Last, b.Count = "", 0 }

// errorSignature groups errors that are "the same": by provider, status
// and error type for the router's provider errors, else by message.
func errorSignature(err error) string {
	var pe *router.ProviderError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s:%d:%s:%t", pe.Provider, pe.Status, pe.Type, pe.Err != nil)
	}
	return err.Error()
}

// Stop says why a run ended.
type Stop string

const (
	StopDone           Stop = "done"            // the model answered
	StopMaxIterations  Stop = "max_iterations"  // the iteration cap was reached
	StopToolCap        Stop = "tool_cap"        // the per-run tool-call cap was reached
	StopLoop           Stop = "loop"            // the model kept repeating blocked calls
	StopCircuitBreaker Stop = "circuit_breaker" // the same model error kept happening
	StopDeadline       Stop = "deadline"        // the run's deadline passed
	StopCanceled       Stop = "canceled"        // the caller gave up
	StopModelError     Stop = "model_error"     // a model error that retrying cannot fix
	StopNoModel        Stop = "no_model"        // no model is configured or reachable
	StopBudget         Stop = "budget"          // the day's model budget is spent
	StopTokens         Stop = "tokens"          // the run's token cap was reached
)

// stopMessage is what the owner is told when a run ends early.
func stopMessage(s Stop, iterations int) string {
	switch s {
	case StopMaxIterations:
		return fmt.Sprintf("I stopped after %d steps without finishing (the step limit).", iterations)
	case StopToolCap:
		return "I stopped because this task used too many tool calls."
	case StopLoop:
		return "I stopped because I kept repeating the same lookups without progress."
	case StopCircuitBreaker:
		return "I stopped because the language model kept failing with the same error."
	case StopDeadline:
		return "I stopped because the task ran out of time."
	case StopCanceled:
		return "The task was canceled."
	case StopModelError:
		return "I could not finish because the language model returned an error."
	case StopNoModel:
		return "No language model is configured, so I cannot reason about this."
	case StopBudget:
		return "I stopped because today's model budget is spent."
	case StopTokens:
		return "I stopped because this task used its share of tokens."
	}
	return ""
}

// terminal reports model errors that no retry in this run will fix.
func terminal(err error) (Stop, bool) {
	switch {
	case errors.Is(err, router.ErrNoModel):
		return StopNoModel, true
	case errors.Is(err, router.ErrBudgetExceeded):
		return StopBudget, true
	}
	return "", false
}
