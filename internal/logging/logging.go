// Package logging builds the daemon's slog logger. Its handler scrubs every
// configured secret from messages and attributes, so a token that slips into
// an error string (a Telegram URL carries the bot token) never reaches a log.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns a text logger at level that redacts secrets.
func New(w io.Writer, level string, secrets []string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})
	return slog.New(NewRedactor(h, secrets))
}

// Redactor is a slog.Handler that replaces secret values with [redacted].
type Redactor struct {
	next    slog.Handler
	replace *strings.Replacer
}

// NewRedactor wraps next. Secrets shorter than 6 characters are ignored:
// replacing them would mangle ordinary words.
func NewRedactor(next slog.Handler, secrets []string) *Redactor {
	return &Redactor{next: next, replace: replacer(secrets)}
}

func replacer(secrets []string) *strings.Replacer {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= 6 {
			pairs = append(pairs, s, "[redacted]")
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}

// Scrubber returns a function that redacts the secrets from a text, as the
// log handler does, for whatever else shows error texts (the health model
// behind `status`).
func Scrubber(secrets []string) func(string) string {
	r := replacer(secrets)
	if r == nil {
		return func(s string) string { return s }
	}
	return r.Replace
}

func (r *Redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.next.Enabled(ctx, l) }

func (r *Redactor) Handle(ctx context.Context, rec slog.Record) error {
	if r.replace == nil {
		return r.next.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, r.replace.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.scrub(a))
		return true
	})
	return r.next.Handle(ctx, out)
}

func (r *Redactor) WithAttrs(attrs []slog.Attr) slog.Handler {
	if r.replace == nil {
		return &Redactor{next: r.next.WithAttrs(attrs)}
	}
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = r.scrub(a)
	}
	return &Redactor{next: r.next.WithAttrs(clean), replace: r.replace}
}

func (r *Redactor) WithGroup(name string) slog.Handler {
	return &Redactor{next: r.next.WithGroup(name), replace: r.replace}
}

func (r *Redactor) scrub(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.replace.Replace(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = r.scrub(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// Errors and Stringers are rendered here so their text is scrubbed.
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, r.replace.Replace(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, r.replace.Replace(x.String()))
		default:
			return slog.String(a.Key, r.replace.Replace(fmt.Sprint(x)))
		}
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

// Discard is a logger that writes nothing, for tests and one-shot commands.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
