package mailparse

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

// corpusFiles lists every message file of the shared mail corpora.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, dir := range []string{"mail/spamassassin/data", "mail/enron/maildir"} {
		root := testutil.SharedData(t, dir)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// A real message is whole (but 55 that are broken as found); cut inside its headers it says so; a multipart
// message cut in its body lacks its closing boundary and says so; whatever
// the cut, the text never grows. The fingerprint ignores what archives
// change (line ends, blank lines around the message).
func TestCorpusCutCopiesAreDamaged(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 8,241 files; run without -short")
	}
	whole, damagedWhole, multipart := 0, map[string]int{}, 0
	for i, p := range corpusFiles(t) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(raw)
		if err != nil {
			continue // the three epoch-dated Enron files (TestCorpusParsesEveryMessage)
		}
		whole++
		if m.Damaged != "" {
			damagedWhole[m.Damaged]++
			continue
		}
		if i%7 != 0 {
			continue
		}
		lf := bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
		crlf := append(bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n")), "\r\n\r\n"...)
		if c, err := Parse(crlf); err != nil || c.Fingerprint != m.Fingerprint {
			t.Errorf("%s: with CRLF and a trailing blank line: another fingerprint (%v)", p, err)
		}
		end := headerEnd(raw)
		if end < 0 {
			t.Errorf("%s: whole, but no end of headers found", p)
			continue
		}
		cut := raw[:end/2]
		if c, err := Parse(cut); err == nil && !strings.Contains(c.Damaged, "headers") {
			t.Errorf("%s: cut at byte %d inside its headers: damaged %q", p, end/2, c.Damaged)
		}
		bodyCut := raw[:end+(len(raw)-end)/2]
		c, err := Parse(bodyCut)
		if err != nil {
			t.Errorf("%s: cut mid-body: %v", p, err)
			continue
		}
		if c.Damaged == "" && len(c.Body)+len(c.Quoted) > len(m.Body)+len(m.Quoted) {
			t.Errorf("%s: cut mid-body, its text grew from %d to %d", p, len(m.Body)+len(m.Quoted), len(c.Body)+len(c.Quoted))
		}
		if strings.Contains(strings.ToLower(string(raw[:end])), "multipart/") {
			multipart++
			if c.Damaged == "" {
				t.Errorf("%s: multipart cut mid-body, not damaged", p)
			}
		}
	}
	// Measured: 53 real messages (spam, mostly) lack a closing boundary
	// and 2 have a broken base64 part; a count far off means whole
	// messages are taken for damaged ones, or the reverse.
	if n := damagedWhole["a multipart part ends without its closing boundary"] + damagedWhole["an encoded part is cut or broken"]; n != 55 || multipart < 40 {
		t.Errorf("%d of %d messages as found are damaged (%v), want 55; %d multipart messages cut", n, whole, damagedWhole, multipart)
	}
}

// headerEnd is the offset of the blank line that ends the headers, or -1.
func headerEnd(raw []byte) int {
	i, j := bytes.Index(raw, []byte("\n\n")), bytes.Index(raw, []byte("\n\r\n"))
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}
