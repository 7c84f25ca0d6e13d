package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
)

// A drafting run killed with SIGKILL while the model thinks about its
// second step resumes when the daemon runs again: from its checkpoint (the
// lookup it made before the kill is in the model's next request, and is
// not asked for again), and it ends with exactly one proposal.
func TestBackgroundRunResumesAfterSIGKILL(t *testing.T) {
	const (
		owner = "owen@example.com"
		alice = "alice@partner.example"
		reply = "Hi Alice,\n\nthe signed contract goes out tomorrow.\n\nOwen"
	)
	home := t.TempDir()
	gm := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true, Email: owner})
	model := fakellm.NewOpenAI(t)
	defer model.Close()

	var mu sync.Mutex
	killed := false
	var asked []fakellm.Request // the drafting run's requests
	model.Respond(func(r fakellm.Request) fakellm.Turn {
		if !strings.Contains(r.System, "Plan for: Draft the owner's reply") {
			return fakellm.Turn{Text: "A quiet day."}
		}
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r)
		switch {
		case killed:
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "propose_reply", Arguments: fmt.Sprintf(`{"body":%q}`, reply)}}}
		case len(asked) == 1:
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "search", Arguments: `{"query":"signed contract legal"}`}}}
		default:
			return fakellm.Turn{Hang: true} // the daemon is killed while the model thinks
		}
	})
	requests := func() []fakellm.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]fakellm.Request(nil), asked...)
	}

	cfg := fmt.Sprintf("owner:\n  name: Owen\n  emails: [%s]\n  vips: [%s]\nschedule:\n  mail: 1h\n", owner, alice)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := gm.IssueToken(240 * time.Hour)
	tokJSON, _ := json.Marshal(map[string]string{"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken, "token_type": "Bearer", "expiry": tok.Expiry.Format(time.RFC3339)})
	tokFile := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(tokFile, tokJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"OMNIBRAIN_GOOGLE_API_URL=" + gm.URL, "OMNIBRAIN_GOOGLE_TOKEN_URL=" + gm.TokenURL(),
		"OMNIBRAIN_GOOGLE_CLIENT_ID=" + gm.ClientID(), "OMNIBRAIN_GOOGLE_CLIENT_SECRET=" + gm.ClientSecret(),
		"OMNIBRAIN_LLM_PROVIDER=openai", "OMNIBRAIN_LLM_BASE_URL=" + model.URL, "OMNIBRAIN_LLM_API_KEY=sk-kill", "OMNIBRAIN_LLM_MODEL=kill-model",
	}
	h := &approvalHome{dir: home, google: gm, env: env}
	if out, errOut, code := h.run(t, "", "auth", "google", "--token-file", tokFile); code != 0 {
		t.Fatalf("auth google --token-file: %d %s %s", code, out, errOut)
	}
	added := gm.AddMessage(rawMail("Alice Partner <"+alice+">", "Owen <"+owner+">", "Contract", "<contract@partner.example>", time.Now().Add(-time.Minute),
		"Hi Owen,\n\ncan you send me the signed contract? Legal is waiting.\n\nAlice"), fakegoogle.MessageOptions{})

	d := startDaemon(t, home, env...)
	waitFor(t, d, "the drafting run's second step", func() bool { return len(requests()) == 2 })
	if err := d.stop(t, syscall.SIGKILL); err == nil {
		t.Fatal("the daemon exited cleanly on SIGKILL")
	}
	mu.Lock()
	killed = true
	mu.Unlock()

	d = startDaemon(t, home, env...)
	waitFor(t, d, "the reply proposal", func() bool {
		out, _, _ := h.run(t, "", "proposals", "--json")
		return strings.Contains(out, "the signed contract goes out tomorrow")
	})
	after := requests()[2:]
	if len(after) != 1 {
		t.Fatalf("%d drafting requests after the restart, want the one that proposes", len(after))
	}
	var searched, results int
	for _, m := range after[0].Messages {
		for _, c := range m.ToolCalls {
			if c.Name == "search" {
				searched++
			}
		}
		if m.Role == "tool" && strings.Contains(m.Content, "Legal is waiting") {
			results++
		}
	}
	if searched != 1 || results == 0 {
		t.Errorf("the resumed run lost its place: %d search calls, %d results with the mail", searched, results)
	}

	// A further pass and another restart change nothing: one proposal.
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("daemon: %v\n%s", err, d.stderr.String())
	}
	d = startDaemon(t, home, env...)
	if out, errOut, code := h.run(t, "", "collect", "gmail"); code != 0 {
		t.Fatalf("collect: %d %s %s", code, out, errOut)
	}
	out, _, _ := h.run(t, "", "proposals", "--json")
	var props []map[string]any
	if err := json.Unmarshal([]byte(out), &props); err != nil {
		t.Fatalf("proposals --json: %v\n%s", err, out)
	}
	if len(props) != 1 || props[0]["kind"] != "reply" {
		t.Fatalf("%d proposals, want exactly one reply:\n%s", len(props), out)
	}
	if n := len(requests()); n != 3 {
		t.Errorf("%d drafting requests in all, want 3", n)
	}
	out, errOut, _ := h.run(t, "", "explain", added.ID)
	if !strings.Contains(out, "draft_reply: done, 2 attempt(s)") || !strings.Contains(out, "context gathered → reply drafted") {
		t.Errorf("explain:\n%s%s", out, errOut)
	}
}
