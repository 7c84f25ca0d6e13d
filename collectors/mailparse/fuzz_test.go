package mailparse

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusSeeds returns up to perDir messages from each corpus folder (the
// first bytes of each), or nothing when ../shared/data is absent: fuzzing
// still runs on the inline seeds.
func corpusSeeds(perDir int) [][]byte {
	var out [][]byte
	for _, dir := range []string{"easy-ham-1", "hard-ham-1", "spam-1", "spam-2"} {
		out = append(out, seedDir(filepath.Join("..", "..", "..", "shared", "data", "mail", "spamassassin", "data", dir), perDir)...)
	}
	return append(out, seedDir(filepath.Join("..", "..", "..", "shared", "data", "mail", "enron", "maildir"), perDir)...)
}

func seedDir(dir string, n int) [][]byte {
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	var out [][]byte
	for i := 0; i < len(paths) && len(out) < n; i += max(1, len(paths)/n) {
		b, err := os.ReadFile(paths[i])
		if err != nil {
			continue
		}
		out = append(out, b[:min(len(b), 16<<10)])
	}
	return out
}

var inlineSeeds = []string{
	"From: a@b.c\r\nDate: Mon, 2 Sep 2002 08:00:00 +0000\r\n\r\nhello",
	"From x@y Thu Aug 22 12:36:23 2002\nFrom: a@b.c\nSubject: =?gb2312?B?xOO6ww==?=\n\nbody\n> quoted\n-- \nsig",
	"From: a@b.c\nDate: x\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/html\n\n<p>x<blockquote>q</blockquote>\n--b\nContent-Type: application/pdf\nContent-Transfer-Encoding: base64\n\nAAAA\n--b--",
	"Content-Type: text/plain; charset=iso-2022-jp\nDate: 1 Jan 2002 00:00 GMT\n\n\x1b$BF|K\\\x1b(B",
}

func FuzzParse(f *testing.F) {
	for _, s := range inlineSeeds {
		f.Add([]byte(s))
	}
	for _, b := range corpusSeeds(8) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "mailparse: ") {
				t.Fatalf("error without the package's name: %v", err)
			}
			return
		}
		if m.Date.IsZero() {
			t.Fatal("parsed message without a date")
		}
		for name, s := range map[string]string{"subject": m.Subject, "text": m.Text, "body": m.Body, "quoted": m.Quoted, "from": m.From.Name} {
			if !utf8.ValidString(s) {
				t.Fatalf("%s is not valid UTF-8: %q", name, s)
			}
		}
		if strings.TrimSpace(m.Text) != "" && m.Body == "" {
			t.Fatalf("text %q lost: empty body", m.Text)
		}
		it, _ := m.Item(ItemOptions{Source: "fuzz"})
		if err := it.Validate(); err != nil {
			t.Fatalf("item of a parsed message is invalid: %v", err)
		}
	})
}

func FuzzSplitReply(f *testing.F) {
	for _, s := range []string{
		"new\n\nOn Mon, Bob wrote:\n> old",
		"a\n-----Original Message-----\nFrom: x\nSent: y\nTo: z\n\nold",
		"text\n-- \nsig",
		"> only quote",
		"x\n_____\nlist mailing list\n",
	} {
		f.Add(s)
	}
	for _, b := range corpusSeeds(4) {
		if m, err := Parse(b); err == nil {
			f.Add(m.Text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		body, quoted := SplitReply(text)
		if strings.TrimSpace(text) != "" && body == "" {
			t.Fatalf("non-blank text %q gave an empty body", text)
		}
		// Nothing is invented: every line of the result is a line of the text.
		lines := map[string]bool{"": true} // parts are joined by blank lines
		for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for _, part := range []string{body, quoted} {
			for _, l := range strings.Split(part, "\n") {
				if !lines[strings.TrimSpace(l)] {
					t.Fatalf("line %q is not in the text %q", l, text)
				}
			}
		}
	})
}

func FuzzHTMLToText(f *testing.F) {
	for _, s := range []string{"<p>a<br>b</p>", "<blockquote><blockquote>x</blockquote></blockquote>", "<script>x</script>y", "<pre>\n a\n</pre>", "&amp;&#0;&#xFFFFFF;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := HTMLToText(s)
		if !utf8.ValidString(s) {
			return // the parser passes invalid bytes through; Parse guarantees UTF-8 input
		}
		if !utf8.ValidString(out) {
			t.Fatalf("output is not valid UTF-8: %q", out)
		}
		if strings.Contains(out, "\n\n\n") || out != strings.TrimSpace(out) {
			t.Fatalf("output not tidied: %q", out)
		}
	})
}
