package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/store"
)

// A CLI call on a fresh home whose database another process holds locked
// (a daemon starting at the same moment) waits for the lock instead of
// dying of "database is locked".
func TestFreshHomeWaitsForTheDatabaseLock(t *testing.T) {
	home := t.TempDir()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(home, store.FileName)+"?_txlock=exclusive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE holder (x)`); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(binary(t), "--home", home, "status", "--json")
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "locked by another omnibrain process; waiting") {
			break
		}
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "waiting") {
		t.Fatalf("status did not say it waits for the lock; stderr:\n%s", strings.Join(lines, "\n"))
	}
	// It waited: now the other process is done.
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	go func() {
		for sc.Scan() {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("status after the lock was released: %v\n%s", err, strings.Join(lines, "\n"))
	}
	var st api.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Home != home {
		t.Fatalf("status --json = %v %q", err, out.String())
	}
}

// runCLIEnv is runCLI with extra environment variables.
func runCLIEnv(t *testing.T, home string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runBinary(t, home, env, nil, args...)
}

// A config.yaml with several mistakes gets them all reported at once, each
// on its line and in the file's terms, with a guess at what was meant.
func TestConfigProblemsAllAtOnceOnTheirLines(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), `timezone: Europe/Berln
log_level: degub
owner:
  emails: ada@example.com
schedule:
  mial: 5m
  weekly_review: "monday"
notifications:
  quiet_start: "10pm"
`)
	_, errOut, code := runCLI(t, home, "status")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"config.yaml: 6 problems",
		`line 1: timezone "Europe/Berln"`,
		`line 2: log_level "degub": want debug, info, warn or error (did you mean "debug"?)`,
		"line 4: owner.emails must be a list, e.g. [ada@example.com]",
		`line 6: unknown key "mial" (did you mean "mail"?)`,
		`line 7: schedule.weekly_review "monday"`,
		`line 9: notifications.quiet_start "10pm": want HH:MM`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "cannot unmarshal") || strings.Contains(errOut, "[]string") {
		t.Errorf("stderr speaks Go:\n%s", errOut)
	}

	// A syntax error names the line it is on, not the one before.
	writeFile(t, filepath.Join(home, "config.yaml"), "timezone: UTC\nowner:\n  name: Ada\n  emails: [ada@example.com\nlog_level: info\n")
	_, errOut, code = runCLI(t, home, "status")
	if code != 1 || !strings.Contains(errOut, "line 4: did not find expected ',' or ']'") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}

	// Commands get the same guess.
	_, errOut, code = runCLI(t, t.TempDir(), "stauts")
	if code != 2 || !strings.Contains(errOut, `unknown command "stauts": did you mean "status"?`) {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}

// A typo saved in config.yaml while the daemon runs does not make status
// and search fail: they ask the daemon, which keeps the configuration it
// started with, and warn about the file.
func TestBrokenConfigWhileTheDaemonRuns(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "timezone: UTC\n")
	startDaemon(t, home)
	writeFile(t, filepath.Join(home, "config.yaml"), "timezone: UTC\nlog_levle: debug\n")

	out, errOut, code := runCLI(t, home, "status")
	if code != 0 || !strings.Contains(out, "daemon running") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `line 2: unknown key "log_levle" (did you mean "log_level"?)`) || !strings.Contains(errOut, "keeps the configuration it started with") {
		t.Errorf("status does not warn about the file:\n%s", errOut)
	}
	out, errOut, code = runCLI(t, home, "search", "--json", "anything")
	var hits []api.SearchHit
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil {
		t.Fatalf("search: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "log_levle") {
		t.Errorf("search does not warn about the file:\n%s", errOut)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Exit statuses tell success, failure, a command-line mistake and a
// partial import apart, and under --json every outcome is one JSON
// document on stdout.
func TestExitStatusesAndJSONErrors(t *testing.T) {
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "collectors", "importer", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()

	// A partial import: exit 3, the summary lists what failed.
	out, errOut, code := runCLI(t, home, "import", "jsonl", filepath.Join(fixtures, "bad.jsonl"))
	if code != exitPartial || !strings.Contains(out, "failed     6") || !strings.Contains(errOut, "6 of 8 could not be imported") {
		t.Fatalf("partial import: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = runCLI(t, home, "import", "jsonl", filepath.Join(fixtures, "bad.jsonl"), "--json")
	var sum api.ImportSummary
	if code != exitPartial || json.Unmarshal([]byte(out), &sum) != nil || len(sum.Failed) != 6 {
		t.Fatalf("partial import --json: exit %d\n%s", code, out)
	}
	// A whole one: 0.
	if _, errOut, code := runCLI(t, home, "import", "jsonl", filepath.Join(fixtures, "good.jsonl")); code != 0 {
		t.Fatalf("good import: exit %d\n%s", code, errOut)
	}

	// Collecting with nothing set up fails, with or without a name.
	for _, args := range [][]string{{"collect"}, {"collect", "gmail"}} {
		if _, errOut, code := runCLI(t, home, args...); code != exitFailure || !strings.Contains(errOut, "set up") {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
		}
	}

	jsonCases := []struct {
		args []string
		code int
		kind string
		want string
	}{
		{[]string{"explain", "no-such-id"}, exitFailure, "not_found", "no-such-id"},
		{[]string{"telegram", "pair"}, exitFailure, "failed", "OMNIBRAIN_TELEGRAM_TOKEN"},
		{[]string{"search", "--source", "gmial", "budget"}, exitUsage, "usage", `unknown --source "gmial" (did you mean "gmail"?)`},
		{[]string{"frobnicate"}, exitUsage, "usage", "unknown command"},
		{[]string{"collect"}, exitFailure, "", ""}, // its results are the JSON
	}
	for _, tc := range jsonCases {
		out, errOut, code := runCLI(t, home, append(tc.args, "--json")...)
		if code != tc.code {
			t.Errorf("%v --json: exit %d, want %d\n%s\n%s", tc.args, code, tc.code, out, errOut)
			continue
		}
		dec := json.NewDecoder(strings.NewReader(out))
		var doc any
		if err := dec.Decode(&doc); err != nil || dec.More() {
			t.Errorf("%v --json: stdout is not one JSON document (%v):\n%s", tc.args, err, out)
			continue
		}
		if tc.kind == "" {
			continue
		}
		var je jsonError
		json.Unmarshal([]byte(out), &je)
		if je.Error.Code != tc.kind || !strings.Contains(je.Error.Message, tc.want) {
			t.Errorf("%v --json: %s, want code %q and %q", tc.args, out, tc.kind, tc.want)
		}
		if strings.Contains(out, "/start") || strings.Contains(out, "expires") {
			t.Errorf("%v --json shows a pairing code that cannot be used:\n%s", tc.args, out)
		}
	}

	// A known source with nothing in it yet is no mistake.
	if out, errOut, code := runCLI(t, home, "search", "--source", "gmail", "budget"); code != 0 {
		t.Errorf("search --source gmail: exit %d\n%s\n%s", code, out, errOut)
	}
}

// mboxMessage is one message of an mbox written by writeMbox.
type mboxMessage struct {
	from, subject, body, id string
	age                     time.Duration // before now
	headers                 string        // more header lines, each ending in \n
}

// writeMbox writes msgs, dated relative to now, as an mbox file.
func writeMbox(t *testing.T, path string, msgs []mboxMessage) {
	t.Helper()
	var b strings.Builder
	now := time.Now()
	for _, m := range msgs {
		d := now.Add(-m.age)
		addr := m.from
		if i := strings.Index(addr, "<"); i >= 0 {
			addr = strings.Trim(addr[i:], "<>")
		}
		fmt.Fprintf(&b, "From %s %s\nFrom: %s\nTo: Ada Lovelace <ada@example.com>\nSubject: %s\nDate: %s\nMessage-ID: <%s>\n%s\n%s\n\n",
			addr, d.UTC().Format("Mon Jan _2 15:04:05 2006"), m.from, m.subject, d.Format(time.RFC1123Z), m.id, m.headers, m.body)
	}
	writeFile(t, path, b.String())
}

// firstMbox is a small archive as a new user might import first: two
// recent mails that ask for an answer, a recent newsletter, and an old
// request that is history.
func firstMbox(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "inbox.mbox")
	writeMbox(t, path, []mboxMessage{
		{"Lily Chen <lily@example.com>", "Dinner on Friday?", "Hi Ada,\nare you coming to dinner on Friday? Please let me know by tomorrow.\nLily", "lily-1@example.com", 20 * time.Hour, ""},
		{"Bob Smith <bob@example.com>", "Budget numbers", "Ada, could you send me the Q3 budget numbers? Please reply when you can.\nBob", "bob-1@example.com", 50 * time.Hour, ""},
		{"Shop News <news@shop.example.com>", "50% off everything this week", "Big sale! Unsubscribe at https://shop.example.com/unsubscribe", "news-1@shop.example.com", 30 * time.Hour,
			"List-Unsubscribe: <https://shop.example.com/unsubscribe>\nPrecedence: bulk\n"},
		{"Carol <carol@example.com>", "Old design review", "Could you review the design doc? Please let me know.", "carol-1@example.com", 40 * 24 * time.Hour, ""},
	})
	return path
}

// A new user with no account imports an mbox: its mail of the last week
// is triaged quietly (nothing is notified), the import says where it will
// show, the morning briefing lists what needs an answer, and explain
// shows the triage. Older mail is left alone.
func TestImportedRecentMailIsTriagedQuietlyIntoTheBriefing(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "owner:\n  name: Ada Lovelace\n  emails: [ada@example.com]\n")
	mbox := firstMbox(t)
	out, errOut, code := runCLI(t, home, "import", "mbox", mbox)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "triaged quietly (no notifications): 3 mails of the last 7 days") ||
		!strings.Contains(out, "they will be in the next briefing") || !strings.Contains(out, "omnibrain briefing morning") {
		t.Fatalf("the import does not say what the next briefing will hold:\n%s", out)
	}
	if strings.Contains(errOut, "owner.emails is not set") {
		t.Errorf("the import asks for owner.emails, which is set:\n%s", errOut)
	}

	out, errOut, code = runCLI(t, home, "briefing", "morning")
	if code != 0 {
		t.Fatalf("briefing: exit %d\n%s", code, errOut)
	}
	_, imported, ok := strings.Cut(out, "Imported mail of the last days: 3 —")
	if !ok {
		t.Fatalf("the briefing has no imported mail:\n%s", out)
	}
	imported, _, _ = strings.Cut(imported, "\n\n")
	for _, want := range []string{"Lily Chen — Dinner on Friday?", "Bob Smith — Budget numbers"} {
		if !strings.Contains(imported, want) {
			t.Errorf("the briefing's imported mail lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "50% off") || strings.Contains(out, "Old design review") {
		t.Errorf("the briefing lists a newsletter or old mail:\n%s", out)
	}

	out, _, code = runCLI(t, home, "explain", "lily-1@example.com")
	if code != 0 || !strings.Contains(out, "Triage: respond") || !strings.Contains(out, "imported from an archive: decided quietly") {
		t.Errorf("explain of the recent request:\n%s", out)
	}
	out, _, _ = runCLI(t, home, "explain", "carol-1@example.com")
	if !strings.Contains(out, "Not triaged") {
		t.Errorf("explain of the old request:\n%s", out)
	}

	// Quietly: not one notification about the imported mail.
	s, err := store.Open(context.Background(), filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM notifications WHERE item_id != 0`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d notifications about imported mail (%v), want none", n, err)
	}
	s.Close()

	// Importing the same archive again decides nothing anew.
	out, _, _ = runCLI(t, home, "import", "mbox", mbox)
	if strings.Contains(out, "triaged quietly") {
		t.Errorf("a re-import triaged again:\n%s", out)
	}
}

// Briefings: --refresh makes today's again with what arrived since; the
// weekly review's title names the days it covers and its counts add up;
// a handful of mails makes no trend.
func TestBriefingRefreshAndAnHonestWeeklyReview(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), "timezone: UTC\nowner:\n  emails: [ada@example.com]\n")
	if out, errOut, code := runCLI(t, home, "import", "mbox", firstMbox(t)); code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	first, _, code := runCLI(t, home, "briefing", "morning")
	if code != 0 || !strings.Contains(first, "Dinner on Friday?") {
		t.Fatalf("first briefing:\n%s", first)
	}

	// More mail arrives after the morning briefing was made.
	now := time.Now().UTC()
	monday := time.Date(now.Year(), now.Month(), now.Day()-(int(now.Weekday())+6)%7, 0, 0, 0, 0, time.UTC)
	more := filepath.Join(t.TempDir(), "more.mbox")
	writeMbox(t, more, []mboxMessage{
		{"Grace Hopper <grace@example.com>", "Contract to sign", "Ada, please sign the contract and send it back by tomorrow.", "grace-1@example.com", 2 * time.Hour, ""},
		// Last week two mails, the week before one: "+100% (2 vs 1)" is no trend.
		{"Dan <dan@example.com>", "Lunch", "Lunch?", "dan-1@example.com", now.Sub(monday.AddDate(0, 0, -6)), ""},
		{"Dan <dan@example.com>", "Lunch again", "Lunch?", "dan-2@example.com", now.Sub(monday.AddDate(0, 0, -5)), ""},
		{"Dan <dan@example.com>", "Old lunch", "Lunch?", "dan-3@example.com", now.Sub(monday.AddDate(0, 0, -12)), ""},
	})
	out, _, code := runCLI(t, home, "import", "mbox", more)
	if code != 0 || !strings.Contains(out, "omnibrain briefing morning --refresh") {
		t.Fatalf("the import does not say how to see its mail in today's briefing:\n%s", out)
	}
	again, _, _ := runCLI(t, home, "briefing", "morning")
	if again != first {
		t.Errorf("without --refresh the stored briefing changed:\n%s\nwas:\n%s", again, first)
	}
	refreshed, errOut, code := runCLI(t, home, "briefing", "morning", "--refresh")
	if code != 0 || !strings.Contains(refreshed, "Contract to sign") || !strings.Contains(refreshed, "Dinner on Friday?") {
		t.Fatalf("refreshed briefing: exit %d\n%s\n%s", code, refreshed, errOut)
	}
	if again, _, _ := runCLI(t, home, "briefing", "morning"); again != refreshed {
		t.Errorf("the refreshed briefing is not the one stored:\n%s", again)
	}

	out, errOut, code = runCLI(t, home, "briefing", "weekly", "--json")
	var wk api.Briefing
	if code != 0 || json.Unmarshal([]byte(out), &wk) != nil {
		t.Fatalf("weekly: exit %d\n%s\n%s", code, out, errOut)
	}
	if !wk.PeriodStart.Equal(monday.AddDate(0, 0, -7)) || !wk.PeriodEnd.Equal(monday) {
		t.Errorf("weekly covers %v to %v, want the last whole week from %v", wk.PeriodStart, wk.PeriodEnd, monday.AddDate(0, 0, -7))
	}
	title := fmt.Sprintf("Weekly review — %s to %s\n", wk.PeriodStart.Format("Monday, January 2"), wk.PeriodEnd.Add(-time.Hour).Format("Monday, January 2"))
	if !strings.HasPrefix(wk.Text, title) {
		t.Errorf("weekly title does not name its days %q:\n%s", title, wk.Text)
	}
	var received, personal, bulk, other, sent int
	line := wk.Text[strings.Index(wk.Text, "\nMail: ")+1:]
	if _, err := fmt.Sscanf(line, "Mail: %d received (%d personal, %d bulk, %d other), %d sent", &received, &personal, &bulk, &other, &sent); err != nil {
		t.Fatalf("weekly mail line %q: %v", strings.SplitN(line, "\n", 2)[0], err)
	}
	if received != 2 || personal+bulk+other != received {
		t.Errorf("weekly counts: %d received = %d personal + %d bulk + %d other?", received, personal, bulk, other)
	}
	if strings.Contains(wk.Text, "Trends") {
		t.Errorf("a trend from a handful of mails:\n%s", wk.Text)
	}
}

// Without Telegram, what omnibrain has to say waits in the queue: status
// says how much, notifications reads it, clear empties it.
func TestNotificationsWaitingWithoutTelegram(t *testing.T) {
	home := t.TempDir()
	if _, errOut, code := runCLI(t, home, "briefing", "morning"); code != 0 { // queued for the owner, as the schedule's would be
		t.Fatalf("briefing: exit %d\n%s", code, errOut)
	}
	out, _, _ := runCLI(t, home, "status")
	if !strings.Contains(out, "notifications  1 waiting (no Telegram bot is set up; omnibrain notifications reads them)") {
		t.Errorf("status does not say what waits:\n%s", out)
	}
	var st api.Status
	out, _, _ = runCLI(t, home, "status", "--json")
	if json.Unmarshal([]byte(out), &st) != nil || st.NotificationsWaiting != 1 {
		t.Errorf("status --json: %s", out)
	}
	out, _, code := runCLI(t, home, "notifications")
	if code != 0 || !strings.Contains(out, "1 notification waiting for delivery") || !strings.Contains(out, "Good morning") {
		t.Fatalf("notifications: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, home, "notifications", "--json")
	var ns []api.Notification
	if json.Unmarshal([]byte(out), &ns) != nil || len(ns) != 1 || !strings.Contains(ns[0].Text, "Good morning") {
		t.Fatalf("notifications --json: %s", out)
	}
	if _, errOut, code := runCLI(t, home, "notifications", "clear", "x1"); code != exitUsage {
		t.Errorf("clear with a bad id: exit %d\n%s", code, errOut)
	}
	out, _, code = runCLI(t, home, "notifications", "clear", strconv.FormatInt(ns[0].ID, 10))
	if code != 0 || !strings.Contains(out, "cleared 1 notification") {
		t.Fatalf("clear: exit %d\n%s", code, out)
	}
	if out, _, _ := runCLI(t, home, "notifications"); !strings.Contains(out, "no notifications wait") {
		t.Errorf("after clear:\n%s", out)
	}
	if out, _, _ := runCLI(t, home, "status"); strings.Contains(out, "waiting") {
		t.Errorf("status after clear:\n%s", out)
	}
}

// chat with a model that cannot be reached: no log lines, the error said
// once, a non-zero exit, and the search results the no-model path shows.
func TestChatWithAnUnreachableModel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing answers there now
	home := t.TempDir()
	if _, errOut, code := runCLI(t, home, "import", "mbox", firstMbox(t)); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	env := []string{"OMNIBRAIN_LLM_PROVIDER=openai", "OMNIBRAIN_LLM_BASE_URL=" + dead, "OMNIBRAIN_LLM_MODEL=gpt-test", "OMNIBRAIN_LLM_API_KEY=sk-test-key"}
	out, errOut, code := runCLIEnv(t, home, env, "chat", "what did Lily ask me about dinner?")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if !strings.Contains(out, "Dinner on Friday?") || !strings.Contains(out, "best match your question") {
		t.Errorf("no search results to fall back on:\n%s", out)
	}
	all := out + errOut
	if n := strings.Count(all, "connection refused"); n != 1 {
		t.Errorf("the error is said %d times, want once:\n%s\n%s", n, out, errOut)
	}
	for _, raw := range []string{"time=", "level=", "msg="} {
		if strings.Contains(errOut, raw) {
			t.Errorf("stderr has raw log lines (%q):\n%s", raw, errOut)
		}
	}
	if !strings.Contains(errOut, "the language model did not answer") {
		t.Errorf("stderr does not say what failed:\n%s", errOut)
	}

	out, _, code = runCLIEnv(t, home, env, "chat", "--json", "what did Lily ask me about dinner?")
	var ans struct {
		Text       string `json:"text"`
		ModelError string `json:"model_error"`
		Citations  []struct{ ID string }
	}
	if code != exitFailure || json.Unmarshal([]byte(out), &ans) != nil || !strings.Contains(ans.ModelError, "connection refused") || len(ans.Citations) == 0 {
		t.Errorf("chat --json: exit %d\n%s", code, out)
	}
}

// At night, in quiet hours, the owner asks in chat to write to Lily: the
// proposal reaches Telegram at once, not at the end of the quiet hours,
// which are for what omnibrain starts by itself.
func TestWhatTheOwnerAsksForIgnoresQuietHours(t *testing.T) {
	const tgToken = "4242:quiet-token"
	tg := faketg.New(tgToken)
	defer tg.Close()
	me := faketg.User{ID: 777, FirstName: "Ada"}
	tg.OpenChat(me.ID)
	model := fakellm.NewOpenAI(t)
	defer model.Close()
	model.Respond(func(r fakellm.Request) fakellm.Turn {
		if strings.Contains(r.System, "DATA or GENERAL") {
			return fakellm.Turn{Text: "DATA"}
		}
		for _, m := range r.Messages {
			if m.Role == "tool" && strings.Contains(m.Content, "pending") {
				return fakellm.Turn{Text: "I proposed the mail to Lily; it waits for your approval."}
			}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "send_email",
			Arguments: `{"to":["lily@example.com"],"subject":"Friday","body":"Hi Lily, I'll come on Friday. Ada"}`}}}
	})
	// Quiet hours around the present moment, whatever the clock says.
	now := time.Now().UTC()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), fmt.Sprintf("timezone: UTC\nnotifications:\n  quiet_start: %q\n  quiet_end: %q\n",
		now.Add(-time.Hour).Format("15:04"), now.Add(3*time.Hour).Format("15:04")))
	env := []string{"OMNIBRAIN_TELEGRAM_TOKEN=" + tgToken, "OMNIBRAIN_TELEGRAM_API_URL=" + tg.URL(), fmt.Sprintf("OMNIBRAIN_TELEGRAM_OWNER_ID=%d", me.ID),
		"OMNIBRAIN_LLM_PROVIDER=openai", "OMNIBRAIN_LLM_BASE_URL=" + model.URL, "OMNIBRAIN_LLM_API_KEY=sk-quiet", "OMNIBRAIN_LLM_MODEL=quiet-model"}
	d := startDaemon(t, home, env...)

	out, errOut, code := runCLIEnv(t, home, env, "chat", "reply to Lily that I'll come on Friday")
	if code != 0 || !strings.Contains(out, "waits for your approval") {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
	}
	waitFor(t, d, "the proposal the owner asked for in Telegram, in quiet hours", func() bool {
		for _, m := range tg.SentTo(me.ID) {
			if m.Keyboard != nil && strings.Contains(m.Text, "lily@example.com") {
				return true
			}
		}
		return false
	})
}

// Import noise: importing the same tree from a higher root updates
// nothing, a guessed date is listed when the message is stored and not on
// every re-import, and the guess is marked in explain and search.
func TestImportWithoutNoise(t *testing.T) {
	home := t.TempDir()
	root := t.TempDir()
	msg := func(id, date string) string {
		d := ""
		if date != "" {
			d = "Date: " + date + "\n"
		}
		return "From: Carol <carol@example.com>\nTo: ada@example.com\nSubject: Budget " + id + "\n" + d +
			"Message-ID: <" + id + "@example.com>\n\nThe budget, part " + id + ".\n"
	}
	writeFile(t, filepath.Join(mkdir(t, root, "work", "inbox", "cur"), "1.host:2,S"), msg("w1", "Mon, 4 Mar 2024 09:00:00 +0000"))
	writeFile(t, filepath.Join(mkdir(t, root, "work", "inbox", "cur"), "2.host:2,S"), msg("w2", "Tue, 5 Mar 2024 09:00:00 +0000"))
	writeFile(t, filepath.Join(mkdir(t, root, "work", "archive", "cur"), "3.host:2,S"), msg("w3", "Wed, 6 Mar 2024 09:00:00 +0000"))
	writeFile(t, filepath.Join(mkdir(t, root, "home", "inbox", "cur"), "4.host:2,S"), msg("h1", "Thu, 7 Mar 2024 09:00:00 +0000"))

	sum := importJSON(t, home, "maildir", filepath.Join(root, "work"))
	if sum.Added != 3 {
		t.Fatalf("first import: %+v", sum)
	}
	sum = importJSON(t, home, "maildir", root)
	if sum.Added != 1 || sum.Updated != 0 || sum.Unchanged != 3 {
		t.Errorf("the same messages from a higher root: added %d, updated %d, unchanged %d; want 1, 0, 3", sum.Added, sum.Updated, sum.Unchanged)
	}

	// An mbox whose second message has no date: dated by the first, and
	// that is said once.
	mbox := filepath.Join(t.TempDir(), "undated.mbox")
	writeFile(t, mbox, "From carol@example.com Mon Mar  4 09:00:00 2024\n"+msg("m1", "Mon, 4 Mar 2024 09:00:00 +0000")+"\n"+
		"From carol@example.com Thu Jan  1 00:00:00 1970\n"+msg("m2", "")+"\n")
	out, _, code := runCLI(t, home, "import", "mbox", mbox)
	if code != 0 || strings.Count(out, "kept with a guessed date") != 1 || !strings.Contains(out, "message 2 at byte") {
		t.Fatalf("first import of the undated mbox: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, home, "import", "mbox", mbox)
	if strings.Contains(out, "guessed date") {
		t.Errorf("the guessed-date list is printed again on a re-import:\n%s", out)
	}

	out, _, _ = runCLI(t, home, "explain", "m2@example.com")
	if !strings.Contains(out, "~ the date is a guess:") || !strings.Contains(out, "the message before it in the mbox") {
		t.Errorf("explain does not mark the guessed date:\n%s", out)
	}
	out, _, _ = runCLI(t, home, "search", "--source", "mbox", "budget")
	if !strings.Contains(out, "(date guessed)  mbox  Budget m2") || strings.Contains(out, "(date guessed)  mbox  Budget m1") {
		t.Errorf("search does not mark the guessed date (only):\n%s", out)
	}
	out, _, _ = runCLI(t, home, "search", "--json", "--source", "mbox", "budget")
	var hits []api.SearchHit
	json.Unmarshal([]byte(out), &hits)
	marked := 0
	for _, h := range hits {
		if h.DateUncertain != "" {
			marked++
		}
	}
	if len(hits) != 2 || marked != 1 {
		t.Errorf("search --json: %d hits, %d marked; want 2, 1:\n%s", len(hits), marked, out)
	}
}

func mkdir(t *testing.T, elem ...string) string {
	t.Helper()
	dir := filepath.Join(elem...)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func importJSON(t *testing.T, home, format, path string) api.ImportSummary {
	t.Helper()
	out, errOut, code := runCLI(t, home, "import", format, path, "--json")
	var sum api.ImportSummary
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("import %s: exit %d\n%s\n%s", path, code, out, errOut)
	}
	return sum
}

// Shell completion comes from the command table: every command, each
// command's words and flags complete, in bash, zsh and fish, through the
// scripts the binary prints.
func TestShellCompletion(t *testing.T) {
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := runCLI(t, t.TempDir(), "completion", sh)
		if code != 0 {
			t.Fatalf("completion %s: exit %d\n%s", sh, code, errOut)
		}
		scripts[sh] = out
		// Nothing in the table is left out of a script.
		for _, c := range commands() {
			words, _ := usageWords(c.args)
			for _, w := range append(words, c.name) {
				if !strings.Contains(out, w) {
					t.Errorf("%s completion lacks %s's %q", sh, c.name, w)
				}
			}
			c.flagSet(&env{}).VisitAll(func(f *flag.Flag) {
				if !strings.Contains(out, f.Name) {
					t.Errorf("%s completion lacks %s's flag %s", sh, c.name, f.Name)
				}
			})
		}
	}
	if _, errOut, code := runCLI(t, t.TempDir(), "completion", "fsih"); code != exitUsage || !strings.Contains(errOut, `did you mean "fish"?`) {
		t.Errorf("completion fsih: exit %d\n%s", code, errOut)
	}

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "inbox.mbox"), "")
	cases := []struct {
		line []string // the words typed; the last is being completed
		want []string
		not  []string
	}{
		{[]string{"omnibrain", "imp"}, []string{"import"}, []string{"status"}},
		{[]string{"omnibrain", "--home", dir, "brief"}, []string{"briefing"}, nil},
		{[]string{"omnibrain", "import", ""}, []string{"mbox", "maildir", "jsonl"}, nil},
		{[]string{"omnibrain", "import", "mbox", dir + "/in"}, []string{dir + "/inbox.mbox"}, nil},
		{[]string{"omnibrain", "briefing", "--re"}, []string{"--refresh"}, nil},
		{[]string{"omnibrain", "search", "--so"}, []string{"--source"}, []string{"--refresh"}},
		{[]string{"omnibrain", "collect", "gmail", "cal"}, []string{"calendar"}, nil},
		{[]string{"omnibrain", "help", "exit"}, []string{"exit-status"}, nil},
		{[]string{"omnibrain", "completion", "z"}, []string{"zsh"}, nil},
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s is not installed: its script is checked above, not run", sh)
			continue
		}
		path := filepath.Join(dir, "omnibrain."+sh)
		writeFile(t, path, scripts[sh])
		for _, tc := range cases {
			got := completeIn(t, sh, path, tc.line)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s: %q completes to %q, lacks %q", sh, strings.Join(tc.line, " "), got, w)
				}
			}
			for _, w := range tc.not {
				if slices.Contains(got, w) {
					t.Errorf("%s: %q completes to %q, including %q", sh, strings.Join(tc.line, " "), got, w)
				}
			}
		}
	}
}

// completeIn asks shell sh, with the completion script at path loaded,
// what completes the line, one candidate a line (zsh filters candidates by
// the prefix itself; so does this).
func completeIn(t *testing.T, sh, path string, line []string) []string {
	t.Helper()
	var cmd *exec.Cmd
	switch sh {
	case "bash":
		cmd = exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _omnibrain; printf '%s\n' "${COMPREPLY[@]}"`, "bash", path)
		cmd.Args = append(cmd.Args, line...)
	case "zsh":
		// The completion system's builtins are stood in for by functions
		// that print what they are given; the script's logic runs as is.
		cmd = exec.Command("zsh", "-c", `compdef() { }
compadd() { [[ $1 == -- ]] && shift; printf '%s\n' "$@" }
_describe() { printf '%s\n' "${(@P)4%%:*}" }
_files() { printf '%s\n' $PREFIX*(N) }
source "$1"; shift; words=("$@"); CURRENT=$#; PREFIX=$words[CURRENT]; _omnibrain`, "zsh", path)
		cmd.Args = append(cmd.Args, line...)
	case "fish":
		cmd = exec.Command("fish", "-c", `source $argv[1]; complete -C (string join -- ' ' $argv[2..-1])`, path)
		cmd.Args = append(cmd.Args, line...)
		if line[len(line)-1] == "" {
			cmd.Args[len(cmd.Args)-1] = "''"
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", sh, err, out)
	}
	var got []string
	prefix := line[len(line)-1]
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		l, _, _ = strings.Cut(l, "\t") // fish: candidate<TAB>description
		if l != "" && strings.HasPrefix(l, prefix) {
			got = append(got, l)
		}
	}
	return got
}

// help TOPIC explains what cuts across commands; the environment topic
// lists every variable the configuration reads; a wrong topic gets a
// guess.
func TestHelpTopics(t *testing.T) {
	home := t.TempDir()
	out, _, code := runCLI(t, home, "help")
	if code != 0 || !strings.Contains(out, "Help topics (omnibrain help TOPIC): start, queries") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
	for _, topic := range topicNames() {
		out, errOut, code := runCLI(t, home, "help", topic)
		if code != 0 || len(strings.Split(out, "\n")) < 5 {
			t.Errorf("help %s: exit %d\n%s%s", topic, code, out, errOut)
		}
		checkWidth(t, "help "+topic, out)
	}
	out, _, _ = runCLI(t, home, "help", "environment")
	for _, s := range config.EnvSettings() {
		if !strings.Contains(out, s.Name+" ") || !strings.Contains(out, s.Key) {
			t.Errorf("help environment lacks %s (%s):\n%s", s.Name, s.Key, out)
		}
	}
	out, _, _ = runCLI(t, home, "help", "search")
	if !strings.HasPrefix(out, "Usage: omnibrain search") {
		t.Errorf("help search is not the command's help:\n%s", out)
	}
	_, errOut, code := runCLI(t, home, "help", "querys")
	if code != exitUsage || !strings.Contains(errOut, `did you mean "queries"?`) {
		t.Errorf("help querys: exit %d\n%s", code, errOut)
	}
}

// On a terminal, search shows the query's matches in bold (and the
// no-model chat answer's snippets too); NO_COLOR, a pipe and --json get
// no escape codes, and nowhere does the owner see search's «» marks.
func TestMatchesHighlightedOnATerminal(t *testing.T) {
	home := t.TempDir()
	if _, errOut, code := runCLI(t, home, "import", "mbox", firstMbox(t)); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	shown, _, code := runOnTerminal(t, nil, true, "--home", home, "search", "dinner")
	if code != 0 || !strings.Contains(shown, "\x1b[1mdinner\x1b[0m") || strings.Contains(shown, "«") {
		t.Errorf("search on a terminal: exit %d\n%q", code, shown)
	}
	shown, _, _ = runOnTerminal(t, nil, true, "--home", home, "chat", "what did Lily ask about dinner?")
	if !strings.Contains(shown, "\x1b[1mdinner\x1b[0m") || strings.Contains(shown, "«") {
		t.Errorf("chat on a terminal:\n%q", shown)
	}
	shown, _, _ = runOnTerminal(t, []string{"NO_COLOR=1"}, true, "--home", home, "search", "dinner")
	if !strings.Contains(shown, "coming to dinner on Friday") || strings.Contains(shown, "\x1b[") || strings.Contains(shown, "«") {
		t.Errorf("search with NO_COLOR:\n%q", shown)
	}
	out, _, _ := runCLI(t, home, "search", "dinner")
	if !strings.Contains(out, "coming to dinner on Friday") || strings.Contains(out, "\x1b[") || strings.Contains(out, "«") {
		t.Errorf("search into a pipe:\n%s", out)
	}
	_, out, _ = runOnTerminal(t, nil, false, "--home", home, "search", "--json", "dinner")
	if strings.Contains(out, "\x1b[") {
		t.Errorf("search --json has escape codes:\n%s", out)
	}
}

// The README's "first ten minutes" is run as written: its config.yaml,
// then each of its bin/omnibrain commands in order, on an inbox like the
// one it shows; what it says the commands print, they print.
func TestFirstTenMinutesAsTheREADMEShows(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## The first ten minutes\n")
	if !ok {
		t.Fatal(`README has no "The first ten minutes"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, cfg, ok := strings.Cut(section, "<<'EOF'\n")
	cfg, _, ok2 := strings.Cut(cfg, "\nEOF\n")
	if !ok || !ok2 {
		t.Fatal("the walkthrough writes no config.yaml")
	}
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), cfg+"\n")
	mbox := filepath.Join(t.TempDir(), "Inbox.mbox")
	writeMbox(t, mbox, []mboxMessage{
		{"Lily Chen <lily@example.com>", "Dinner on Friday?", "Hi Ada,\n\nare you coming to dinner on Friday? Please let me know by tomorrow.\n\nLily", "lily-1@example.com", 20 * time.Hour, ""},
		{"Bob Smith <bob@example.com>", "Q3 budget numbers", "Ada, could you send me the Q3 budget numbers before the board meeting? Please reply when you can.\n\nBob", "bob-1@example.com", 50 * time.Hour, ""},
		{"Shop News <news@shop.example.com>", "50% off everything this week", "Big sale! Unsubscribe at https://shop.example.com/unsubscribe", "news-1@shop.example.com", 30 * time.Hour,
			"List-Unsubscribe: <https://shop.example.com/unsubscribe>\nPrecedence: bulk\n"},
		{"Carol Diaz <carol@example.com>", "Design review notes", "Thanks for the review last month, the notes are attached. Could you look at the budget section again?", "carol-1@example.com", 40 * 24 * time.Hour, ""},
	})

	// What each step must show, in the README and when run.
	shows := map[string][]string{
		"import":   {"triaged quietly (no notifications): 3 mails of the last 7 days — 1 need your answer", "to see them now: omnibrain briefing morning"},
		"search":   {"Q3 budget numbers", "from Bob Smith <bob@example.com>", "id: bob-1@example.com"},
		"briefing": {"Imported mail of the last days: 3", "Lily Chen — Dinner on Friday?", "Bob Smith — Q3 budget numbers", "Needs an answer (2)"},
		"explain":  {"Triage: notify — personal", "+10  to_you", "imported from an archive: decided quietly"},
		"chat":     {"best match your question", "[1] Dinner on Friday? — mbox"},
	}
	ran := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cmdline, ok := strings.CutPrefix(line, "$ bin/omnibrain ")
		if !ok {
			continue
		}
		args := shellWords(strings.ReplaceAll(cmdline, "~/Downloads/Inbox.mbox", mbox))
		out, errOut, code := runCLI(t, home, args...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s\n%s", cmdline, code, out, errOut)
		}
		ran[args[0]] = true
		for _, want := range shows[args[0]] {
			if !strings.Contains(section, want) {
				t.Errorf("the README does not show %q for %s", want, cmdline)
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s does not print %q:\n%s", cmdline, want, out)
			}
		}
	}
	for step := range shows {
		if !ran[step] {
			t.Errorf("the walkthrough has no %s step", step)
		}
	}
}

// shellWords splits a command line as a shell would, for the README's
// simple lines: words, and double-quoted strings.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// A first import without the owner's addresses says that they are
// missing: no mail can count as written to the owner, and the briefing
// would miss what needs an answer.
func TestFirstImportWithoutOwnerAddressesSaysSo(t *testing.T) {
	home := t.TempDir()
	out, errOut, code := runCLI(t, home, "import", "mbox", firstMbox(t))
	if code != 0 || !strings.Contains(out, "triaged quietly") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "owner.emails is not set in "+filepath.Join(home, "config.yaml")) || !strings.Contains(errOut, "omnibrain help start") {
		t.Errorf("the import does not say owner.emails is missing:\n%s", errOut)
	}
}
