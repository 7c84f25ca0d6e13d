package fakegoogle_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"google.golang.org/api/gmail/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

func gmailClient(t testing.TB, fake *fakegoogle.Server) *gmail.Service {
	t.Helper()
	fakegoogle.CheckAtEnd(t, fake)
	svc, err := gmail.NewService(context.Background(), option.WithEndpoint(fake.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

const plainMail = "From: Alice Example <alice@example.org>\r\nTo: owner@example.com\r\nSubject: Budget\r\nDate: Mon, 01 Jul 2024 09:00:00 +0000\r\nMessage-ID: <budget-1@example.org>\r\n\r\nCan you send the Q3 budget?\r\n"

const multipartMail = "From: bob@example.org\r\nTo: owner@example.com\r\nSubject: Report\r\nDate: Tue, 02 Jul 2024 10:00:00 +0000\r\nMessage-ID: <report-1@example.org>\r\nIn-Reply-To: <budget-1@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"XX\"\r\n\r\n--XX\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nHere is the report =E2=9C=93\r\n--XX\r\nContent-Type: application/pdf; name=\"r.pdf\"\r\nContent-Disposition: attachment; filename=\"r.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n"

func TestGmailMessagesThroughRealClient(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	a := fake.AddMessage([]byte(plainMail), fakegoogle.MessageOptions{})
	b := fake.AddMessage([]byte(multipartMail), fakegoogle.MessageOptions{})
	svc := gmailClient(t, fake)
	ctx := context.Background()

	if b.ThreadID != a.ThreadID {
		t.Errorf("reply thread %s, want the thread of the message it answers %s", b.ThreadID, a.ThreadID)
	}
	prof, err := svc.Users.GetProfile("me").Do()
	if err != nil {
		t.Fatal(err)
	}
	if prof.EmailAddress != "owner@example.com" || prof.MessagesTotal != 2 || prof.HistoryId != fake.HistoryID() {
		t.Errorf("profile = %+v", prof)
	}

	raw, err := svc.Users.Messages.Get("me", a.ID).Format("raw").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	got, err := base64.URLEncoding.DecodeString(raw.Raw)
	if err != nil || string(got) != plainMail {
		t.Errorf("raw = %q, %v; want the stored bytes", got, err)
	}
	if raw.InternalDate != time.Date(2024, 7, 1, 9, 0, 0, 0, time.UTC).UnixMilli() {
		t.Errorf("internalDate = %d, want the Date header", raw.InternalDate)
	}

	full, err := svc.Users.Messages.Get("me", b.ID).Format("full").Do()
	if err != nil {
		t.Fatal(err)
	}
	if full.Payload.MimeType != "multipart/mixed" || len(full.Payload.Parts) != 2 {
		t.Fatalf("payload = %s with %d parts", full.Payload.MimeType, len(full.Payload.Parts))
	}
	text, _ := base64.URLEncoding.DecodeString(full.Payload.Parts[0].Body.Data)
	if string(text) != "Here is the report ✓" {
		t.Errorf("text part = %q (quoted-printable must be decoded)", text)
	}
	att := full.Payload.Parts[1]
	if att.Filename != "r.pdf" || att.Body.AttachmentId == "" || att.Body.Data != "" || att.Body.Size != 9 || att.PartId != "1" {
		t.Errorf("attachment part = %+v body %+v", att, att.Body)
	}
	if !strings.HasPrefix(full.Snippet, "Here is the report") {
		t.Errorf("snippet = %q", full.Snippet)
	}

	meta, err := svc.Users.Messages.Get("me", a.ID).Format("metadata").MetadataHeaders("Subject", "From").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Payload.Headers) != 2 || meta.Payload.Parts != nil || meta.Raw != "" {
		t.Errorf("metadata payload = %+v", meta.Payload)
	}

	if _, err := svc.Users.Messages.Get("me", "0000000000000000").Do(); !isStatus(err, 404) {
		t.Errorf("unknown id: %v, want 404", err)
	}
}

func isStatus(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}

func TestGmailListQueriesAndPagination(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	base := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	for i := range 25 {
		raw := fmt.Sprintf("From: s%d@example.org\r\nTo: owner@example.com\r\nSubject: n%d\r\nMessage-ID: <m%d@x>\r\n\r\nbody %d\r\n", i, i, i, i)
		fake.AddMessage([]byte(raw), fakegoogle.MessageOptions{InternalDate: base.Add(time.Duration(i) * time.Hour)})
	}
	fake.AddMessage([]byte("From: spam@example.org\r\nTo: owner@example.com\r\n\r\nbuy\r\n"), fakegoogle.MessageOptions{Labels: []string{"SPAM"}, InternalDate: base})
	svc := gmailClient(t, fake)

	var ids []string
	pages := 0
	err := svc.Users.Messages.List("me").MaxResults(10).Pages(context.Background(), func(r *gmail.ListMessagesResponse) error {
		pages++
		for _, m := range r.Messages {
			ids = append(ids, m.Id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 25 || pages != 3 {
		t.Errorf("listed %d ids in %d pages, want 25 in 3 (spam excluded)", len(ids), pages)
	}

	cut := base.Add(20 * time.Hour)
	r, err := svc.Users.Messages.List("me").Q(fmt.Sprintf("after:%d", cut.Unix())).Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 5 {
		t.Errorf("after: found %d, want 5", len(r.Messages))
	}
	r, err = svc.Users.Messages.List("me").Q("rfc822msgid:<m7@x>").Do()
	if err != nil || len(r.Messages) != 1 {
		t.Fatalf("rfc822msgid: %v, %v", r, err)
	}
	r, err = svc.Users.Messages.List("me").IncludeSpamTrash(true).Do()
	if err != nil || len(r.Messages) != 26 {
		t.Errorf("includeSpamTrash: %d, %v; want 26", len(r.Messages), err)
	}
	if _, err := svc.Users.Messages.List("me").Q("has:attachment").Do(); !isStatus(err, 400) {
		t.Errorf("unsupported operator: %v, want 400 (the fake must not pretend)", err)
	}
}

func TestGmailHistoryAndExpiry(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	svc := gmailClient(t, fake)
	start := fake.HistoryID()
	a := fake.AddMessage([]byte(plainMail), fakegoogle.MessageOptions{})
	b := fake.AddMessage([]byte(multipartMail), fakegoogle.MessageOptions{})
	if err := fake.ModifyLabels(a.ID, []string{"STARRED"}, []string{"UNREAD"}); err != nil {
		t.Fatal(err)
	}
	if err := fake.DeleteMessage(b.ID); err != nil {
		t.Fatal(err)
	}

	h, err := svc.Users.History.List("me").StartHistoryId(start).HistoryTypes("messageAdded").Do()
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, rec := range h.History {
		for _, m := range rec.MessagesAdded {
			added = append(added, m.Message.Id)
		}
	}
	if strings.Join(added, ",") != a.ID+","+b.ID || h.HistoryId != fake.HistoryID() {
		t.Errorf("added = %v, historyId %d; want [%s %s], %d", added, h.HistoryId, a.ID, b.ID, fake.HistoryID())
	}
	all, err := svc.Users.History.List("me").StartHistoryId(start).Do()
	if err != nil || len(all.History) != 4 {
		t.Fatalf("all history: %d records, %v; want 4", len(all.History), err)
	}
	if len(all.History[2].LabelsAdded) != 1 || len(all.History[2].LabelsRemoved) != 1 || len(all.History[3].MessagesDeleted) != 1 {
		t.Errorf("label/delete records = %+v %+v", all.History[2], all.History[3])
	}
	if _, err := svc.Users.Messages.Get("me", b.ID).Do(); !isStatus(err, 404) {
		t.Errorf("deleted message: %v, want 404", err)
	}

	fake.ExpireHistory()
	if _, err := svc.Users.History.List("me").StartHistoryId(start).Do(); !isStatus(err, 404) {
		t.Errorf("expired history: %v, want 404", err)
	}
	if _, err := svc.Users.History.List("me").StartHistoryId(fake.HistoryID()).Do(); err != nil {
		t.Errorf("current history id after expiry: %v", err)
	}
}

func TestGmailSendJSONAndUpload(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	orig := fake.AddMessage([]byte(plainMail), fakegoogle.MessageOptions{})
	svc := gmailClient(t, fake)

	reply := "From: owner@example.com\r\nTo: alice@example.org\r\nSubject: Re: Budget\r\nMessage-ID: <ob-1@omnibrain>\r\nIn-Reply-To: <budget-1@example.org>\r\nReferences: <budget-1@example.org>\r\n\r\nAttached.\r\n"
	sent, err := svc.Users.Messages.Send("me", &gmail.Message{Raw: base64.RawURLEncoding.EncodeToString([]byte(reply)), ThreadId: orig.ThreadID}).Do()
	if err != nil {
		t.Fatal(err)
	}
	if sent.ThreadId != orig.ThreadID || len(sent.LabelIds) != 1 || sent.LabelIds[0] != "SENT" {
		t.Errorf("send answer = %+v", sent)
	}
	second := "From: owner@example.com\r\nTo: carol@example.org\r\nSubject: Hi\r\n\r\nHello.\r\n"
	up, err := svc.Users.Messages.Send("me", &gmail.Message{}).Media(strings.NewReader(second), googleapi.ContentType("message/rfc822")).Do()
	if err != nil {
		t.Fatal(err)
	}
	got := fake.Sent()
	if len(got) != 2 {
		t.Fatalf("recorded %d sends, want 2", len(got))
	}
	if string(got[0].Raw) != reply || got[0].Upload || got[0].RequestThreadID != orig.ThreadID || got[0].Header.Get("In-Reply-To") != "<budget-1@example.org>" {
		t.Errorf("first send = %+v", got[0])
	}
	if string(got[1].Raw) != second || !got[1].Upload || got[1].ID != up.Id {
		t.Errorf("upload send = %+v", got[1])
	}
	// The sent copy is in the mailbox and findable by the Message-ID we set.
	r, err := svc.Users.Messages.List("me").Q("rfc822msgid:ob-1@omnibrain").Do()
	if err != nil || len(r.Messages) != 1 || r.Messages[0].Id != sent.Id {
		t.Errorf("rfc822msgid lookup of the sent mail = %+v, %v", r, err)
	}
	// A message without recipients is refused, as Gmail does.
	if _, err := svc.Users.Messages.Send("me", &gmail.Message{Raw: base64.URLEncoding.EncodeToString([]byte("Subject: x\r\n\r\nno one\r\n"))}).Do(); !isStatus(err, 400) {
		t.Errorf("send without recipient: %v, want 400", err)
	}
	if len(fake.Sent()) != 2 {
		t.Error("a refused send was recorded")
	}
}

func TestGmailFaults(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	svc := gmailClient(t, fake)
	fake.InjectFault(fakegoogle.Fault{Path: "/gmail/v1/users/me/messages", Status: 429, RetryAfter: "7", Times: 1})
	_, err := svc.Users.Messages.List("me").Do()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != 429 || ge.Header.Get("Retry-After") != "7" {
		t.Fatalf("429 fault: %v", err)
	}
	if _, err := svc.Users.Messages.List("me").Do(); err != nil {
		t.Errorf("fault with Times 1 still active: %v", err)
	}
	fake.InjectFault(fakegoogle.Fault{Method: "GET", Status: 500})
	for range 2 {
		if _, err := svc.Users.GetProfile("me").Do(); !isStatus(err, 500) {
			t.Errorf("500 fault: %v", err)
		}
	}
	fake.ClearFaults()
	fake.InjectFault(fakegoogle.Fault{Delay: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := svc.Users.GetProfile("me").Context(ctx).Do(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow fault with a short deadline: %v", err)
	}
}

// TestGmailCorpusFullAndRaw serves every Enron and SpamAssassin message in
// both formats: raw is the file's bytes exactly; full is valid against the
// discovery schema, decodes in the real client, and agrees with the
// standard library's reading of the message (headers, media types, the
// text of single-part mail).
func TestGmailCorpusFullAndRaw(t *testing.T) {
	disc := fakegoogle.TestDiscovery(t)
	for _, dir := range []string{"mail/enron/maildir", "mail/spamassassin/data"} {
		t.Run(dir, func(t *testing.T) {
			root := testutil.SharedData(t, dir)
			fake := fakegoogle.New(t, fakegoogle.Options{})
			n, err := fake.LoadMaildir(root)
			if err != nil || n == 0 {
				t.Fatalf("LoadMaildir = %d, %v", n, err)
			}
			svc := gmailClient(t, fake)
			var ids []string
			err = svc.Users.Messages.List("me").MaxResults(500).Pages(context.Background(), func(r *gmail.ListMessagesResponse) error {
				for _, m := range r.Messages {
					ids = append(ids, m.Id)
				}
				return nil
			})
			if err != nil || len(ids) != n {
				t.Fatalf("listed %d of %d: %v", len(ids), n, err)
			}
			files := map[string]bool{}
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(p)
					files[string(fakegoogle.StripMboxFrom(b))] = true
				}
				return nil
			})
			var multipart, checkedText int
			for _, id := range ids {
				m, err := svc.Users.Messages.Get("me", id).Format("raw").Do()
				if err != nil {
					t.Fatal(err)
				}
				raw, err := base64.URLEncoding.DecodeString(m.Raw)
				if err != nil || !files[string(raw)] {
					t.Fatalf("raw of %s is not one of the corpus files (%v)", id, err)
				}
				resp, err := http.Get(fake.URL + "/gmail/v1/users/me/messages/" + id + "?format=full")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var wire any
				if err := json.Unmarshal(body, &wire); err != nil {
					t.Fatalf("full of %s is not JSON: %v", id, err)
				}
				if probs := disc.Validate("gmail", "Message", wire); len(probs) > 0 {
					t.Fatalf("full of %s: %v", id, probs)
				}
				var full gmail.Message
				if err := json.Unmarshal(body, &full); err != nil || full.Payload == nil || full.Raw != "" || full.InternalDate != m.InternalDate {
					t.Fatalf("full of %s in the client's type: %v", id, err)
				}
				if len(full.Payload.Parts) > 0 {
					multipart++
				}
				checkedText += agreesWithStdlib(t, id, raw, full.Payload)
			}
			t.Logf("%d messages, %d multipart, %d text bodies compared", n, multipart, checkedText)
			if checkedText < n/2 || strings.Contains(dir, "spamassassin") && multipart < 100 {
				t.Errorf("%d multipart and %d texts compared of %d: the comparison is not biting", multipart, checkedText, n)
			}
		})
	}
}

// agreesWithStdlib compares a full payload with the standard library's
// reading of raw (net/mail, mime/multipart), for messages it can read:
// every header is there with its unfolded value, media types and the tree
// of parts match, and text leaves decode to the same bytes. It returns how
// many leaf bodies were compared.
func agreesWithStdlib(t *testing.T, id string, raw []byte, p *gmail.MessagePart) int {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return 0 // malformed: Gmail and the fake serve it as best they can
	}
	body, err := io.ReadAll(msg.Body)
	if err != nil {
		return 0
	}
	n, _ := sameEntity(t, id, textproto.MIMEHeader(msg.Header), body, p, 0)
	return n
}

// sameEntity compares one MIME entity with its payload part. ok is false
// when the standard library cannot read the entity (nothing to compare).
func sameEntity(t *testing.T, id string, h textproto.MIMEHeader, body []byte, p *gmail.MessagePart, depth int) (n int, ok bool) {
	t.Helper()
	got := map[string][]string{}
	for _, ph := range p.Headers {
		k := textproto.CanonicalMIMEHeaderKey(ph.Name)
		got[k] = append(got[k], ph.Value)
	}
	for k, vals := range h {
		want := make([]string, len(vals))
		for i, v := range vals {
			want[i] = asJSON(strings.TrimSpace(v)) // JSON carries text: bytes that are not UTF-8 become U+FFFD
		}
		if !slices.Equal(got[k], want) {
			t.Fatalf("%s part %q: header %s = %q, the standard library reads %q", id, p.PartId, k, got[k], want)
		}
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt == "" {
		mt, params = "text/plain", nil
	}
	if strings.HasPrefix(mt, "multipart/") && params["boundary"] != "" && depth < 10 {
		var parts [][]byte
		var headers []textproto.MIMEHeader
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			part, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return 0, false
			}
			b, err := io.ReadAll(part)
			if err != nil {
				return 0, false
			}
			headers, parts = append(headers, part.Header), append(parts, b)
		}
		if len(parts) == 0 {
			return 0, false
		}
		if p.MimeType != mt || len(p.Parts) != len(parts) {
			t.Fatalf("%s part %q: %s with %d parts, the standard library reads %s with %d", id, p.PartId, p.MimeType, len(p.Parts), mt, len(parts))
		}
		for i := range parts {
			m, ok := sameEntity(t, id, headers[i], parts[i], p.Parts[i], depth+1)
			if !ok {
				return n, false
			}
			n += m
		}
		return n, true
	}
	if strings.HasPrefix(mt, "multipart/") {
		return 0, false
	}
	if p.MimeType != mt {
		t.Fatalf("%s part %q: mimeType %q, Content-Type says %q", id, p.PartId, p.MimeType, mt)
	}
	var want []byte
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "", "7bit", "8bit", "binary":
		want = body
	case "quoted-printable":
		if want, err = io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body))); err != nil {
			return 0, true
		}
	default:
		return 0, true
	}
	if p.Filename != "" || p.Body == nil || !strings.HasPrefix(mt, "text/") {
		return 0, true
	}
	data, err := base64.URLEncoding.DecodeString(p.Body.Data)
	if err != nil || !bytes.Equal(data, want) || p.Body.Size != int64(len(want)) {
		t.Fatalf("%s part %q: body data %q (size %d), want %q (%v)", id, p.PartId, truncate(data, 80), p.Body.Size, truncate(want, 80), err)
	}
	return 1, true
}

func asJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// TestResponsesMatchDiscovery checks the fake's own answers, as raw JSON,
// against the schemas: field names exist and int64 fields are strings.
func TestResponsesMatchDiscovery(t *testing.T) {
	disc := fakegoogle.TestDiscovery(t)
	fake := fakegoogle.New(t, fakegoogle.Options{})
	a := fake.AddMessage([]byte(plainMail), fakegoogle.MessageOptions{})
	fake.AddMessage([]byte(multipartMail), fakegoogle.MessageOptions{})
	ev, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "Standup", Start: &fakegoogle.EventDateTime{DateTime: "2024-07-01T09:00:00+02:00", TimeZone: "Europe/Berlin"},
		End: &fakegoogle.EventDateTime{DateTime: "2024-07-01T09:15:00+02:00", TimeZone: "Europe/Berlin"}, Recurrence: []string{"RRULE:FREQ=DAILY;COUNT=3"},
		Attendees: []fakegoogle.Attendee{{Email: "alice@example.org", ResponseStatus: "accepted"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ api, schema, path string }{
		{"gmail", "Profile", "/gmail/v1/users/me/profile"},
		{"gmail", "ListMessagesResponse", "/gmail/v1/users/me/messages"},
		{"gmail", "Message", "/gmail/v1/users/me/messages/" + a.ID + "?format=full"},
		{"gmail", "Message", "/gmail/v1/users/me/messages/" + a.ID + "?format=raw"},
		{"gmail", "ListHistoryResponse", "/gmail/v1/users/me/history?startHistoryId=1"},
		{"calendar", "Events", "/calendar/v3/calendars/primary/events?singleEvents=true"},
		{"calendar", "Events", "/calendar/v3/calendars/primary/events"},
		{"calendar", "Event", "/calendar/v3/calendars/primary/events/" + ev.ID},
	} {
		resp, err := http.Get(fake.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		for _, p := range disc.Validate(c.api, c.schema, v) {
			t.Errorf("%s: %s", c.path, p)
		}
		if c.schema == "Message" && !bytes.Contains(b, []byte(`"historyId":"`)) {
			t.Errorf("%s: historyId not a JSON string: %s", c.path, b)
		}
	}
	// The validator itself must catch a wrong type and an unknown field.
	if p := disc.Validate("gmail", "Message", map[string]any{"historyId": 12.0, "bogus": true}); len(p) != 2 {
		t.Errorf("validator found %v, want 2 problems", p)
	}
}

func TestDiscoveryCatchesUnknownCalls(t *testing.T) {
	disc := fakegoogle.TestDiscovery(t)
	probs := disc.Problems([]fakegoogle.Request{
		{Method: "GET", Path: "/gmail/v1/users/me/messages", Query: url.Values{"q": {"x"}, "bogus": {"1"}}},
		{Method: "GET", Path: "/gmail/v1/users/me/nothing"},
		{Method: "GET", Path: "/gmail/v1/users/me/messages/abc", Query: url.Values{"format": {"weird"}}},
		{Method: "POST", Path: "/calendar/v3/calendars/primary/events", Query: url.Values{"sendUpdates": {"all"}}, Body: []byte(`{"summary":"x","colour":"red"}`)},
		{Method: "POST", Path: "/upload/gmail/v1/users/me/messages/send", Query: url.Values{"uploadType": {"multipart"}}},
		{Method: "POST", Path: "/token"},
	})
	if len(probs) != 4 {
		t.Errorf("problems = %q, want 4 (bogus param, unknown path, bad enum, unknown body field)", probs)
	}
}
