package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// briefing and explain through the real binary, without a daemon (the
// CLI serves the API in-process) and with one.
func TestBriefingAndExplainCLI(t *testing.T) {
	home := t.TempDir()
	out, errOut, code := runCLI(t, home, "briefing")
	if code != 0 || !strings.Contains(out, "Good morning") {
		t.Fatalf("briefing: code %d\n%s\n%s", code, out, errOut)
	}
	// The same day asks again: the same briefing, not a new one.
	out2, _, code := runCLI(t, home, "briefing", "morning", "--json")
	var b struct {
		Kind string          `json:"kind"`
		New  bool            `json:"new"`
		Text string          `json:"text"`
		Data json.RawMessage `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out2), &b) != nil {
		t.Fatalf("briefing --json: code %d\n%s", code, out2)
	}
	if b.Kind != "morning" || b.New || strings.TrimSpace(b.Text) != strings.TrimSpace(out) || len(b.Data) == 0 {
		t.Errorf("second briefing %+v: want the stored one, with its data", b)
	}
	d := startDaemon(t, home)
	_ = d
	out, _, code = runCLI(t, home, "briefing", "weekly")
	if code != 0 || !strings.Contains(out, "Weekly review") {
		t.Errorf("weekly through the daemon: code %d\n%s", code, out)
	}
	out, _, code = runCLI(t, home, "briefing", "--list", "5")
	if code != 0 || !strings.Contains(out, "morning") || !strings.Contains(out, "weekly") {
		t.Errorf("briefing --list: code %d\n%s", code, out)
	}
	if _, errOut, code := runCLI(t, home, "briefing", "hourly"); code != 2 || !strings.Contains(errOut, "morning, evening or weekly") {
		t.Errorf("unknown kind: code %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, home, "explain", "no-such-id"); code != 1 || !strings.Contains(errOut, "no item or proposal") {
		t.Errorf("explain unknown: code %d, %s", code, errOut)
	}
	if _, _, code := runCLI(t, home, "explain"); code != 2 {
		t.Errorf("explain without an id: code %d, want 2", code)
	}
}

// An item without a sender (a note imported from JSONL) is explained
// without a made-up "from (no subject)".
func TestExplainItemWithoutSender(t *testing.T) {
	home := t.TempDir()
	notes := filepath.Join(t.TempDir(), "notes.jsonl")
	line := `{"id":"n1","source":"notes","time":"2026-01-05T10:00:00Z","title":"Budget meeting","text":"Discuss the budget"}` + "\n"
	if err := os.WriteFile(notes, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OMNIBRAIN_HOME": home, "OMNIBRAIN_LLM_PROVIDER": "none"}
	if out, err := runInProcess(t, env, "import", "jsonl", notes); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	out, err := runInProcess(t, env, "explain", "n1")
	if err != nil || !strings.HasPrefix(out, "notes document: Budget meeting\n") {
		t.Errorf("explain n1: %v\n%s", err, out)
	}
}
