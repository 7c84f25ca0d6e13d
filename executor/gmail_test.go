package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
)

var sendTime = time.Date(2024, 7, 10, 14, 30, 0, 0, time.FixedZone("CEST", 2*3600))

func TestBuildMessageExactRFC5322(t *testing.T) {
	pl := &approval.EmailPayload{
		To:         []string{"Jürgen Müller <juergen@example.de>", "bob@example.org"},
		Cc:         []string{`"Smith, Ann" <ann@example.org>`},
		Bcc:        []string{"secret@example.org"},
		Subject:    "Re: Größe der Ölkanne — Angebot für die Lieferung im nächsten Quartal bitte",
		Body:       "Hallo Jürgen,\nanbei das Angebot.\n\nGrüße\n",
		InReplyTo:  "orig@example.de",
		References: []string{"<root@example.de>"},
	}
	raw, err := BuildMessage(pl, mail.Address{Name: "Owner Ö", Address: "owner@example.com"}, "omnibrain.k1@example.com", sendTime)
	if err != nil {
		t.Fatal(err)
	}
	want := "From: =?utf-8?q?Owner_=C3=96?= <owner@example.com>\r\n" +
		"To: =?utf-8?q?J=C3=BCrgen_M=C3=BCller?= <juergen@example.de>,\r\n <bob@example.org>\r\n" +
		"Cc: \"Smith, Ann\" <ann@example.org>\r\n" +
		"Bcc: <secret@example.org>\r\n" +
		"Subject:\r\n =?utf-8?q?Re:_Gr=C3=B6=C3=9Fe_der_=C3=96lkanne_=E2=80=94_Angebot_f=C3=BCr?=\r\n" +
		" =?utf-8?q?_die_Lieferung_im_n=C3=A4chsten_Quartal_bitte?=\r\n" +
		"Date: Wed, 10 Jul 2024 14:30:00 +0200\r\n" +
		"Message-ID: <omnibrain.k1@example.com>\r\n" +
		"In-Reply-To: <orig@example.de>\r\n" +
		"References: <root@example.de> <orig@example.de>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Transfer-Encoding: quoted-printable\r\n" +
		"\r\n" +
		"Hallo J=C3=BCrgen,\r\nanbei das Angebot.\r\n\r\nGr=C3=BC=C3=9Fe\r\n"
	if string(raw) != want {
		t.Errorf("message:\n%s\nwant:\n%s", raw, want)
	}
	for i, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 78 {
			t.Errorf("line %d is %d characters: %q", i, len(line), line)
		}
	}
	// What a reader sees: the same names, subject and text.
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil || subject != pl.Subject {
		t.Errorf("decoded subject = %q, %v", subject, err)
	}
	to, err := m.Header.AddressList("To")
	if err != nil || to[0].Name != "Jürgen Müller" || to[1].Address != "bob@example.org" {
		t.Errorf("decoded To = %v, %v", to, err)
	}
	body, _ := io.ReadAll(quotedprintable.NewReader(m.Body))
	if string(body) != strings.ReplaceAll(pl.Body, "\n", "\r\n") {
		t.Errorf("decoded body = %q", body)
	}
	// And our own parser agrees (the mail is stored by it when it comes
	// back through the collector).
	parsed, err := mailparse.Parse(raw)
	if err != nil || parsed.Subject != pl.Subject || parsed.MessageID != "omnibrain.k1@example.com" || parsed.InReplyTo != "orig@example.de" ||
		len(parsed.References) != 2 || parsed.From.Name != "Owner Ö" {
		t.Errorf("mailparse = %+v, %v", parsed, err)
	}
}

func TestBuildMessagePlainASCII(t *testing.T) {
	raw, err := BuildMessage(&approval.EmailPayload{To: []string{"a@example.org"}, Subject: "Lunch", Body: "Noon?"},
		mail.Address{Address: "owner@example.com"}, "omnibrain.k2@example.com", sendTime)
	if err != nil {
		t.Fatal(err)
	}
	want := "From: <owner@example.com>\r\nTo: <a@example.org>\r\nSubject: Lunch\r\nDate: Wed, 10 Jul 2024 14:30:00 +0200\r\n" +
		"Message-ID: <omnibrain.k2@example.com>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Content-Transfer-Encoding: 7bit\r\n\r\nNoon?\r\n"
	if string(raw) != want {
		t.Errorf("message:\n%q\nwant:\n%q", raw, want)
	}
}

func TestBuildMessageRefusesHeaderInjection(t *testing.T) {
	for name, pl := range map[string]approval.EmailPayload{
		"subject":     {To: []string{"a@example.org"}, Subject: "hi\r\nBcc: evil@example.org", Body: "x"},
		"in_reply_to": {To: []string{"a@example.org"}, Subject: "hi", InReplyTo: "x>\nBcc: evil@example.org", Body: "x"},
		"to":          {To: []string{"a@example.org\r\nBcc: evil@example.org"}, Subject: "hi", Body: "x"},
		"bad address": {To: []string{"not an address"}, Subject: "hi", Body: "x"},
	} {
		if raw, err := BuildMessage(&pl, mail.Address{Address: "owner@example.com"}, "omnibrain.k@example.com", sendTime); err == nil {
			t.Errorf("%s: built %q", name, raw)
		}
	}
}

func proposal(t *testing.T, id string, kind approval.Kind, payload any) *approval.Proposal {
	t.Helper()
	b, err := approval.Canonical(kind, payload)
	if err != nil {
		t.Fatal(err)
	}
	return &approval.Proposal{ID: id, Kind: kind, State: approval.StateExecuting, Payload: json.RawMessage(b), PayloadHash: approval.HashPayload(b)}
}

// noSleep makes the client's retries of reads immediate.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func gmailExecutor(t *testing.T, fake *fakegoogle.Server) *Gmail {
	t.Helper()
	svc, err := google.NewGmail(context.Background(), fake.URL, google.NewHTTPClient(google.ClientOptions{Sleep: noSleep}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGmail(GmailOptions{Service: svc, FromName: "Owner", Now: func() time.Time { return sendTime }})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGmailExecuteReplyThreadsAndFind(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	fakegoogle.CheckAtEnd(t, fake)
	orig := fake.AddMessage([]byte("From: alice@example.org\r\nTo: owner@example.com\r\nSubject: Budget\r\nMessage-ID: <budget@example.org>\r\n\r\nQ3?\r\n"), fakegoogle.MessageOptions{})
	p := proposal(t, "p1", approval.KindReply, approval.EmailPayload{To: []string{"alice@example.org"}, Subject: "Re: Budget", Body: "Attached.",
		InReplyTo: "budget@example.org", References: []string{"budget@example.org"}, ThreadID: orig.ThreadID})
	key := approval.IdempotencyKey(p.ID, p.PayloadHash)
	ctx := context.Background()

	g := gmailExecutor(t, fake)
	if _, found, err := g.Find(ctx, p, key); err != nil || found {
		t.Fatalf("Find before sending = %v, %v", found, err)
	}
	id, err := g.Execute(ctx, p, key)
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].ID != id || sent[0].ThreadID != orig.ThreadID || sent[0].RequestThreadID != orig.ThreadID {
		t.Fatalf("sent = %+v", sent)
	}
	h := sent[0].Header
	if h.Get("Message-ID") != "<omnibrain."+key+"@example.com>" || h.Get("In-Reply-To") != "<budget@example.org>" ||
		h.Get("References") != "<budget@example.org>" || h.Get("From") != `"Owner" <owner@example.com>` {
		t.Errorf("headers = %v", h)
	}
	// After a crash (a new process), Find sees the mail: no second send.
	again := gmailExecutor(t, fake)
	got, found, err := again.Find(ctx, p, key)
	if err != nil || !found || got != id {
		t.Errorf("Find after the send = %q, %v, %v; want %q", got, found, err, id)
	}
	if _, found, _ := again.Find(ctx, p, "another-key"); found {
		t.Error("Find matched another key")
	}
}

func TestGmailSendFailures(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	fakegoogle.CheckAtEnd(t, fake)
	ctx := context.Background()
	g := gmailExecutor(t, fake)
	p := proposal(t, "p2", approval.KindEmail, approval.EmailPayload{To: []string{"bob@example.org"}, Subject: "Hi", Body: "Hello."})
	key := approval.IdempotencyKey(p.ID, p.PayloadHash)

	// A 500 before anything happened: failed, reported, not retried.
	fake.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", Status: 500, Times: 1})
	if _, err := g.Execute(ctx, p, key); err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "bob@example.org") {
		t.Errorf("500 on send: %v, want an error naming the status and recipient", err)
	}
	if n := fake.CountRequests("POST", "/gmail/v1/users/me/messages/send"); n != 1 || len(fake.Sent()) != 0 {
		t.Errorf("%d send requests, %d sent; want 1 and 0 (no blind retry)", n, len(fake.Sent()))
	}

	// The mail went out but the answer was a 500: the lookup finds it and
	// the execution counts as done.
	fake.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", Status: 500, After: true, Times: 1})
	id, err := g.Execute(ctx, p, key)
	if err != nil || len(fake.Sent()) != 1 || fake.Sent()[0].ID != id {
		t.Errorf("lost answer: %q, %v; %d sent", id, err, len(fake.Sent()))
	}

	// Gmail refuses the thread: a clear error.
	bad := proposal(t, "p3", approval.KindReply, approval.EmailPayload{To: []string{"bob@example.org"}, Subject: "Re: x", Body: "y", ThreadID: "nosuchthread"})
	if _, err := g.Execute(ctx, bad, approval.IdempotencyKey(bad.ID, bad.PayloadHash)); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown thread: %v", err)
	}
	// Not a mail proposal.
	cal := proposal(t, "p4", approval.KindCalendarDelete, approval.CalendarPayload{EventID: "abcde"})
	if _, err := g.Execute(ctx, cal, "k"); err == nil {
		t.Error("the gmail executor ran a calendar proposal")
	}
}

// The send reached Gmail but its answer was lost, and the lookup by
// Message-ID failed too: the outcome is unknown, not a failure; a later
// lookup finds the one mail. A refusal (4xx) is a plain failure.
func TestGmailLostAnswerAndFailedLookupIsUnknown(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	ctx := context.Background()
	g := gmailExecutor(t, fake)
	p := proposal(t, "p5", approval.KindEmail, approval.EmailPayload{To: []string{"bob@example.org"}, Subject: "Hi", Body: "Hello."})
	key := approval.IdempotencyKey(p.ID, p.PayloadHash)
	fake.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", Status: 500, After: true, Times: 1})
	fake.InjectFault(fakegoogle.Fault{Method: "GET", Path: "/gmail/v1/users/me/messages", Status: 503, Times: 3})
	_, err := g.Execute(ctx, p, key)
	if !errors.Is(err, approval.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Execute = %v, want an unknown outcome naming the 500", err)
	}
	if id, found, err := g.Find(ctx, p, key); err != nil || !found || id != fake.Sent()[0].ID {
		t.Errorf("Find afterwards = %q %v %v", id, found, err)
	}

	bad := proposal(t, "p6", approval.KindEmail, approval.EmailPayload{To: []string{"bob@example.org"}, Subject: "Hi", Body: "Again."})
	fake.InjectFault(fakegoogle.Fault{Method: "POST", Path: "/gmail/v1/users/me/messages/send", Status: 400, Times: 1})
	fake.InjectFault(fakegoogle.Fault{Method: "GET", Path: "/gmail/v1/users/me/messages", Status: 503, Times: 1})
	if _, err := g.Execute(ctx, bad, approval.IdempotencyKey(bad.ID, bad.PayloadHash)); err == nil || errors.Is(err, approval.ErrOutcomeUnknown) {
		t.Errorf("a 400 = %v, want a plain failure", err)
	}
	if n := len(fake.Sent()); n != 1 {
		t.Errorf("%d mails sent, want 1", n)
	}
}

// lostAnswer delivers POSTs to the server and then loses the answer, as a
// connection reset after the request went out does.
type lostAnswer struct{ base http.RoundTripper }

func (l lostAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	resp.Body.Close()
	return nil, errors.New("connection reset by peer")
}

// The send went out but no answer came at all, and the mail is not found
// at once (Gmail indexes it a moment later): the outcome is unknown, so
// the gate looks again after the settle time instead of reporting a
// failure for a mail that left. The mail is never sent twice here.
func TestGmailNoAnswerAndNotFoundIsUnknown(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	ctx := context.Background()
	svc, err := google.NewGmail(ctx, fake.URL, google.NewHTTPClient(google.ClientOptions{Sleep: noSleep, Base: lostAnswer{http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGmail(GmailOptions{Service: svc, FromName: "Owner", Now: func() time.Time { return sendTime }})
	if err != nil {
		t.Fatal(err)
	}
	p := proposal(t, "p7", approval.KindEmail, approval.EmailPayload{To: []string{"bob@example.org"}, Subject: "Hi", Body: "Hello."})
	key := approval.IdempotencyKey(p.ID, p.PayloadHash)
	fake.SetSearchLag(true) // the lookup right after the send does not see it yet
	_, err = g.Execute(ctx, p, key)
	if !errors.Is(err, approval.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("Execute = %v, want an unknown outcome naming the reset", err)
	}
	fake.SetSearchLag(false)
	if id, found, err := g.Find(ctx, p, key); err != nil || !found || len(fake.Sent()) != 1 || id != fake.Sent()[0].ID {
		t.Errorf("Find afterwards = %q %v %v; %d sent", id, found, err, len(fake.Sent()))
	}
}

// A subject the owner saw with "=?" in it, or in any script, is what the
// recipient sees: encoded so that decoding gives it back unchanged.
func TestSubjectRoundTripsThroughRFC2047(t *testing.T) {
	for _, subject := range []string{
		"=?utf-8?b?U2VuZCB0aGUgcGFzc3dvcmQ=?=",
		"Re: =?iso-8859-1?q?Gr=FC=DFe?= and more",
		"Invoice =?x",
		"Größe der Ölkanne",
		"=?utf-8?q?" + strings.Repeat("Größe ", 20) + "?=",
		"Lunch",
	} {
		raw, err := BuildMessage(&approval.EmailPayload{To: []string{"a@example.org"}, Subject: subject, Body: "x"},
			mail.Address{Address: "owner@example.com"}, "omnibrain.k3@example.com", sendTime)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > 78 {
				t.Errorf("%q: line %d is %d characters", subject, i, len(line))
			}
		}
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
		if err != nil || got != subject {
			t.Errorf("the recipient reads %q, the owner saw %q (%v)", got, subject, err)
		}
		if parsed, err := mailparse.Parse(raw); err != nil || parsed.Subject != subject {
			t.Errorf("mailparse reads %q, want %q (%v)", parsed.Subject, subject, err)
		}
	}
}
