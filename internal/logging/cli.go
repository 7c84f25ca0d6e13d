package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// NewCLI returns the logger of a one-shot command that does the daemon's
// work in its own process: what its user should read, as plain sentences
// ("omnibrain: warning: …: err"), each once, secrets redacted. Warnings
// of the model plumbing (components router and agent) are left out: a
// model that fails is what chat and briefings report in their own answer,
// once; their errors still show.
func NewCLI(w io.Writer, secrets []string) *slog.Logger {
	h := &cliHandler{out: &cliOut{w: w, seen: map[string]bool{}}}
	return slog.New(NewRedactor(h, secrets))
}

// modelComponents report model trouble their callers already tell of.
var modelComponents = map[string]bool{"router": true, "agent": true}

type cliOut struct {
	mu   sync.Mutex
	w    io.Writer
	seen map[string]bool
}

type cliHandler struct {
	out       *cliOut
	component string
	attrs     []slog.Attr
}

func (h *cliHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *cliHandler) Handle(_ context.Context, rec slog.Record) error {
	component := h.component
	var errText string
	visit := func(a slog.Attr) bool {
		switch a.Key {
		case "component":
			component = a.Value.String()
		case "err":
			errText = a.Value.String()
		}
		return true
	}
	for _, a := range h.attrs {
		visit(a)
	}
	rec.Attrs(visit)
	if rec.Level < slog.LevelError && modelComponents[component] {
		return nil
	}
	kind := "warning"
	if rec.Level >= slog.LevelError {
		kind = "error"
	}
	line := fmt.Sprintf("omnibrain: %s: %s", kind, rec.Message)
	if errText != "" {
		line += ": " + errText
	}
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	if h.out.seen[line] {
		return nil
	}
	h.out.seen[line] = true
	_, err := fmt.Fprintln(h.out.w, line)
	return err
}

func (h *cliHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	for _, a := range attrs {
		if a.Key == "component" {
			c.component = a.Value.String()
		}
	}
	return &c
}

// WithGroup keeps the handler flat: the CLI shows sentences, not keys.
func (h *cliHandler) WithGroup(string) slog.Handler { return h }
