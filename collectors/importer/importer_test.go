package importer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func countSource(t testing.TB, s *store.Store, source string) int64 {
	t.Helper()
	counts, err := s.CountItems(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Source == source {
			return c.Items
		}
	}
	return 0
}

// checkSums asserts that every message is accounted for exactly once.
func checkSums(t *testing.T, sum *Summary, seen int) {
	t.Helper()
	if sum.Seen != seen {
		t.Fatalf("seen %d, want %d", sum.Seen, seen)
	}
	if got := sum.Added + sum.Updated + sum.Unchanged + len(sum.Failed); got != sum.Seen {
		t.Fatalf("added %d + updated %d + unchanged %d + failed %d = %d, but seen %d",
			sum.Added, sum.Updated, sum.Unchanged, len(sum.Failed), got, sum.Seen)
	}
	for _, f := range sum.Failed {
		if f.Where == "" || f.Reason == "" {
			t.Fatalf("failure without place or reason: %+v", f)
		}
	}
}

func TestImportEnronMaildir(t *testing.T) {
	dir := testutil.SharedData(t, "mail/enron/maildir")
	ctx := context.Background()
	s := openStore(t)
	im := New(Options{Store: s})

	sum, err := im.Import(ctx, "maildir", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, sum, 2195)
	// Three files carry only the converter's 1980-01-01 placeholder date
	// and no Received header: they are kept, dated by the nearest message
	// in their folder (June 2001, when Enron moved to Outlook, which is what
	// they announce), and marked as uncertain.
	if len(sum.Failed) != 0 || sum.Added != 2195 || countSource(t, s, "maildir") != 2195 || len(sum.Undated) != 3 {
		t.Fatalf("added %d, failed %v, undated %v, stored %d; want all 2195, 3 undated", sum.Added, sum.Failed, sum.Undated, countSource(t, s, "maildir"))
	}
	for file, want := range map[string]struct {
		day  string
		from string
	}{
		"whalley-g/notes_inbox/1.":          {"2001-06-21", "notes_inbox/3."},
		"whalley-g/discussion_threads/340.": {"2001-06-11", "discussion_threads/256."},
		"whalley-g/all_documents/362.":      {"2001-06-21", "all_documents/361."},
	} {
		raw := mustRead(t, filepath.Join(dir, file))
		if _, err := mailparse.Parse(raw); err == nil || !strings.Contains(err.Error(), "epoch") {
			t.Fatalf("%s parses on its own (%v): not the case this checks", file, err)
		}
		id := messageIDOf(t, raw)
		it, err := s.ItemByExternalID(ctx, "maildir", id)
		if err != nil {
			t.Fatalf("%s (%s) not stored: %v", file, id, err)
		}
		note, _ := it.Meta["date_uncertain"].(string)
		if got := it.Time.UTC().Format(time.DateOnly); got != want.day || !strings.Contains(note, "epoch") || !strings.Contains(note, want.from) {
			t.Errorf("%s: time %s, date_uncertain %q; want %s from %s", file, got, note, want.day, want.from)
		}
	}
	if it, err := s.ItemByExternalID(ctx, "maildir", "30390269.1075840399347.JavaMail.evans@thyme"); err != nil || it.Meta["date_uncertain"] != nil {
		t.Fatalf("a mail with its own date is marked uncertain: %+v, %v", it, err)
	}

	again, err := im.Import(ctx, "maildir", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, again, 2195)
	if again.Added != 0 || again.Updated != 0 || again.Unchanged != 2195 || countSource(t, s, "maildir") != 2195 {
		t.Fatalf("second import: %+v (stored %d)", again, countSource(t, s, "maildir"))
	}

	// Each mailbox's sent folder taught its owner's address.
	owners, err := s.OwnerAddresses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"mike.carson@enron.com", "phillip.allen@enron.com", "chris.stokley@enron.com", "greg.whalley@enron.com"} {
		if !slices.Contains(owners, o) {
			t.Errorf("owner %s not learned (have %v)", o, owners)
		}
	}

	it, err := s.ItemByExternalID(ctx, "maildir", "30390269.1075840399347.JavaMail.evans@thyme")
	if err != nil {
		t.Fatal(err)
	}
	if it.Meta["folder"] != "carson-m/sent_items" || it.Meta["outbound"] != true || it.Title != "FW: Please see attached" || it.Sender != "mike.carson@enron.com" {
		t.Fatalf("carson sent item: %+v", it)
	}

	// The thread "Enron 480, 1480 charges" in Chris Stokley's mailbox (read
	// from the files): kalmeida@caiso.com wrote on Jul 2 (twice) and Jul 3
	// at 07:58:57 -0700; Stokley answered at 08:00:59 and 08:13:03; she
	// wrote again on Aug 8, which he has not answered.
	first, err := mailparse.Parse(mustRead(t, filepath.Join(dir, "stokley-c/chris_stokley/iso/client_rep/2.")))
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(ctx, first.ThreadKey())
	if err != nil {
		t.Fatal(err)
	}
	if th.Messages != 6 || th.Inbound != 4 || th.Outbound != 2 || th.LastSender != "kalmeida@caiso.com" || !th.OwesReply || th.AwaitingReply ||
		!th.LastTime.Equal(time.Date(2001, 8, 8, 21, 35, 8, 0, time.UTC)) {
		t.Fatalf("thread = %+v", th)
	}
	for _, p := range []string{"kalmeida@caiso.com", "chris.stokley@enron.com", "almeida@enron.com"} {
		if !slices.Contains(th.Participants, p) {
			t.Errorf("participant %s missing from %v", p, th.Participants)
		}
	}
	k, err := s.Contact(ctx, "kalmeida@caiso.com")
	if err != nil {
		t.Fatal(err)
	}
	if k.OwnerReplies != 1 || k.OwnerReplyMedian != 2*time.Minute+2*time.Second || k.Outbound != 2 {
		t.Fatalf("kalmeida = %+v", k)
	}
	if _, err := s.Contact(ctx, "mike.carson@enron.com"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an owner became a contact: %v", err)
	}
	if ev, err := s.PendingEvents(ctx, "test", 10); err != nil || len(ev) != 0 {
		t.Fatalf("an import recorded item events: %v, %v", ev, err)
	}
}

func TestImportSpamAssassin(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 6,046 messages; run without -short")
	}
	dir := testutil.SharedData(t, "mail/spamassassin/data")
	ctx := context.Background()
	s := openStore(t)
	im := New(Options{Store: s})
	sum, err := im.Import(ctx, "maildir", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, sum, 6046)
	if sum.Added != 6046 || len(sum.Failed) != 0 {
		t.Fatalf("added %d, failed %v", sum.Added, sum.Failed)
	}
	again, err := im.Import(ctx, "maildir", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, again, 6046)
	if again.Added != 0 || again.Updated != 0 || countSource(t, s, "maildir") != 6046 {
		t.Fatalf("second import added %d, updated %d, stored %d", again.Added, again.Updated, countSource(t, s, "maildir"))
	}
	it, err := s.ItemByExternalID(ctx, "maildir", "000101c228eb$e04cf280$a883a8c0@wl.opentext.com")
	if err != nil {
		t.Fatal(err)
	}
	atts, _ := it.Meta["attachments"].([]any)
	if it.Meta["folder"] != "hard-ham-1" || it.Title != "日本語の件名（サブジェクト）　スパムメールではありません！" || len(atts) != 1 {
		t.Fatalf("iso-2022-jp item: %+v", it)
	}
	if a, _ := atts[0].(map[string]any); a["filename"] != "マイルストーン表示.bmp" || a["size"] != float64(220518) {
		t.Fatalf("attachment meta = %v", atts[0])
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestImportTakeoutMbox(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	im := New(Options{Store: s})
	path := filepath.Join("testdata", "takeout.mbox")
	sum, err := im.Import(ctx, "mbox", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// m1, m2, a junk message, and m1 again (a duplicate in the same file).
	checkSums(t, sum, 4)
	if sum.Added != 2 || sum.Unchanged != 1 || len(sum.Failed) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if f := sum.Failed[0]; f.Where != path+": message 3 at byte 861" || !strings.Contains(f.Reason, "not a mail") {
		t.Fatalf("failure = %+v", f)
	}
	m1, err := s.ItemByExternalID(ctx, "mbox", "m1@example.com")
	if err != nil {
		t.Fatal(err)
	}
	wantBody := "Are we still on for Friday?\n\nFrom the restaurant: they open at seven.\nFrom now on I will book ahead."
	if m1.Body != wantBody {
		t.Fatalf("body = %q\nwant   %q", m1.Body, wantBody)
	}
	if labels, _ := m1.Meta["labels"].([]any); len(labels) != 3 || labels[2] != "Trips, 2023" {
		t.Fatalf("labels = %v", m1.Meta["labels"])
	}
	m2, err := s.ItemByExternalID(ctx, "mbox", "m2@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if m2.Meta["outbound"] != true || m2.Body != "Yes, see you at seven." || !strings.Contains(m2.Quoted, "> Are we still on for Friday?") {
		t.Fatalf("m2 = %+v", m2)
	}
	// X-GM-THRID 1761543210987654321 is the Gmail API's thread 18724237a36b8cb1.
	if m1.Thread != "18724237a36b8cb1" || m2.Thread != m1.Thread {
		t.Fatalf("threads %q %q", m1.Thread, m2.Thread)
	}
	a, err := s.Contact(ctx, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if a.Inbound != 1 || a.Outbound != 1 || a.OwnerReplies != 1 || a.OwnerReplyMedian != time.Hour {
		t.Fatalf("alice = %+v", a)
	}

	again, err := im.Import(ctx, "mbox", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Added != 0 || again.Unchanged != 3 || len(again.Failed) != 1 {
		t.Fatalf("second import %+v", again)
	}
}

// An mboxrd built from real messages the way mail programs write one
// ("From " lines in bodies escaped) imports to the same items as the files.
func TestImportMboxFromCorpus(t *testing.T) {
	dir := testutil.SharedData(t, "mail/spamassassin/data/easy-ham-2")
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && len(paths) < 300 {
			paths = append(paths, p)
		}
		return nil
	})
	path, size, escaped := writeMbox(t, paths)
	if escaped == 0 {
		t.Fatal("the sample has no body line to escape; pick another")
	}
	s := openStore(t)
	var last Progress
	sum, err := New(Options{Store: s, BatchSize: 64}).Import(context.Background(), "mbox", path, func(p Progress) { last = p })
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, sum, len(paths))
	if sum.Added != len(paths) {
		t.Fatalf("added %d of %d: %v", sum.Added, len(paths), sum.Failed)
	}
	if last.Unit != "bytes" || last.Total != size || last.Done != last.Total || last.Added != sum.Added {
		t.Fatalf("last progress %+v (file %d bytes)", last, size)
	}
	for _, p := range paths[:40] {
		m, err := mailparse.Parse(mustRead(t, p))
		if err != nil {
			t.Fatal(err)
		}
		id := m.MessageID
		if id == "" {
			id = "sha256:" + m.Hash
		}
		it, err := s.ItemByExternalID(context.Background(), "mbox", id)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if it.Body != m.Body || it.Title != m.Subject || !it.Time.Equal(m.Date) {
			t.Fatalf("%s: stored %q / %q, file %q / %q", p, it.Title, clip(it.Body), m.Subject, clip(m.Body))
		}
	}
}

func clip(s string) string { return s[:min(len(s), 120)] }

// writeMbox writes the message files into an mboxrd the way mail programs
// write one ("From " lines in bodies escaped); it returns its path, size
// and how many lines it escaped.
func writeMbox(t *testing.T, paths []string) (string, int64, int) {
	t.Helper()
	var mbox bytes.Buffer
	escaped := 0
	for i, p := range paths {
		raw := mustRead(t, p)
		if !bytes.HasPrefix(raw, []byte("From ")) {
			fmt.Fprintf(&mbox, "From corpus@example.com Mon Sep  2 08:00:%02d 2002\n", i%60)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		first := true
		for sc.Scan() {
			line := sc.Text()
			if !first && (strings.HasPrefix(line, "From ") || strings.HasPrefix(strings.TrimLeft(line, ">"), "From ") && strings.HasPrefix(line, ">")) {
				line = ">" + line
				escaped++
			}
			first = false
			mbox.WriteString(line + "\n")
		}
		mbox.WriteString("\n")
	}
	path := filepath.Join(t.TempDir(), "corpus.mbox")
	if err := os.WriteFile(path, mbox.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, int64(mbox.Len()), escaped
}

func TestImportJSONL(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	im := New(Options{Store: s})

	good, err := im.Import(ctx, "jsonl", filepath.Join("testdata", "good.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, good, 3)
	if good.Added != 3 {
		t.Fatalf("good: %+v", good)
	}
	it, err := s.ItemByExternalID(ctx, "locomo", "D1:1")
	if err != nil {
		t.Fatal(err)
	}
	if it.Kind != "document" || it.Thread != "session_1" || it.Title != "Caroline" || !slices.Equal(it.People, []string{"Caroline", "Melanie"}) ||
		!it.Time.Equal(time.Date(2023, 5, 8, 11, 56, 0, 0, time.UTC)) || !strings.HasPrefix(it.Body, "I went to a LGBTQ support group") {
		t.Fatalf("item = %+v", it)
	}
	if _, err := s.ItemByExternalID(ctx, "jsonl", "note-1"); err != nil {
		t.Fatalf("a line without source is not stored under jsonl: %v", err)
	}

	bad, err := im.Import(ctx, "jsonl", filepath.Join("testdata", "bad.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, bad, 8)
	if bad.Added != 2 {
		t.Fatalf("bad: added %d, want the 2 good lines", bad.Added)
	}
	want := map[string]string{
		"line 2": "invalid JSON",
		"line 3": `missing "id"`,
		"line 4": `"time" "yesterday" is not RFC 3339`,
		"line 5": "more than one JSON value",
		"line 6": `missing "time"`,
		"line 7": "invalid JSON",
	}
	if len(bad.Failed) != len(want) {
		t.Fatalf("failed = %+v", bad.Failed)
	}
	for _, f := range bad.Failed {
		_, line, _ := strings.Cut(f.Where, ": ")
		if w, ok := want[line]; !ok || !strings.Contains(f.Reason, w) {
			t.Errorf("%s: %q, want it to say %q", f.Where, f.Reason, w)
		}
	}
	again, err := im.Import(ctx, "jsonl", filepath.Join("testdata", "good.jsonl"), nil)
	if err != nil || again.Added != 0 || again.Unchanged != 3 {
		t.Fatalf("re-import: %+v, %v", again, err)
	}
}

func TestImportRejectsBadRequests(t *testing.T) {
	s := openStore(t)
	im := New(Options{Store: s})
	file := filepath.Join("testdata", "good.jsonl")
	cases := []struct{ format, path, want string }{
		{"mbox", filepath.Join(t.TempDir(), "missing.mbox"), "does not exist"},
		{"mbox", t.TempDir(), "is a directory, not a mbox file (for a directory of messages use: import maildir)"},
		{"jsonl", t.TempDir(), "is a directory"},
		{"maildir", file, "is a file, not a maildir directory"},
		{"pst", file, `unknown format "pst"`},
	}
	for _, c := range cases {
		_, err := im.Import(context.Background(), c.format, c.path, nil)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Import(%s, %s) = %v, want a usage error saying %q", c.format, c.path, err, c.want)
		}
	}
}

// What progress reports as added is durable; a cancelled import keeps it.
func TestImportProgressIsDurableAndCancelKeepsIt(t *testing.T) {
	dir := testutil.SharedData(t, "mail/enron/maildir")
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reports []Progress
	_, err := New(Options{Store: s, BatchSize: 100}).Import(ctx, "maildir", dir, func(p Progress) {
		if stored := countSource(t, s, "maildir"); stored < int64(p.Added) {
			t.Errorf("progress says %d added, the store has %d", p.Added, stored)
		}
		if n := len(reports); n > 0 && p.Added < reports[n-1].Added {
			t.Errorf("added went back from %d to %d", reports[n-1].Added, p.Added)
		}
		reports = append(reports, p)
		if p.Added >= 300 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	last := reports[len(reports)-1]
	if last.Unit != "messages" || last.Total != 2195 {
		t.Fatalf("last progress %+v", last)
	}
	if stored := countSource(t, s, "maildir"); stored != int64(last.Added) || stored < 300 || stored >= 2195 {
		t.Fatalf("stored %d after cancel, last acknowledged %d", stored, last.Added)
	}
}

func TestImportMaildirLayout(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mail := func(id, from, to string) string {
		return fmt.Sprintf("Message-ID: <%s>\nFrom: %s\nTo: %s\nSubject: s %s\nDate: Mon, 2 Sep 2002 08:00:00 +0000\n\nbody %s\n", id, from, to, id, id)
	}
	write("cur/1.host:2,S", mail("in1", "ann@x.com", "me@x.com"))
	write("new/2.host", mail("in2", "me@x.com", "ann@x.com")) // the owner's mail in the inbox
	write("tmp/3.host", mail("partial", "ann@x.com", "me@x.com"))
	write(".Sent/cur/4.host:2,S", mail("s1", "me@x.com", "ann@x.com"))
	write(".Sent/cur/5.host:2,S", mail("s2", "me@x.com", "bob@x.com"))
	write(".Archive.2001/cur/6.host", mail("a1", "bob@x.com", "me@x.com"))
	write("All Mail/cur/7.host", mail("in1", "ann@x.com", "me@x.com")) // the inbox mail again, as IMAP syncs of Gmail have it
	write("dovecot-uidlist", "3 V1 N2\n")
	write(".Sent/maildirfolder", "")
	write("notes/readme.txt", "this is not a mail at all")

	s := openStore(t)
	im := New(Options{Store: s})
	sum, err := im.Import(context.Background(), "maildir", root, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, sum, 7)
	if sum.Added != 5 || sum.Unchanged != 1 || len(sum.Failed) != 1 || !strings.HasSuffix(sum.Failed[0].Where, "notes/readme.txt") {
		t.Fatalf("summary %+v", sum)
	}
	// The duplicate does not flip the stored copy's folder back and forth.
	again, err := im.Import(context.Background(), "maildir", root, nil)
	if err != nil || again.Added != 0 || again.Updated != 0 || again.Unchanged != 6 {
		t.Fatalf("second import %+v, %v", again, err)
	}
	// in1 is stored from "All Mail", the first copy in walk order.
	folders := map[string]string{"in1": "All Mail", "in2": "", "s1": "Sent", "s2": "Sent", "a1": "Archive/2001"}
	for id, folder := range folders {
		it, err := s.ItemByExternalID(context.Background(), "maildir", id)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := it.Meta["folder"].(string)
		if got != folder {
			t.Errorf("%s folder = %q, want %q", id, got, folder)
		}
		// Sent mail is outbound, and so is the owner's mail elsewhere once
		// two sent mails taught the owner's address.
		if out := it.Meta["outbound"] == true; out != (id == "s1" || id == "s2" || id == "in2") {
			t.Errorf("%s outbound = %v", id, out)
		}
	}
	if _, err := s.ItemByExternalID(context.Background(), "maildir", "partial"); err == nil {
		t.Error("a message in tmp was imported")
	}
}

func TestImportStopsWhenTheStoreFails(t *testing.T) {
	s := openStore(t)
	s.Close()
	_, err := New(Options{Store: s}).Import(context.Background(), "jsonl", filepath.Join("testdata", "good.jsonl"), nil)
	if err == nil || errors.Is(err, ErrUsage) {
		t.Fatalf("err = %v, want a store failure", err)
	}
}

// BenchmarkImportEnronMaildir measures a full import of the 2,195 Enron
// messages into a fresh store (parse, items, FTS, contacts, threads).
// msgs/cpu-s divides by the process's CPU time, which a machine shared
// with other work disturbs less than wall time.
func BenchmarkImportEnronMaildir(b *testing.B) {
	dir := testutil.SharedData(b, "mail/enron/maildir")
	var msgs int
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := openStore(b)
		before := cpuTime()
		b.StartTimer()
		sum, err := New(Options{Store: s}).Import(context.Background(), "maildir", dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - before
		b.StartTimer()
		msgs += sum.Seen
	}
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(msgs)/cpu.Seconds(), "msgs/cpu-s")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// messageIDOf reads the Message-ID header of a raw message.
func messageIDOf(t *testing.T, raw []byte) string {
	t.Helper()
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "Message-ID: "); ok {
			return strings.Trim(strings.TrimSpace(v), "<>")
		}
	}
	t.Fatal("no Message-ID")
	return ""
}

// In an mbox, a message with no date of its own (no Date header, an mbox
// From line of 1970) is dated like the message before it, marked.
func TestImportMboxDatesAnUndatedMessageByTheOneBefore(t *testing.T) {
	mbox := strings.Join([]string{
		"From a@example.com Mon Sep  2 08:00:00 2002",
		"From: a@example.com",
		"Message-ID: <one@example.com>",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Subject: first",
		"",
		"first body",
		"",
		"From b@example.com Thu Jan  1 00:00:00 1970",
		"From: b@example.com",
		"Message-ID: <two@example.com>",
		"Subject: second",
		"",
		"second body",
		"",
	}, "\n")
	path := filepath.Join(t.TempDir(), "x.mbox")
	if err := os.WriteFile(path, []byte(mbox), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	sum, err := New(Options{Store: s}).Import(context.Background(), "mbox", path, nil)
	if err != nil || sum.Added != 2 || len(sum.Failed) != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	it, err := s.ItemByExternalID(context.Background(), "mbox", "two@example.com")
	if err != nil {
		t.Fatal(err)
	}
	note, _ := it.Meta["date_uncertain"].(string)
	if !it.Time.Equal(time.Date(2002, 9, 2, 8, 0, 0, 0, time.UTC)) || !strings.Contains(note, "the message before it in the mbox (message 1)") {
		t.Fatalf("undated message: time %v, date_uncertain %q", it.Time, note)
	}
}

// In a real maildir, an undated message is dated by the delivery time in
// its file name, not by the file's modification time.
func TestImportMaildirDatesAnUndatedMessageByItsFileName(t *testing.T) {
	dir := t.TempDir()
	cur := filepath.Join(dir, "cur")
	if err := os.MkdirAll(cur, 0o700); err != nil {
		t.Fatal(err)
	}
	raw := "From: a@example.com\nMessage-ID: <undated@example.com>\nSubject: no date\n\nbody\n"
	if err := os.WriteFile(filepath.Join(cur, "1204680122.V801I2fM64291.host:2,S"), []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	sum, err := New(Options{Store: s}).Import(context.Background(), "maildir", dir, nil)
	if err != nil || sum.Added != 1 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	it, err := s.ItemByExternalID(context.Background(), "maildir", "undated@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if note, _ := it.Meta["date_uncertain"].(string); !it.Time.Equal(time.Unix(1204680122, 0)) || !strings.Contains(note, "maildir file name") {
		t.Fatalf("time %v, date_uncertain %q", it.Time, note)
	}
}

// Mail of the last week with a date of its own is recorded as an imported
// event, for triage to decide quietly; older mail, a guessed date and an
// unchanged re-import record nothing.
func TestImportRecordsRecentMailForTriage(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	msg := func(id string, date time.Time) string {
		return fmt.Sprintf("From x@example.com %s\nFrom: x@example.com\nMessage-ID: <%s>\nDate: %s\nSubject: %s\n\nbody\n\n",
			date.Format("Mon Jan _2 15:04:05 2006"), id, date.Format(time.RFC1123Z), id)
	}
	mbox := msg("recent@example.com", now.Add(-2*24*time.Hour)) +
		msg("old@example.com", now.Add(-30*24*time.Hour)) +
		// No date of its own: dated by the one before it, a guess.
		"From x@example.com Thu Jan  1 00:00:00 1970\nFrom: x@example.com\nMessage-ID: <undated@example.com>\nSubject: undated\n\nbody\n\n"
	path := filepath.Join(t.TempDir(), "x.mbox")
	if err := os.WriteFile(path, []byte(mbox), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	im := New(Options{Store: s, Now: func() time.Time { return now }})
	sum, err := im.Import(context.Background(), "mbox", path, nil)
	if err != nil || sum.Added != 3 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	recent, err := s.ItemByExternalID(context.Background(), "mbox", "recent@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Recent) != 1 || sum.Recent[0] != recent.ID {
		t.Fatalf("recent = %v, want [%d]", sum.Recent, recent.ID)
	}
	evs, err := s.PendingEvents(context.Background(), "test", 10)
	if err != nil || len(evs) != 1 || evs[0].ItemID != recent.ID || evs[0].Kind != store.EventImported {
		t.Fatalf("events %+v, %v; want one imported event for item %d", evs, err, recent.ID)
	}
	sum, err = im.Import(context.Background(), "mbox", path, nil)
	if err != nil || len(sum.Recent) != 0 {
		t.Fatalf("re-import: recent %v, %v", sum.Recent, err)
	}
}
