package mailparse

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

func readShared(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(testutil.SharedData(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every message of both corpora parses, except three Enron files whose only
// date is 1980-01-01, the DOS epoch (the converter's placeholder), and that have no
// Received header; they fail naming that reason. Dates come from Received
// when a spammer's clock is years off; the text is always valid UTF-8.
func TestCorpusParsesEveryMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 8,241 files; run without -short")
	}
	for _, c := range []struct {
		dir        string
		count      int
		epochDates int
	}{{"mail/spamassassin/data", 6046, 0}, {"mail/enron/maildir", 2195, 3}} {
		root := testutil.SharedData(t, c.dir)
		n, fromReceived, epoch := 0, 0, 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n++
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m, err := Parse(raw)
			if err != nil {
				if strings.Contains(err.Error(), "is an epoch") {
					epoch++
				} else {
					t.Errorf("%s: %v", p, err)
				}
				return nil
			}
			if m.Date.Year() < 1995 || m.Date.Year() > 2030 {
				t.Errorf("%s: date %v", p, m.Date)
			}
			if m.DateSource == "received" {
				fromReceived++
				if strings.Contains(p, "ham") {
					t.Logf("ham dated by Received: %s (%q)", p, m.Warnings)
				}
			}
			for name, s := range map[string]string{"subject": m.Subject, "body": m.Body, "quoted": m.Quoted, "from name": m.From.Name} {
				if !utf8.ValidString(s) {
					t.Errorf("%s: %s is not valid UTF-8", p, name)
				}
			}
			if strings.TrimSpace(m.Text) != "" && m.Body == "" {
				t.Errorf("%s: text but no body", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != c.count || epoch != c.epochDates {
			t.Errorf("%s: %d files, %d with only an epoch date; want %d, %d", c.dir, n, epoch, c.count, c.epochDates)
		}
		t.Logf("%s: %d messages, %d dated by Received", c.dir, n, fromReceived)
	}
}

// Expectations written from reading the files.
func TestCorpusSpotChecks(t *testing.T) {
	t.Run("iso-2022-jp text, subject and attachment name", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/spamassassin/data/hard-ham-1/00039.b2b936a8501444b213f61f9ff193b480.txt"))
		if m.Subject != "日本語の件名（サブジェクト）　スパムメールではありません！" {
			t.Errorf("subject = %q", m.Subject)
		}
		if m.From != (Address{Name: "伊東　仁", Email: "hito@opentext.com"}) {
			t.Errorf("from = %+v", m.From)
		}
		if !strings.HasPrefix(m.Body, "OpenText社\n伊東様\n\nいつもお世話になっております。\n安井@infocomです。") {
			t.Errorf("body = %q", clip(m.Body, 200))
		}
		want := Attachment{Filename: "マイルストーン表示.bmp", ContentType: "image/bmp", Size: 220518}
		if len(m.Attachments) != 1 || m.Attachments[0] != want {
			t.Errorf("attachments = %+v, want %+v", m.Attachments, want)
		}
	})
	t.Run("gb2312 HTML-only mail with encoded headers", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/spamassassin/data/spam-1/00397.1a99f98a5b996f99f3661e9609782932.txt"))
		if m.Subject != "50元获得一亿五千万EMAIL地址的机会" || m.From.Name != "全球EMAIL地址销售网" {
			t.Errorf("subject %q from %+v", m.Subject, m.From)
		}
		if !m.HTML || !strings.Contains(m.Body, "《全球EMAIL地址销售网》3年来致力于中国电子商务的发展和推广") {
			t.Errorf("html %v body %q", m.HTML, clip(m.Body, 300))
		}
	})
	t.Run("HTML with style block yields only its text", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/spamassassin/data/spam-1/00500.85b72f09f6778a085dc8b6821965a76f.txt"))
		if !m.HTML || !strings.Contains(m.Body, "電子郵件 ——21世紀最有效的宣傳方式") {
			t.Errorf("html %v body %q", m.HTML, clip(m.Body, 300))
		}
		for _, bad := range []string{"font-size", "<P>", "&nbsp;", "position : absolute"} {
			if strings.Contains(m.Text, bad) {
				t.Errorf("text contains %q", bad)
			}
		}
	})
	t.Run("windows-1251 euro sign", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/spamassassin/data/easy-ham-1/00236.0d42e8e99de86aae42a4f3e3cdc2465b.txt"))
		if !strings.Contains(m.Body, "PC World have these in stock for €65.") {
			t.Errorf("body = %q", clip(m.Body, 300))
		}
	})
	t.Run("Enron Outlook reply is split", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/enron/maildir/stokley-c/chris_stokley/sent/97."))
		if m.Body != "Keoni,\n\tWhat is the total $ amount of the payments due to the SC's for this charge type?" {
			t.Errorf("body = %q", m.Body)
		}
		if !strings.HasPrefix(m.Quoted, "-----Original Message-----\nFrom: \tAlmeida, Keoni") ||
			!strings.Contains(m.Quoted, "I confirmed that since Enron does not deviate from their schedules") {
			t.Errorf("quoted = %q", clip(m.Quoted, 300))
		}
		want := time.Date(2001, 7, 3, 15, 0, 59, 0, time.UTC)
		if !m.Date.Equal(want) {
			t.Errorf("date = %v, want %v", m.Date, want)
		}
	})
	t.Run("Enron forward keeps the forwarded mail as its text", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/enron/maildir/carson-m/sent_items/13."))
		if m.Subject != "FW: Please see attached" || !strings.Contains(m.Body, "PRE PAY FOR JANUARY POWER") {
			t.Errorf("subject %q body %q", m.Subject, clip(m.Body, 300))
		}
		// The From header has no name; Enron's X-From has it.
		if m.From != (Address{Name: "Carson, Mike", Email: "mike.carson@enron.com"}) {
			t.Errorf("from = %+v", m.From)
		}
	})
	t.Run("mailing list footer and mbox line", func(t *testing.T) {
		m := mustParse(t, readShared(t, "mail/spamassassin/data/easy-ham-1/00001.7c53336b37003a9286aba55d2945844c.txt"))
		if m.From.Email != "kre@munnari.oz.au" || m.Subject != "Re: New Sequences Window" {
			t.Errorf("from %+v subject %q", m.From, m.Subject)
		}
		if !strings.HasSuffix(m.Body, "been able to reach the cvs repository today (local routing issue I think).") {
			t.Errorf("body ends %q", m.Body[max(0, len(m.Body)-120):])
		}
		if !strings.HasPrefix(m.Quoted, "_______________________________________________\nExmh-workers mailing list") {
			t.Errorf("quoted = %q", m.Quoted)
		}
	})
}

// BenchmarkParseCorpus parses the Enron and SpamAssassin messages from
// memory: MIME, charsets, HTML, dates and reply splitting, no I/O.
func BenchmarkParseCorpus(b *testing.B) {
	var msgs [][]byte
	var size int64
	for _, dir := range []string{"mail/enron/maildir", "mail/spamassassin/data"} {
		filepath.WalkDir(testutil.SharedData(b, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if raw, err := os.ReadFile(p); err == nil {
					msgs = append(msgs, raw)
					size += int64(len(raw))
				}
			}
			return nil
		})
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, raw := range msgs {
			Parse(raw)
		}
	}
	b.ReportMetric(float64(len(msgs)*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
