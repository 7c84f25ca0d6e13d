package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

// ackLine is the plain progress line `import` prints when stderr is not a
// terminal; what it reports as added is committed.
var ackLine = regexp.MustCompile(`^import: (\d+)/(\d+) messages read, (\d+) added$`)

// kill -9 during an import loses nothing already acknowledged, leaves a
// sound database, and a re-run completes the import without duplicates.
func TestImportKilledMidwayLosesNothingAcknowledged(t *testing.T) {
	enron := testutil.SharedData(t, "mail/enron/maildir")
	home := t.TempDir()
	// A line per 1000-mail batch, whatever the machine's speed: at a line a
	// second a fast machine finished before the first one.
	cmd, stderr := startImport(t, home, enron)
	acked, total := -1, 0
	var seenLines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seenLines = append(seenLines, sc.Text())
		m := ackLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		done, _ := strconv.Atoi(m[1])
		total, _ = strconv.Atoi(m[2])
		added, _ := strconv.Atoi(m[3])
		if added > 0 && done < total {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			acked = added
			break
		}
	}
	go func() {
		for sc.Scan() { // drain whatever was buffered
		}
	}()
	waitErr := cmd.Wait()
	if acked < 0 {
		t.Fatalf("the import finished (%v) before it acknowledged progress mid-way; stderr:\n%s", waitErr, strings.Join(seenLines, "\n"))
	}
	if ee, ok := waitErr.(*exec.ExitError); !ok || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("import was not killed by the signal: %v", waitErr)
	}

	s, err := store.Open(context.Background(), filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored := countMaildir(t, s)
	if ok, err := s.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Fatalf("integrity_check after kill -9 = %q, %v", ok, err)
	}
	s.Close()
	if stored < int64(acked) || stored >= 2195 {
		t.Fatalf("after kill -9: %d items stored, %d acknowledged (of %d)", stored, acked, total)
	}
	t.Logf("killed after %d acknowledged; %d were stored", acked, stored)

	out, errOut, code := runCLI(t, home, "import", "maildir", enron, "--json")
	if code != 0 {
		t.Fatalf("re-run exit %d: %s", code, errOut)
	}
	var sum api.ImportSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	// The 3 undated mails are listed if this run stored them, not again if
	// the killed one did.
	if sum.Seen != 2195 || sum.Added != 2195-int(stored) || sum.Unchanged != int(stored) || sum.Updated != 0 || len(sum.Failed) != 0 || len(sum.Undated) > 3 {
		t.Fatalf("re-run summary %+v (stored before: %d)", sum, stored)
	}

	s, err = store.Open(context.Background(), filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countMaildir(t, s); n != 2195 {
		t.Fatalf("%d items after the re-run, want 2195", n)
	}
	if ok, err := s.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Fatalf("integrity_check = %q, %v", ok, err)
	}
	// The full-text index holds exactly the stored rows.
	if _, err := s.DB().Exec(`INSERT INTO items_fts (items_fts) VALUES ('integrity-check')`); err != nil {
		t.Fatalf("fts integrity: %v", err)
	}
	var messages int
	if err := s.DB().QueryRow(`SELECT COALESCE(SUM(messages), 0) FROM threads`).Scan(&messages); err != nil || messages != 2195 {
		t.Fatalf("threads count %d mails (%v), want each of the 2195 once", messages, err)
	}
}

func countMaildir(t *testing.T, s *store.Store) int64 {
	t.Helper()
	counts, err := s.CountItems(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Source == "maildir" {
			return c.Items
		}
	}
	return 0
}

// runImport runs the import command in-process.
func runImport(t *testing.T, home string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"--home", home, "import"}, args...), strings.NewReader(""), &out, &errOut,
		func(string) string { return "" })
	return out.String(), errOut.String(), err
}

func TestImportCommand(t *testing.T) {
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "collectors", "importer", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	home, empty := t.TempDir(), t.TempDir()
	t.Chdir(fixtures)

	// A relative path is resolved against the caller's directory.
	out, _, err := runImport(t, home, "jsonl", "good.jsonl", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum api.ImportSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if sum.Path != filepath.Join(fixtures, "good.jsonl") || sum.Added != 3 || sum.Seen != 3 {
		t.Fatalf("summary %+v", sum)
	}

	// Some lines failed: the rest is stored, and the exit status says so.
	out, _, err = runImport(t, home, "jsonl", "bad.jsonl")
	if exitStatus(err) != exitPartial {
		t.Fatalf("import of a partly bad file: %v (exit %d), want exit %d", err, exitStatus(err), exitPartial)
	}
	for _, want := range []string{"added      2", "failed     6", "bad.jsonl: line 2: invalid JSON", `bad.jsonl: line 4: "time" "yesterday" is not RFC 3339`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	cases := []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"jsonl"}, true, "import needs a format and a path"},
		{[]string{"pst", "good.jsonl"}, true, `unknown format "pst"`},
		{[]string{"maildir", "good.jsonl"}, true, "is a file, not a maildir directory (for a single jsonl file use: omnibrain import jsonl good.jsonl)"},
		{[]string{"mbox", "."}, true, "use: omnibrain import maildir ."},
		{[]string{"mbox", "missing.mbox"}, false, filepath.Join(fixtures, "missing.mbox") + " does not exist"},
		{[]string{"--progress-every", "0", "mbox", "missing.mbox"}, true, "--progress-every must be positive"},
		// An empty source is most likely the wrong path, not a success.
		{[]string{"maildir", empty}, false, "found nothing to import in " + empty},
	}
	for _, c := range cases {
		_, _, err := runImport(t, home, c.args...)
		var ue usageError
		isUsage := errors.As(err, &ue)
		if err == nil || isUsage != c.usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("import %v = %v (usage %v), want %q (usage %v)", c.args, err, isUsage, c.want, c.usage)
		}
	}
}

// The plain progress lines come at most once a second and end with the
// final count.
func TestImportProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := newImportProgress(&buf, time.Second)
	start := time.Now()
	for i := int64(0); i <= 1000; i += 100 {
		p.update(api.ImportProgress{Done: i, Total: 1000, Unit: "messages", Added: int(i)})
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if time.Since(start) < time.Second && len(lines) != 2 {
		t.Fatalf("lines = %q, want the first and the last", lines)
	}
	if lines[len(lines)-1] != "import: 1000/1000 messages read, 1000 added" {
		t.Fatalf("last line = %q", lines[len(lines)-1])
	}
}

// The plain lines end with the final count even when the API's last event
// came early (it throttles them), never with "0/153 read".
func TestImportProgressEndsWithTheFinalCount(t *testing.T) {
	var buf bytes.Buffer
	p := newImportProgress(&buf, time.Hour)
	p.update(api.ImportProgress{Done: 0, Total: 153, Unit: "messages"})
	p.finish(150)
	want := "import: 0/153 messages read, 0 added\nimport: 153/153 messages read, 150 added\n"
	if buf.String() != want {
		t.Fatalf("lines %q, want %q", buf.String(), want)
	}
	// A failed import ends with its error, not with a made-up count.
	buf.Reset()
	p = newImportProgress(&buf, time.Hour)
	p.update(api.ImportProgress{Done: 10, Total: 153, Unit: "messages"})
	p.finish(-1)
	if strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("after a failure: %q", buf.String())
	}
}

// Ctrl-C during an import says what became of the work and how to finish.
func TestImportInterruptedSaysHowToFinish(t *testing.T) {
	enron := testutil.SharedData(t, "mail/enron/maildir")
	cmd, stderr := startImport(t, t.TempDir(), enron)
	var lines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if m := ackLine.FindStringSubmatch(sc.Text()); m != nil && m[1] != m[2] && m[3] != "0" {
			cmd.Process.Signal(os.Interrupt)
			break
		}
	}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "import interrupted") || !strings.Contains(last, "run the same command again") {
		t.Fatalf("last line %q\n%s", last, strings.Join(lines, "\n"))
	}
}
