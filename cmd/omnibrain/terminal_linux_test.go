package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// writeMaildir writes n small messages into dir/cur, one file each.
func writeMaildir(t *testing.T, dir string, n int) {
	t.Helper()
	day := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	if err := os.MkdirAll(filepath.Join(dir, "cur"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		writeFile(t, filepath.Join(dir, "cur", fmt.Sprintf("%d.host:2,S", i)), fmt.Sprintf(
			"From: Sender %d <s%d@example.com>\nTo: ada@example.com\nSubject: Note %d\nDate: %s\nMessage-ID: <note-%d@example.com>\n\nNote number %d.\n",
			i%40, i%40, i, day.Add(time.Duration(i)*time.Minute).Format(time.RFC1123Z), i, i))
	}
}

// barFrame is what the progress bar draws: "importing, N added … (done/total".
var barFrame = regexp.MustCompile(`importing, (\d+) added[^(]*\((\d+)/(\d+)`)

// On a terminal the import draws a progress bar, and no frame of it ever
// shows more added than read.
func TestImportProgressBarNeverShowsMoreAddedThanRead(t *testing.T) {
	root := t.TempDir()
	writeMaildir(t, root, 3000)
	shown, out, code := runOnTerminal(t, nil, false, "--home", t.TempDir(), "import", "maildir", root)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, shown)
	}
	frames := barFrame.FindAllStringSubmatch(shown, -1)
	if len(frames) < 2 {
		t.Fatalf("%d progress frames on the terminal, want several:\n%q", len(frames), shown)
	}
	for _, f := range frames {
		added, _ := strconv.Atoi(f[1])
		done, _ := strconv.Atoi(f[2])
		if added > done {
			t.Errorf("a frame shows %d added of %d read: %q", added, done, f[0])
		}
	}
}
