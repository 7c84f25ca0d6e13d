package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
)

// chatHome is a home whose config points the model at url ("" for none)
// and which holds one imported Enron mailbox.
func chatHome(t *testing.T, url string) string {
	t.Helper()
	binary(t) // build first: runCLI's timeout is for the command alone
	home := t.TempDir()
	cfg := "llm:\n  provider: none\n"
	if url != "" {
		cfg = "llm:\n  provider: openai\n  base_url: " + url + "\n  model: gpt-test\n  api_key: key\n"
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	box := filepath.Join(testutil.SharedData(t, "mail/enron/maildir"), "rapp-b")
	if _, errOut, code := runCLI(t, home, "import", "maildir", box); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	return home
}

// Without a model, `omnibrain chat` answers from search, says a model is
// needed for more, and exits 0; --json prints the answer with citations.
func TestChatCLIWithoutModel(t *testing.T) {
	home := chatHome(t, "")
	out, errOut, code := runCLI(t, home, "chat", "Transwestern", "advice", "protest")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "No language model is configured") || !strings.Contains(out, "Sources:\n  [1] ") || !strings.Contains(out, "Transwestern Advice Protest") {
		t.Fatalf("stdout:\n%s", out)
	}
	if !strings.Contains(errOut, "session s_") {
		t.Fatalf("stderr lacks the session: %s", errOut)
	}
	out, _, code = runCLI(t, home, "chat", "--json", "Transwestern advice protest")
	var ans agent.Answer
	if err := json.Unmarshal([]byte(out), &ans); err != nil || code != 0 {
		t.Fatalf("--json output (exit %d): %v\n%s", code, err, out)
	}
	if !ans.NoModel || len(ans.Citations) == 0 || ans.Citations[0].ID == "" || ans.Citations[0].Time.IsZero() || ans.Citations[0].Source != "maildir" {
		t.Fatalf("answer = %+v", ans)
	}
	if _, errOut, code := runCLI(t, home, "chat"); code != 2 || !strings.Contains(errOut, "chat needs a message") {
		t.Fatalf("no message: exit %d, %s", code, errOut)
	}
}

// With a model, the answer streams to stdout and --session continues the
// conversation.
func TestChatCLIStreamsAndContinuesSession(t *testing.T) {
	f := llm.NewOpenAI(t)
	f.Respond(func(r llm.Request) llm.Turn {
		switch {
		case strings.Contains(r.System, "DATA or GENERAL"):
			return llm.Turn{Text: "GENERAL"}
		case r.Messages[len(r.Messages)-1].Content == "hello":
			return llm.Turn{Text: "Hello Bill, how can I help?"}
		}
		return llm.Turn{Text: "You said hello."}
	})
	home := chatHome(t, f.URL)
	out, errOut, code := runCLI(t, home, "chat", "hello")
	if code != 0 || !strings.HasPrefix(out, "Hello Bill, how can I help?") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	i := strings.Index(errOut, "session s_")
	if i < 0 {
		t.Fatalf("no session in %q", errOut)
	}
	session := strings.Fields(errOut[i:])[1]
	if _, errOut, code := runCLI(t, home, "chat", "--session", session, "what did I just say?"); code != 0 {
		t.Fatalf("second turn: exit %d: %s", code, errOut)
	}
	reqs := f.Requests()
	last := reqs[len(reqs)-1]
	var turns []string
	for _, m := range last.Messages {
		if m.Role != "system" {
			turns = append(turns, m.Role+":"+strings.SplitN(m.Content, "\n", 2)[0])
		}
	}
	if len(turns) != 3 || turns[0] != "user:hello" || turns[1] != "assistant:Hello Bill, how can I help?" {
		t.Fatalf("second request's conversation = %q", turns)
	}
}

// A stream cut midway: the router retries, and stdout holds the answer
// exactly once (what streamed before the cut is never printed); stderr
// says the answer started over.
func TestChatCLIStreamCutMidwayPrintsTheAnswerOnce(t *testing.T) {
	const answer = "Hello Bill, the budget review moved to Friday."
	f := llm.NewOpenAI(t)
	home := chatHome(t, f.URL)
	f.Script(llm.Turn{Text: answer, CutAfter: 5}, llm.Turn{Text: answer})
	out, errOut, code := runCLI(t, home, "chat", "hello")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if out != answer+"\n" {
		t.Fatalf("stdout = %q, want the answer once", out)
	}
	if !strings.Contains(errOut, "broke off; it starts over") {
		t.Fatalf("stderr = %q", errOut)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("%d model requests, want the cut one and its retry", n)
	}
}

// Chat's sources show times in the owner's timezone, like search does,
// not in the zone of the machine the CLI runs on.
func TestChatSourcesInOwnersTimezone(t *testing.T) {
	notes := filepath.Join(t.TempDir(), "notes.jsonl")
	line := `{"id":"n1","source":"notes","time":"2026-01-05T10:00:00Z","title":"Budget meeting","text":"Discuss the budget"}` + "\n"
	if err := os.WriteFile(notes, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OMNIBRAIN_HOME": t.TempDir(), "OMNIBRAIN_LLM_PROVIDER": "none", "OMNIBRAIN_TIMEZONE": "Pacific/Chatham"}
	if out, err := runInProcess(t, env, "import", "jsonl", notes); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	out, err := runInProcess(t, env, "chat", "budget meeting")
	if err != nil || !strings.Contains(out, "[1] Budget meeting — notes, 2026-01-05 23:45 (id n1)") {
		t.Errorf("chat: %v\n%s", err, out)
	}
}

// In chat, a weekday in a request about the future is the one to come:
// "who wants dinner on Tuesday?" asks about next Tuesday, not last (issue
// 16). That Tuesday holds no mail, so the answer says so and names it.
func TestChatReadsWeekdaysOfTheFutureForward(t *testing.T) {
	home := chatHome(t, "")
	today := time.Now()
	ahead := (int(time.Tuesday) - int(today.Weekday()) + 7) % 7
	if ahead == 0 {
		ahead = 7
	}
	tuesday := today.AddDate(0, 0, ahead).Format("2006-01-02")
	for _, msg := range []string{"who wants dinner on Tuesday?", "can we meet on Tuesday?"} {
		out, errOut, code := runCLI(t, home, "chat", msg)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", msg, code, errOut)
		}
		if want := fmt.Sprintf(`"on tuesday" (%s to %s)`, tuesday, tuesday); !strings.Contains(out, want) {
			t.Errorf("%q: the answer does not name next Tuesday (%s):\n%s", msg, want, out)
		}
	}
}
