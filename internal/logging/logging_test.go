package logging

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedactorScrubsSecretsEverywhere(t *testing.T) {
	const token = "123456:AAE-bot-token-value"
	var buf bytes.Buffer
	log := New(&buf, "debug", []string{token, "abc"})
	urlErr := fmt.Errorf("telegram: %w", errors.New("Post \"https://api.telegram.org/bot"+token+"/getUpdates\": dial tcp: refused"))

	log.Error("call failed for "+token, "err", urlErr, "url", "https://x/bot"+token+"/sendMessage")
	log.With("component", "telegram", "cfg", token).WithGroup("g").Info("grouped", "nested", []string{token})
	log.Debug("short secrets are not replaced", "word", "abc")

	out := buf.String()
	if strings.Contains(out, token) {
		t.Fatalf("token leaked into the log:\n%s", out)
	}
	if got := strings.Count(out, "[redacted]"); got < 5 {
		t.Errorf("expected every occurrence redacted, got %d:\n%s", got, out)
	}
	if !strings.Contains(out, "word=abc") {
		t.Errorf("a secret shorter than 6 characters must not mangle text:\n%s", out)
	}
}

func TestRedactorLevel(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "warn", nil)
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Fatalf("level not honoured:\n%s", buf.String())
	}
}

func TestScrubber(t *testing.T) {
	scrub := Scrubber([]string{"ghp_abcdef123", "abc"})
	if got := scrub("GET /repos?token=ghp_abcdef123 abc"); got != "GET /repos?token=[redacted] abc" {
		t.Fatalf("scrub = %q", got)
	}
	if got := Scrubber(nil)("nothing to hide"); got != "nothing to hide" {
		t.Fatalf("scrub without secrets = %q", got)
	}
}

// The CLI's logger writes plain sentences, each once, redacted; the model
// plumbing's warnings are left to the command's own report.
func TestCLILogger(t *testing.T) {
	var buf bytes.Buffer
	log := NewCLI(&buf, []string{"sk-secret-value"})
	store := log.With("component", "store")
	store.Warn("the database is locked; waiting", "err", errors.New("database is locked"))
	store.Warn("the database is locked; waiting", "err", errors.New("database is locked"))
	store.Info("schema migrated")
	log.With("component", "router").Warn("model call failed", "err", errors.New("connection refused"))
	log.With("component", "agent").Error("run failed", "err", errors.New("key sk-secret-value rejected"))
	want := "omnibrain: warning: the database is locked; waiting: database is locked\n" +
		"omnibrain: error: run failed: key [redacted] rejected\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}
