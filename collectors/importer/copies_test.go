package importer

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

// corpusSample returns up to n message files of a shared corpus folder.
func corpusSample(t *testing.T, rel string, n int) []string {
	t.Helper()
	var paths []string
	filepath.WalkDir(testutil.SharedData(t, rel), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && len(paths) < n {
			paths = append(paths, p)
		}
		return nil
	})
	return paths
}

// writeMaildir writes the messages as the files of a maildir's cur folder.
func writeMaildir(t *testing.T, msgs [][]byte) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "cur"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i, raw := range msgs {
		if err := os.WriteFile(filepath.Join(root, "cur", fmt.Sprintf("%d.host:2,S", i)), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// headerEnd is the offset of the blank line that ends the headers, or -1.
func headerEnd(raw []byte) int {
	i, j := bytes.Index(raw, []byte("\n\n")), bytes.Index(raw, []byte("\n\r\n"))
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}

// cutCopies cuts real messages as a broken download or a full disk does:
// every other one inside its headers (after its Message-ID, so that it is
// a copy of the same message), the others in the middle of the body. It
// returns the whole messages, their cut copies, and the parsed whole ones.
func cutCopies(t *testing.T, paths []string) (whole, cut [][]byte, parsed []*mailparse.Message) {
	t.Helper()
	for _, p := range paths {
		raw := mustRead(t, p)
		m, err := mailparse.Parse(raw)
		if err != nil || m.MessageID == "" || m.Damaged != "" {
			continue
		}
		end := headerEnd(raw)
		idx := bytes.Index(bytes.ToLower(raw), []byte("\nmessage-id:"))
		if end < 0 || idx < 0 || idx > end {
			continue
		}
		idEnd := idx + 1 + bytes.IndexByte(raw[idx+1:], '\n')
		var c []byte
		if len(whole)%2 == 0 {
			if end-idEnd < 8 {
				continue
			}
			c = raw[:idEnd+(end-idEnd)/2]
		} else {
			c = raw[:end+(len(raw)-end)/2]
			// Only cuts that lose text: a cut in an attachment may not.
			if cm, err := mailparse.Parse(c); err != nil || cm.Damaged == "" && len(cm.Subject+cm.Body+cm.Quoted) >= len(m.Subject+m.Body+m.Quoted) {
				continue
			}
		}
		whole, cut, parsed = append(whole, raw), append(cut, c), append(parsed, m)
	}
	if len(whole) < 20 {
		t.Fatalf("only %d messages to cut in the sample", len(whole))
	}
	return whole, cut, parsed
}

// A copy of a stored message cut inside its headers or in the middle of
// its body, imported from the same maildir or from an mbox, leaves the
// stored text as it was and the summary says "kept the stored copy" and
// why; imported in the other order, the whole copy replaces the cut one.
func TestImportKeepsTheStoredCopyOverACutOne(t *testing.T) {
	paths := append(corpusSample(t, "mail/spamassassin/data/easy-ham-1", 40), corpusSample(t, "mail/enron/maildir/whalley-g", 40)...)
	whole, cut, parsed := cutCopies(t, paths)
	ctx := context.Background()
	s := openStore(t)
	im := New(Options{Store: s})
	sum, err := im.Import(ctx, "maildir", writeMaildir(t, whole), nil)
	if err != nil || sum.Added != len(whole) {
		t.Fatalf("whole copies: %+v, %v", sum, err)
	}
	for _, format := range []string{"maildir", "mbox"} {
		path := writeMaildir(t, cut)
		if format == "mbox" {
			var files []string
			for i := range cut {
				files = append(files, filepath.Join(path, "cur", fmt.Sprintf("%d.host:2,S", i)))
			}
			path, _, _ = writeMbox(t, files)
		}
		sum, err := im.Import(ctx, format, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkSums(t, sum, len(cut))
		if sum.Added != 0 || sum.Updated != 0 || len(sum.Kept) != len(cut) {
			t.Fatalf("%s of cut copies: added %d, updated %d, kept %d of %d: %v", format, sum.Added, sum.Updated, len(sum.Kept), len(cut), sum.Failed)
		}
		inHeaders := 0
		for _, k := range sum.Kept {
			if !strings.HasPrefix(k.Reason, "kept the stored copy: the new copy is ") || k.Where == "" {
				t.Errorf("%s: kept %+v", format, k)
			}
			if strings.Contains(k.Reason, "damaged (it ends inside its headers)") {
				inHeaders++
			}
		}
		if inHeaders != (len(cut)+1)/2 {
			t.Errorf("%s: %d copies said to end inside their headers, %d did", format, inHeaders, (len(cut)+1)/2)
		}
		checkStored(t, s, parsed)
	}

	// The other order: the whole copies repair the cut ones.
	s2 := openStore(t)
	im2 := New(Options{Store: s2})
	if _, err := im2.Import(ctx, "maildir", writeMaildir(t, cut), nil); err != nil {
		t.Fatal(err)
	}
	sum, err = im2.Import(ctx, "maildir", writeMaildir(t, whole), nil)
	if err != nil || sum.Updated != len(whole) || len(sum.Kept) != 0 {
		t.Fatalf("whole copies after cut ones: %+v, %v", sum, err)
	}
	checkStored(t, s2, parsed)
}

// checkStored asserts that each message is one item holding its whole text.
func checkStored(t *testing.T, s *store.Store, msgs []*mailparse.Message) {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM items`).Scan(&n); err != nil || n != len(msgs) {
		t.Fatalf("%d items for %d messages, %v", n, len(msgs), err)
	}
	for _, m := range msgs {
		it, err := s.ItemByExternalID(context.Background(), "maildir", m.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		if it.Body != m.Body || it.Title != m.Subject || !it.Time.Equal(m.Date) || it.Meta["damaged"] != nil {
			t.Fatalf("<%s> stored %q / %q, whole %q / %q", m.MessageID, it.Title, clip(it.Body), m.Subject, clip(m.Body))
		}
	}
}

// The same messages imported from an mbox and from a maildir, in either
// order, are one item each, and the second import changes nothing.
func TestImportMboxAndMaildirOfOneMailboxAreOneItemEach(t *testing.T) {
	paths := corpusSample(t, "mail/spamassassin/data/easy-ham-2", 300)
	var msgs [][]byte
	distinct := map[string]bool{}
	for _, p := range paths {
		raw := mustRead(t, p)
		m, err := mailparse.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		id := store.NormalizeMessageID(m.MessageID)
		if id == "" {
			id = m.Fingerprint
		}
		distinct[id] = true
		msgs = append(msgs, raw)
	}
	mbox, _, _ := writeMbox(t, paths)
	maildir := writeMaildir(t, msgs)
	ctx := context.Background()
	for _, order := range [][2]string{{"mbox", "maildir"}, {"maildir", "mbox"}} {
		s := openStore(t)
		im := New(Options{Store: s})
		for i, format := range order {
			path := map[string]string{"mbox": mbox, "maildir": maildir}[format]
			sum, err := im.Import(ctx, format, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSums(t, sum, len(paths))
			if i == 1 && (sum.Added != 0 || sum.Updated != 0 || len(sum.Kept) != 0) {
				t.Errorf("%s after %s: added %d, updated %d, kept %v", format, order[0], sum.Added, sum.Updated, sum.Kept)
			}
		}
		var n int
		if err := s.DB().QueryRow(`SELECT COUNT(*) FROM items`).Scan(&n); err != nil || n != len(distinct) {
			t.Fatalf("%v: %d items for %d messages, %v", order, n, len(distinct), err)
		}
		for _, raw := range msgs[:20] {
			m, _ := mailparse.Parse(raw)
			a, err := s.ItemByExternalID(ctx, "mbox", m.MessageID)
			b, err2 := s.ItemByExternalID(ctx, "maildir", m.MessageID)
			if m.MessageID != "" && (err != nil || err2 != nil || a.ID != b.ID) {
				t.Fatalf("<%s>: the mbox id finds %v (%v), the maildir id %v (%v)", m.MessageID, a, err, b, err2)
			}
		}
	}
}
