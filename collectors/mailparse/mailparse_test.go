package mailparse

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// msg builds a raw message from lines joined by CRLF, as on the wire.
func msg(lines ...string) []byte { return []byte(strings.Join(lines, "\r\n")) }

func mustParse(t *testing.T, raw []byte) *Message {
	t.Helper()
	m, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func TestParseMultipartAlternativePrefersPlain(t *testing.T) {
	m := mustParse(t, msg(
		"From: \"Doe, Jane\" <Jane.Doe@Example.com>",
		"To: bob@example.org, \"Carol C.\" <carol@example.org>",
		"Cc: dave@example.org",
		"Subject: Lunch on Friday",
		"Date: Fri, 06 Sep 2002 10:15:00 -0700",
		"Message-ID: <abc123@example.com>",
		"In-Reply-To: <root@example.com>",
		"References: <root@example.com> <mid@example.com>",
		"MIME-Version: 1.0",
		"Content-Type: multipart/alternative; boundary=\"b1\"",
		"",
		"--b1",
		"Content-Type: text/plain; charset=us-ascii",
		"",
		"Shall we meet at noon?",
		"--b1",
		"Content-Type: text/html; charset=us-ascii",
		"",
		"<p>Shall we meet at <b>noon</b>?</p>",
		"--b1--",
	))
	if m.Body != "Shall we meet at noon?" || m.HTML {
		t.Fatalf("body %q html %v, want the plain part", m.Body, m.HTML)
	}
	if m.From != (Address{Name: "Doe, Jane", Email: "jane.doe@example.com"}) {
		t.Fatalf("from = %+v", m.From)
	}
	if len(m.To) != 2 || m.To[1] != (Address{Name: "Carol C.", Email: "carol@example.org"}) || len(m.Cc) != 1 {
		t.Fatalf("to %+v cc %+v", m.To, m.Cc)
	}
	if m.MessageID != "abc123@example.com" || m.InReplyTo != "root@example.com" || strings.Join(m.References, " ") != "root@example.com mid@example.com" {
		t.Fatalf("ids: %q %q %q", m.MessageID, m.InReplyTo, m.References)
	}
	want := time.Date(2002, 9, 6, 17, 15, 0, 0, time.UTC)
	if !m.Date.Equal(want) || m.DateSource != "date" {
		t.Fatalf("date %v (%s), want %v", m.Date, m.DateSource, want)
	}
}

func TestParseHTMLOnly(t *testing.T) {
	m := mustParse(t, msg(
		"From: news@example.com",
		"Subject: News",
		"Date: Tue, 3 Dec 2002 19:41:57 +0800",
		"Content-Type: text/html; charset=utf-8",
		"",
		"<html><head><title>T</title><style>p{color:red}</style></head><body>",
		"<script>alert('x')</script><h1>Big&nbsp;news</h1><p>First &amp; second<br>line two</p>",
		"<ul><li>one</li><li>two</li></ul><table><tr><td>a</td><td>b</td></tr></table>",
		"</body></html>",
	))
	if !m.HTML {
		t.Fatal("HTML flag not set for an HTML-only mail")
	}
	for _, bad := range []string{"<", "color:red", "alert", "&amp;"} {
		if strings.Contains(m.Text, bad) {
			t.Errorf("text contains %q:\n%s", bad, m.Text)
		}
	}
	for _, want := range []string{"Big news", "First & second\nline two", "- one\n- two", "a b"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
}

func TestParseTransferEncodings(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("Grüße aus Köln — bis bald"))
	m := mustParse(t, msg(
		"From: a@example.com",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Content-Type: multipart/mixed; boundary=x",
		"",
		"--x",
		"Content-Type: text/plain; charset=iso-8859-1",
		"Content-Transfer-Encoding: quoted-printable",
		"",
		"Caf=E9 cr=E8me, a long line that was wrapped =",
		"softly.",
		"--x",
		"Content-Type: text/plain; charset=utf-8",
		"Content-Transfer-Encoding: base64",
		"",
		b64,
		"--x--",
	))
	for _, want := range []string{"Café crème, a long line that was wrapped softly.", "Grüße aus Köln — bis bald"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
}

func TestParseCharsets(t *testing.T) {
	cases := []struct {
		charset string
		body    []byte
		want    string
	}{
		{"gb2312", []byte{0xc4, 0xe3, 0xba, 0xc3, 0xca, 0xc0, 0xbd, 0xe7}, "你好世界"},
		{"gb2312_charset", []byte{0xc4, 0xe3, 0xba, 0xc3}, "你好"},
		{"big5", []byte{0xa4, 0xa4, 0xa4, 0xe5}, "中文"},
		{"iso-2022-jp", []byte("\x1b$BF|K\\8l\x1b(B"), "日本語"},
		{"koi8-r", []byte{0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4}, "Привет"},
		{"windows-1251", []byte{0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2}, "Привет"},
		{"windows-1252", []byte("\x93quoted\x94 \x80"), "“quoted” €"},
		{"iso-8859-15", []byte("\xa4uro"), "€uro"},
		{"us-ascii", []byte("caf\xc3\xa9"), "café"},       // UTF-8 under an ASCII label
		{"us-ascii", []byte("caf\xe9"), "café"},           // Latin-1 under an ASCII label
		{"x-no-such-charset", []byte("caf\xe9"), "café"},  // unknown label: Windows-1252
		{"unknown-8bit", []byte("na\xc3\xafve"), "naïve"}, // valid UTF-8 stays
		{"cp850", []byte{0x82}, "é"},                      // only in the IANA tables
	}
	for _, c := range cases {
		t.Run(c.charset, func(t *testing.T) {
			raw := append(msg("From: a@example.com", "Date: Mon, 2 Sep 2002 08:00:00 +0000",
				"Content-Type: text/plain; charset=\""+c.charset+"\"", "", ""), c.body...)
			m := mustParse(t, raw)
			if m.Text != c.want {
				t.Fatalf("text = %q, want %q", m.Text, c.want)
			}
		})
	}
}

func TestParseEncodedWordHeaders(t *testing.T) {
	m := mustParse(t, msg(
		"From: =?iso-8859-1?q?Andr=E9?= Dupont <andre@example.fr>",
		"To: =?GB2312?B?yKvH8kVNQUlMtdjWt8/6ytvN+A==?= <market@example.net>",
		"Subject: =?utf-8?B?SGVsbG8g?=",
		" =?utf-8?Q?W=C3=B6rld?= and =?iso-2022-jp?B?GyRCRnxLXDhsGyhC?=",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"",
		"x",
	))
	if m.Subject != "Hello Wörld and 日本語" {
		t.Errorf("subject = %q", m.Subject)
	}
	if m.From.Name != "André Dupont" {
		t.Errorf("from name = %q", m.From.Name)
	}
	if len(m.To) != 1 || m.To[0].Name != "全球EMAIL地址销售网" {
		t.Errorf("to = %+v", m.To)
	}
}

func TestParseRawEightBitHeaderUsesBodyCharset(t *testing.T) {
	raw := append(msg("From: a@example.com", "Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Content-Type: text/plain; charset=koi8-r"), []byte("\r\nSubject: \xf0\xd2\xc9\xd7\xc5\xd4\r\n\r\nbody")...)
	if m := mustParse(t, raw); m.Subject != "Привет" {
		t.Fatalf("subject = %q", m.Subject)
	}
}

func TestParseMboxFromLineAndDateFallbacks(t *testing.T) {
	cases := []struct {
		name   string
		raw    []byte
		want   time.Time
		source string
	}{
		{"mbox line stripped, Date used", msg("From someone@example.com Thu Aug 22 12:36:23 2002", "From: a@example.com", "Date: Thu, 22 Aug 2002 07:36:16 -0400", "", "x"),
			time.Date(2002, 8, 22, 11, 36, 16, 0, time.UTC), "date"},
		{"broken Date, Received used", msg("From: a@example.com", "Received: from x by y; Thu, 22 Aug 2002 07:36:16 -0400 (EDT)",
			"Received: from z by x; Wed, 21 Aug 2002 01:00:00 +0000", "Date: yesterday-ish", "", "x"),
			time.Date(2002, 8, 22, 11, 36, 16, 0, time.UTC), "received"},
		{"Date far after delivery", msg("From: a@example.com", "Received: from x by y; Thu, 22 Aug 2002 07:36:16 -0400",
			"Date: Wed, 04 Oct 2028 12:05:01 -0400", "", "x"),
			time.Date(2002, 8, 22, 11, 36, 16, 0, time.UTC), "received"},
		{"no Date, mbox line used", msg("From someone@example.com Thu Aug 22 12:36:23 2002", "From: a@example.com", "", "x"),
			time.Date(2002, 8, 22, 12, 36, 23, 0, time.UTC), "mbox"},
		{"Y2K year 0102", msg("From: a@example.com", "Date: Sun, 26 May 0102 00:07:31 -0900", "", "x"),
			time.Date(2002, 5, 26, 9, 7, 31, 0, time.UTC), "date"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, c.raw)
			if !m.Date.Equal(c.want) || m.DateSource != c.source {
				t.Fatalf("date %v from %q, want %v from %q (warnings %q)", m.Date.UTC(), m.DateSource, c.want, c.source, m.Warnings)
			}
			if m.From.Email != "a@example.com" {
				t.Fatalf("the mbox From line was read as the From header: %+v", m.From)
			}
		})
	}
}

func TestParseDateForms(t *testing.T) {
	cases := map[string]time.Time{
		"Thu, 22 Aug 2002 12:36:23 +0100 (IST)":           time.Date(2002, 8, 22, 11, 36, 23, 0, time.UTC),
		"22 Aug 2002 12:36:23 GMT":                        time.Date(2002, 8, 22, 12, 36, 23, 0, time.UTC),
		"Tue, 22 Jan 2002 09:40:36 -0800 (PST)":           time.Date(2002, 1, 22, 17, 40, 36, 0, time.UTC),
		"Mon, 4 Feb 02 16:27:08 PST":                      time.Date(2002, 2, 5, 0, 27, 8, 0, time.UTC),
		"Wed, 29 May 2002 16:54:6 +0300":                  time.Date(2002, 5, 29, 13, 54, 6, 0, time.UTC),
		"Sat, 27 Jul 2002 18:53:31 +-0500":                time.Date(2002, 7, 27, 23, 53, 31, 0, time.UTC),
		"Fri, 02 Aug 2002 23:37:59 0530":                  time.Date(2002, 8, 2, 18, 7, 59, 0, time.UTC),
		"Thu,22 Aug 2002 12:36:23 GMT+0200":               time.Date(2002, 8, 22, 10, 36, 23, 0, time.UTC),
		"Sat, 21 Sep 02 05:01:06 Greenwich Standard Time": time.Date(2002, 9, 21, 5, 1, 6, 0, time.UTC),
		"Mon, 14 Nov 0001 21:15:12 -0800 (PST)":           time.Date(2001, 11, 15, 5, 15, 12, 0, time.UTC),
	}
	for in, want := range cases {
		got, ok := parseDate(in)
		if !ok || !got.Equal(want) {
			t.Errorf("parseDate(%q) = %v, %v; want %v", in, got.UTC(), ok, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "Not supplied", "32 Foo 2002"} {
		if got, ok := parseDate(bad); ok {
			t.Errorf("parseDate(%q) = %v, want failure", bad, got)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	cases := map[string]struct {
		raw  []byte
		want string
	}{
		"empty":             {nil, "empty message"},
		"only mbox line":    {[]byte("From x@y Thu Aug 22 12:36:23 2002\n"), "empty message"},
		"binary":            {[]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3, '\n', ':'}, "not a mail"},
		"prose":             {[]byte("Hello there, this is not a mail\nat all"), "not a mail"},
		"no date anywhere":  {msg("From: a@example.com", "Subject: x", "", "body"), "no usable date: no Date header"},
		"unreadable date":   {msg("From: a@example.com", "Date: someday", "", "body"), `unreadable Date header "someday"`},
		"header with space": {[]byte("Not A Header: x\n\nbody"), "not a mail"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := Parse(c.raw)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", m)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func TestParseSurvivesBrokenStructure(t *testing.T) {
	m := mustParse(t, msg(
		"From: a@example.com",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Content-Type: multipart/mixed; boundary=\"never-closed\"",
		"",
		"--never-closed",
		"Content-Type: text/plain",
		"",
		"the text survives",
	))
	if !strings.Contains(m.Text, "the text survives") {
		t.Fatalf("text = %q", m.Text)
	}
	if len(m.Warnings) == 0 {
		t.Fatal("no warning about the unclosed boundary")
	}
}

func TestParseBase64WithListFooter(t *testing.T) {
	body := base64.StdEncoding.EncodeToString([]byte("Hello list, the real text."))
	m := mustParse(t, msg(
		"From: a@example.com",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Content-Type: text/plain; charset=utf-8",
		"Content-Transfer-Encoding: base64",
		"",
		body,
		"",
		"_______________________________________________",
		"Foo-talk mailing list",
		"https://lists.example.org/listinfo/foo-talk",
	))
	if m.Body != "Hello list, the real text." {
		t.Fatalf("body = %q", m.Body)
	}
	if !strings.Contains(m.Quoted, "Foo-talk mailing list") {
		t.Fatalf("footer not kept as quoted: %q", m.Quoted)
	}
}

func TestParseAttachments(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(make([]byte, 300))
	m := mustParse(t, msg(
		"From: a@example.com",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Content-Type: multipart/mixed; boundary=x",
		"",
		"--x",
		"Content-Type: text/plain",
		"",
		"See the attached files.",
		"--x",
		"Content-Type: image/png; name=\"=?utf-8?q?gr=C3=BC=C3=9Fe.png?=\"",
		"Content-Transfer-Encoding: base64",
		"Content-Disposition: attachment; filename=\"=?utf-8?q?gr=C3=BC=C3=9Fe.png?=\"",
		"",
		png,
		"--x",
		"Content-Type: text/plain; name=notes.txt",
		"Content-Disposition: attachment; filename=notes.txt",
		"",
		"not body text",
		"--x--",
	))
	want := []Attachment{{Filename: "grüße.png", ContentType: "image/png", Size: 300}, {Filename: "notes.txt", ContentType: "text/plain", Size: int64(len("not body text"))}}
	if len(m.Attachments) != len(want) {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	for i := range want {
		if m.Attachments[i] != want[i] {
			t.Errorf("attachment %d = %+v, want %+v", i, m.Attachments[i], want[i])
		}
	}
	if m.Body != "See the attached files." {
		t.Fatalf("an attachment leaked into the body: %q", m.Body)
	}
}

func TestParseForwardKeepsForwardedText(t *testing.T) {
	m := mustParse(t, msg(
		"From: a@example.com",
		"Subject: FW: Q3 numbers",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"",
		"FYI",
		"",
		"-----Original Message-----",
		"From: Smith, Bob",
		"Sent: Monday, September 02, 2002 7:00 AM",
		"To: Doe, Jane",
		"Subject: Q3 numbers",
		"",
		"Revenue was up 12 percent.",
	))
	if !strings.Contains(m.Body, "Revenue was up 12 percent.") || m.Quoted != "" {
		t.Fatalf("forward split: body %q quoted %q", m.Body, m.Quoted)
	}
}

func TestParseAlwaysValidUTF8(t *testing.T) {
	raw := append(msg("From: a@example.com", "Date: Mon, 2 Sep 2002 08:00:00 +0000", "Subject: \xff\xfe bad", "Content-Type: text/plain", "", ""), 0xff, 0xfe, 'x', 0xc3)
	m := mustParse(t, raw)
	for name, s := range map[string]string{"subject": m.Subject, "text": m.Text, "body": m.Body} {
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8: %q", name, s)
		}
	}
}

func TestParsePartMatchesRaw(t *testing.T) {
	root := Part{
		MimeType: "multipart/mixed",
		Headers: []Header{
			{"From", "Jane <jane@example.com>"}, {"To", "owner@example.com"}, {"Subject", "=?utf-8?q?R=C3=A9union?="},
			{"Date", "Mon, 2 Sep 2002 08:00:00 +0000"}, {"Message-ID", "<p1@example.com>"},
		},
		Parts: []Part{
			{MimeType: "multipart/alternative", Parts: []Part{
				{MimeType: "text/plain", Headers: []Header{{"Content-Type", "text/plain; charset=iso-8859-1"}}, Data: []byte("R\xe9union demain.\n\nOn Mon, Sep 2, 2002, Bob wrote:\n> old text")},
				{MimeType: "text/html", Headers: []Header{{"Content-Type", "text/html; charset=utf-8"}}, Data: []byte("<p>Réunion demain.</p>")},
			}},
			{MimeType: "application/pdf", Filename: "agenda.pdf", Headers: []Header{{"Content-Disposition", "attachment; filename=agenda.pdf"}}, Size: 12345},
		},
	}
	m, err := ParsePart(root)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "Réunion" || m.From.Email != "jane@example.com" || m.MessageID != "p1@example.com" {
		t.Fatalf("headers: %q %+v %q", m.Subject, m.From, m.MessageID)
	}
	if m.Body != "Réunion demain." || !strings.Contains(m.Quoted, "> old text") {
		t.Fatalf("body %q quoted %q", m.Body, m.Quoted)
	}
	if len(m.Attachments) != 1 || m.Attachments[0] != (Attachment{Filename: "agenda.pdf", ContentType: "application/pdf", Size: 12345}) {
		t.Fatalf("attachments %+v", m.Attachments)
	}
	if _, err := ParsePart(Part{MimeType: "text/plain"}); err == nil {
		t.Fatal("ParsePart accepted a part without headers")
	}
}

func TestItemFollowsConventions(t *testing.T) {
	m := mustParse(t, msg(
		"From: \"Jane Doe\" <Jane@Example.com>",
		"To: Bob <bob@example.org>",
		"Cc: carol@example.org",
		"Reply-To: list@example.org",
		"Subject: Re: Budget",
		"Date: Mon, 2 Sep 2002 08:00:00 +0000",
		"Message-ID: <m1@example.com>",
		"List-Id: <budget.example.org>",
		"Precedence: bulk",
		"X-Gmail-Labels: Inbox,Important,\"Work, Finance\"",
		"X-GM-THRID: 1234567890123456789",
		"Content-Type: text/html",
		"",
		"<p>Numbers attached.</p><blockquote>old</blockquote>",
	))
	it, mail := m.Item(ItemOptions{Source: "mbox", Folder: "Archive", Outbound: true})
	if it.Source != "mbox" || it.Kind != "email" || it.ExternalID != "m1@example.com" || it.Sender != "jane@example.com" {
		t.Fatalf("item %+v", it)
	}
	if it.Thread != "112210f47de98115" { // 1234567890123456789 in hex, as the Gmail API writes thread ids
		t.Fatalf("thread = %q", it.Thread)
	}
	if it.Body != "Numbers attached." || it.Quoted != "> old" {
		t.Fatalf("body %q quoted %q", it.Body, it.Quoted)
	}
	if strings.Join(it.People, "|") != "Jane Doe|jane@example.com|Bob|bob@example.org|carol@example.org" {
		t.Fatalf("people = %q", it.People)
	}
	meta := it.Meta
	checks := map[string]any{
		"message_id": "m1@example.com", "from": "jane@example.com", "from_name": "Jane Doe", "list_id": "<budget.example.org>",
		"precedence": "bulk", "folder": "Archive", "outbound": true, "html": true,
	}
	for k, v := range checks {
		if meta[k] != v {
			t.Errorf("meta[%s] = %v, want %v", k, meta[k], v)
		}
	}
	lists := map[string]string{"to": "bob@example.org", "cc": "carol@example.org", "reply_to": "list@example.org", "labels": "Inbox|Important|Work, Finance"}
	for k, v := range lists {
		got, _ := meta[k].([]string)
		if strings.Join(got, "|") != v {
			t.Errorf("meta[%s] = %v, want %s", k, meta[k], v)
		}
	}
	for _, absent := range []string{"in_reply_to", "references", "attachments", "auto_submitted", "list_unsubscribe"} {
		if _, ok := meta[absent]; ok {
			t.Errorf("meta[%s] present though empty", absent)
		}
	}
	if mail.MessageID != "m1@example.com" || mail.From.Email != "jane@example.com" || !mail.Outbound || len(mail.To) != 1 || mail.To[0].Name != "Bob" {
		t.Fatalf("mail %+v", mail)
	}

	noID := mustParse(t, msg("From: a@example.com", "Subject: x", "Date: Mon, 2 Sep 2002 08:00:00 +0000", "", "x"))
	it2, _ := noID.Item(ItemOptions{Source: "maildir"})
	if !strings.HasPrefix(it2.ExternalID, "sha256:") || len(it2.ExternalID) != len("sha256:")+64 {
		t.Fatalf("external id without Message-ID = %q", it2.ExternalID)
	}
}

func TestThreadKeyJoinsRepliesBySubject(t *testing.T) {
	a := mustParse(t, msg("From: a@example.com", "Subject: Q3 Budget", "Date: Mon, 2 Sep 2002 08:00:00 +0000", "", "x"))
	b := mustParse(t, msg("From: b@example.com", "Subject: RE: re: q3  budget", "Date: Mon, 2 Sep 2002 09:00:00 +0000", "", "y"))
	c := mustParse(t, msg("From: b@example.com", "Subject: Q4 Budget", "Date: Mon, 2 Sep 2002 09:00:00 +0000", "", "y"))
	if a.ThreadKey() != b.ThreadKey() {
		t.Fatalf("reply not in the thread: %q vs %q", a.ThreadKey(), b.ThreadKey())
	}
	if a.ThreadKey() == c.ThreadKey() {
		t.Fatal("different subjects share a thread")
	}
}

// A message without a date of its own takes the caller's fallback, marked
// as uncertain; one with a date never asks for it.
func TestParseDateFallback(t *testing.T) {
	june := time.Date(2001, 6, 21, 17, 22, 0, 0, time.UTC)
	asked := 0
	fallback := func(t time.Time, ok bool) ParseOptions {
		return ParseOptions{DateFallback: func() (time.Time, string, bool) { asked++; return t, "the neighbouring message 3.", ok }}
	}
	epoch := msg("From: outlook.team@enron.com", "Date: Mon, 31 Dec 1979 16:00:00 -0800 (PST)", "Subject: 3 - URGENT", "", "Migration")
	m, err := ParseWith(epoch, fallback(june, true))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Date.Equal(june) || m.DateSource != "fallback" || !strings.Contains(m.DateUncertain, "epoch") || !strings.Contains(m.DateUncertain, "neighbouring message 3.") {
		t.Fatalf("date %v from %q, uncertain %q", m.Date, m.DateSource, m.DateUncertain)
	}
	it, _ := m.Item(ItemOptions{Source: "maildir"})
	if it.Meta["date_uncertain"] != m.DateUncertain || !it.Time.Equal(june) {
		t.Fatalf("item time %v, meta %v", it.Time, it.Meta)
	}
	for name, opts := range map[string]ParseOptions{
		"no fallback":          {},
		"fallback has nothing": fallback(time.Time{}, false),
		"implausible fallback": fallback(time.Unix(0, 0), true),
	} {
		if _, err := ParseWith(epoch, opts); err == nil || !strings.Contains(err.Error(), "no usable date") {
			t.Errorf("%s: %v, want no usable date", name, err)
		}
	}
	asked = 0
	dated := msg("From: a@example.com", "Date: Mon, 2 Sep 2002 08:00:00 +0000", "", "body")
	if m, err := ParseWith(dated, fallback(june, true)); err != nil || asked != 0 || m.DateUncertain != "" || m.DateSource != "date" {
		t.Fatalf("a dated message: %v, asked %d, %+v", err, asked, m)
	}
}
