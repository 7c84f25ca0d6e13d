package executor

import (
	"bytes"
	"mime"
	"net/mail"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/approval"
)

// FuzzBuildMessage feeds drafted text (which a model or an email may have
// shaped) into the message builder: whatever it is, the result either is
// refused or has exactly the approved recipients and subject — no header
// can be smuggled in.
func FuzzBuildMessage(f *testing.F) {
	f.Add("Alice <alice@example.org>", "Re: Budget", "Hi\nthere", "orig@example.org")
	f.Add("bob@example.org", "Größe\r\nBcc: evil@example.org", "body", "")
	f.Add("x@example.org", strings.Repeat("long subject ", 20), "line\r\n.\r\nBcc: e@x", "a>\nb")
	f.Add("\"Smith, Ann\" <ann@example.org>", "=?utf-8?q?fake?=", "=E2=9C=93", "<id@host>")
	f.Fuzz(func(t *testing.T, to, subject, body, inReplyTo string) {
		pl := &approval.EmailPayload{To: []string{to}, Subject: subject, Body: body, InReplyTo: inReplyTo}
		raw, err := BuildMessage(pl, mail.Address{Name: "Owner", Address: "owner@example.com"}, "omnibrain.k@example.com", sendTime)
		if err != nil {
			return
		}
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("built an unreadable message: %v\n%q", err, raw)
		}
		want, _ := mail.ParseAddress(to)
		got, err := m.Header.AddressList("To")
		if err != nil || len(got) != 1 || !strings.EqualFold(got[0].Address, want.Address) {
			t.Fatalf("To = %v, %v; want exactly %s", got, err, want.Address)
		}
		for _, h := range []string{"Cc", "Bcc", "Reply-To", "Sender"} {
			if v := m.Header.Get(h); v != "" {
				t.Fatalf("header %s appeared: %q", h, v)
			}
		}
		if len(m.Header["Message-Id"]) != 1 || len(m.Header["Subject"]) != 1 {
			t.Fatalf("headers duplicated: %v", m.Header)
		}
		if utf8.ValidString(subject) {
			dec, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
			// Compared modulo whitespace: header parsers trim and unfold it.
			if err == nil && !strings.Contains(subject, "=?") && strings.Join(strings.Fields(dec), " ") != strings.Join(strings.Fields(subject), " ") {
				t.Fatalf("subject %q came out as %q", subject, dec)
			}
		}
	})
}
