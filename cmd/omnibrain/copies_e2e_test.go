package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

// Through the binary: real mail imported as a maildir, then copies of two
// of its messages cut inside the headers and in the middle of the body, the
// whole mailbox again as an mbox, and a JSONL line naming one message's
// Message-ID with less text. Every message stays one item with its whole
// text, and the CLI says "kept the stored copy" and why for each worse copy.
func TestImportKeepsTheStoredCopyEndToEnd(t *testing.T) {
	dir := testutil.SharedData(t, "mail/enron/maildir/allen-p/discussion_threads")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var whole [][]byte
	var msgs []*mailparse.Message
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := mailparse.Parse(raw)
		if err != nil || m.MessageID == "" || m.Damaged != "" || len(m.Body) < 400 {
			continue
		}
		whole, msgs = append(whole, raw), append(msgs, m)
		if len(whole) == 12 {
			break
		}
	}
	if len(whole) < 3 {
		t.Fatalf("only %d messages with a Message-ID and a body in %s", len(whole), dir)
	}
	headEnd := func(raw []byte) int {
		return bytes.Index(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n\n"))
	}
	// Cut inside the headers, after the Message-ID (the first header of
	// Enron mail), and in the middle of the body.
	inHeaders := whole[0][:headEnd(whole[0])-3]
	if !bytes.Contains(inHeaders, []byte("Message-ID:")) {
		t.Fatal("the cut lost the Message-ID")
	}
	midBody := whole[1][:headEnd(whole[1])+(len(whole[1])-headEnd(whole[1]))/2]

	root := t.TempDir()
	write := func(rel string, b []byte) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var mbox bytes.Buffer
	for i, raw := range whole {
		write(fmt.Sprintf("whole/cur/%d.host:2,S", i), raw)
		mbox.WriteString("From enron@example.com Mon Sep  2 08:00:00 2002\n")
		for _, line := range strings.SplitAfter(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n") {
			if strings.HasPrefix(strings.TrimLeft(line, ">"), "From ") {
				line = ">" + line
			}
			mbox.WriteString(line)
		}
		mbox.WriteString("\n\n")
	}
	write("cut/cur/1.host:2,S", inHeaders)
	write("cut/cur/2.host:2,S", midBody)
	write("all.mbox", mbox.Bytes())
	line, _ := json.Marshal(map[string]any{"id": "note-1", "message_id": msgs[2].MessageID, "source": "notes",
		"time": msgs[2].Date.Format("2006-01-02T15:04:05Z07:00"), "title": msgs[2].Subject, "text": msgs[2].Body[:100]})
	write("notes.jsonl", append(line, '\n'))

	home := t.TempDir()
	importJSON := func(args ...string) api.ImportSummary {
		t.Helper()
		out, errOut, code := runCLI(t, home, append([]string{"import", "--json"}, args...)...)
		var sum api.ImportSummary
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
			t.Fatalf("import %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return sum
	}
	if sum := importJSON("maildir", filepath.Join(root, "whole")); sum.Added != len(whole) {
		t.Fatalf("whole mailbox: %+v", sum)
	}
	out, errOut, code := runCLI(t, home, "import", "maildir", filepath.Join(root, "cut"))
	if code != 0 {
		t.Fatalf("cut copies: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"kept the stored copy (2 ", "1.host:2,S: kept the stored copy: the new copy is damaged (it ends inside its headers)",
		"2.host:2,S: kept the stored copy: the new copy is shorter"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if sum := importJSON("mbox", filepath.Join(root, "all.mbox")); sum.Added != 0 || sum.Updated != 0 || sum.Unchanged != len(whole) {
		t.Errorf("the same mailbox as an mbox: %+v", sum)
	}
	if sum := importJSON("jsonl", filepath.Join(root, "notes.jsonl")); sum.Added != 0 || len(sum.Kept) != 1 || !strings.Contains(sum.Kept[0].Reason, "shorter") {
		t.Errorf("a shorter JSONL copy: %+v", sum)
	}

	s, err := store.Open(context.Background(), filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM items`).Scan(&n); err != nil || n != len(whole) {
		t.Fatalf("%d items for %d messages (%v)", n, len(whole), err)
	}
	for _, m := range msgs {
		for _, source := range []string{"maildir", "mbox"} {
			it, err := s.ItemByExternalID(context.Background(), source, m.MessageID)
			if err != nil || it.Body != m.Body || it.Title != m.Subject {
				t.Fatalf("<%s> by its %s id: %v; want the whole text", m.MessageID, source, err)
			}
		}
	}
}
