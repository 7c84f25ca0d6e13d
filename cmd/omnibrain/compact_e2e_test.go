package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/omnibrain/omnibrain/store"
)

// A home made with 4 KB pages is compacted to the page size new homes
// get, keeps every item findable, and is never compacted under a daemon.
func TestCompactCommand(t *testing.T) {
	home := t.TempDir()
	if out, _, code := runCLI(t, home, "compact"); code != 0 || !strings.Contains(out, "nothing to compact") {
		t.Fatalf("compact of a home without a database: exit %d, %q", code, out)
	}
	if out, _, code := runCLI(t, home, "--json", "compact"); code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("compact --json of a home without a database: exit %d, %q is no JSON document", code, out)
	}

	db, err := sql.Open("sqlite3", filepath.Join(home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE before_omnibrain (x)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var lines []string
	for i := range 300 {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprint("note-", i), "source": "notes", "time": "2026-03-02T09:00:00Z",
			"title": fmt.Sprint("Note ", i), "text": fmt.Sprintf("Note %d about the harbour crane inspection.", i)})
		lines = append(lines, string(line))
	}
	lines = append(lines, `{"id":"note-x","source":"notes","time":"2026-03-02T10:00:00Z","title":"Zanzibar","text":"the quokka sanctuary budget"}`)
	jsonl := filepath.Join(t.TempDir(), "notes.jsonl")
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, home, "import", "jsonl", jsonl); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}

	d := startDaemon(t, home)
	_, errOut, code := runCLI(t, home, "compact")
	if code != 1 || !strings.Contains(errOut, "daemon is running") || !strings.Contains(errOut, "stop it first") {
		t.Errorf("compact under a running daemon: exit %d, %q; want a refusal that says to stop it", code, errOut)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("daemon stop: %v", err)
	}

	out, errOut, code := runCLI(t, home, "--json", "compact")
	if code != 0 {
		t.Fatalf("compact: exit %d: %s", code, errOut)
	}
	var c store.Compaction
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compact --json: %v\n%s", err, out)
	}
	if c.PageBefore != 4096 || c.PageAfter != 32<<10 {
		t.Errorf("compact: pages of %d -> %d bytes, want 4096 -> 32768", c.PageBefore, c.PageAfter)
	}
	out, errOut, code = runCLI(t, home, "--json", "search", "quokka sanctuary")
	if code != 0 || !strings.Contains(out, `"note-x"`) {
		t.Errorf("search after compacting: exit %d, %s %s", code, out, errOut)
	}
}
