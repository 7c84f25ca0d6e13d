package executor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gm "google.golang.org/api/gmail/v1"
	"google.golang.org/api/googleapi"

	"github.com/omnibrain/omnibrain/approval"
)

// Gmail sends approved mail (approval.KindReply, KindEmail, KindForward).
// Every message carries a Message-ID derived from the idempotency key, set
// before sending, so Find can look it up (rfc822msgid:) and a crash while
// executing never sends twice.
type Gmail struct {
	svc      *gm.Service
	fromName string
	log      *slog.Logger
	now      func() time.Time

	mu   sync.Mutex
	from string // the profile address, learnt on first use
}

// Kinds implements Executor.
func (g *Gmail) Kinds() []approval.Kind {
	return []approval.Kind{approval.KindReply, approval.KindEmail, approval.KindForward}
}

// GmailOptions configure NewGmail.
type GmailOptions struct {
	Service  *gm.Service // from google.NewGmail
	FromName string      // the owner's display name (config owner.name)
	Log      *slog.Logger
	Now      func() time.Time
}

// NewGmail returns the mail executor.
func NewGmail(opts GmailOptions) (*Gmail, error) {
	if opts.Service == nil {
		return nil, errors.New("gmail executor: a Gmail service is required")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Gmail{svc: opts.Service, fromName: opts.FromName, log: opts.Log.With("component", "executor.gmail"), now: opts.Now}, nil
}

func emailPayload(p *approval.Proposal) (*approval.EmailPayload, error) {
	switch p.Kind {
	case approval.KindReply, approval.KindEmail, approval.KindForward:
	default:
		return nil, fmt.Errorf("gmail executor: proposal %s is a %s", p.ID, p.Kind)
	}
	var pl approval.EmailPayload
	dec := json.NewDecoder(bytes.NewReader(p.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pl); err != nil {
		return nil, fmt.Errorf("gmail executor: payload of %s: %w", p.ID, err)
	}
	if len(pl.To) == 0 || strings.TrimSpace(pl.Body) == "" {
		return nil, fmt.Errorf("gmail executor: payload of %s needs recipients and a body", p.ID)
	}
	return &pl, nil
}

// sender returns the mailbox address (Gmail's profile), cached.
func (g *Gmail) sender(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.from != "" {
		return g.from, nil
	}
	p, err := g.svc.Users.GetProfile("me").Context(ctx).Do()
	if err != nil {
		return "", fmt.Errorf("gmail executor: read the sender address: %w", err)
	}
	if p.EmailAddress == "" {
		return "", errors.New("gmail executor: the Gmail profile has no address")
	}
	g.from = strings.ToLower(p.EmailAddress)
	return g.from, nil
}

// MessageID is the Message-ID (without brackets) an execution with key
// carries: stable for the key, in the sender's domain.
func MessageID(key, from string) (string, error) {
	if key == "" || strings.ContainsAny(key, "<>@ \t\r\n\"()[]\\,;:") {
		return "", fmt.Errorf("gmail executor: idempotency key %q cannot be put in a Message-ID", key)
	}
	_, domain, ok := strings.Cut(from, "@")
	if !ok || domain == "" {
		return "", fmt.Errorf("gmail executor: sender %q has no domain", from)
	}
	return "omnibrain." + key + "@" + domain, nil
}

// Execute sends the mail once. When the answer is lost (5xx, network) it
// looks the Message-ID up before reporting a failure, so a mail that did
// leave is reported as sent; with no answer at all and nothing found yet,
// the outcome is unknown and the gate looks again later. It never sends
// again itself.
func (g *Gmail) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	pl, err := emailPayload(p)
	if err != nil {
		return "", err
	}
	from, err := g.sender(ctx)
	if err != nil {
		return "", err
	}
	msgID, err := MessageID(key, from)
	if err != nil {
		return "", err
	}
	raw, err := BuildMessage(pl, mail.Address{Name: g.fromName, Address: from}, msgID, g.now())
	if err != nil {
		return "", err
	}
	sent, err := g.svc.Users.Messages.Send("me", &gm.Message{Raw: base64.URLEncoding.EncodeToString(raw), ThreadId: pl.ThreadID}).Context(ctx).Do()
	if err == nil {
		g.log.Info("mail sent", "proposal", p.ID, "gmail_id", sent.Id, "thread", sent.ThreadId)
		return sent.Id, nil
	}
	maybeSent, noAnswer := lost(err), !answered(err)
	err = fmt.Errorf("gmail: send %q to %s: %w", pl.Subject, strings.Join(pl.To, ", "), describe(err))
	if maybeSent && ctx.Err() == nil {
		id, found, ferr := g.find(ctx, msgID)
		switch {
		case ferr != nil:
			return "", fmt.Errorf("%w; looking it up failed too (%v): %w", err, ferr, approval.ErrOutcomeUnknown)
		case found:
			g.log.Warn("send answered with an error but the mail is in Gmail", "proposal", p.ID, "err", err)
			return id, nil
		case noAnswer:
			// No answer at all: Gmail may have taken the mail and not
			// indexed it yet. The gate looks again once that has had
			// time, rather than telling the owner a sent mail failed.
			return "", fmt.Errorf("%w; not in Gmail yet: %w", err, approval.ErrOutcomeUnknown)
		}
	}
	return "", err
}

// answered reports whether Gmail answered the request with a status.
func answered(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge)
}

// lost reports whether a send may have happened despite the error: the
// server failed or the answer never came.
func lost(err error) bool {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code >= 500
	}
	return true
}

// describe keeps Google's reason and drops the noise.
func describe(err error) error {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Message != "" {
		return fmt.Errorf("Gmail answered %d: %s", ge.Code, ge.Message)
	}
	return err
}

// Find reports whether a mail with key's Message-ID is in the mailbox
// (sent, or sent and since deleted to the trash).
func (g *Gmail) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	if _, err := emailPayload(p); err != nil {
		return "", false, err
	}
	from, err := g.sender(ctx)
	if err != nil {
		return "", false, err
	}
	msgID, err := MessageID(key, from)
	if err != nil {
		return "", false, err
	}
	return g.find(ctx, msgID)
}

func (g *Gmail) find(ctx context.Context, msgID string) (string, bool, error) {
	r, err := g.svc.Users.Messages.List("me").Q("rfc822msgid:" + msgID).IncludeSpamTrash(true).Context(ctx).Do()
	if err != nil {
		return "", false, fmt.Errorf("gmail: look up <%s>: %w", msgID, err)
	}
	if len(r.Messages) == 0 {
		return "", false, nil
	}
	return r.Messages[0].Id, true, nil
}

// BuildMessage renders the RFC 5322 message: UTF-8 display names and
// subject as RFC 2047 encoded words, threading headers, our Message-ID, a
// quoted-printable UTF-8 text body when it needs one, CRLF line ends.
func BuildMessage(pl *approval.EmailPayload, from mail.Address, msgID string, date time.Time) ([]byte, error) {
	var b bytes.Buffer
	header := func(name, value string) {
		b.WriteString(fold(name+": "+value, len(name)+1))
		b.WriteString("\r\n")
	}
	addrs := func(field string, list []string) (string, error) {
		out := make([]string, 0, len(list))
		for _, s := range list {
			if strings.ContainsAny(s, "\r\n") {
				return "", fmt.Errorf("gmail: %s %q has a line break", field, s)
			}
			a, err := mail.ParseAddress(s)
			if err != nil {
				return "", fmt.Errorf("gmail: %s %q is not an address: %w", field, s, err)
			}
			out = append(out, a.String())
		}
		return strings.Join(out, ", "), nil
	}
	for _, v := range append([]string{pl.Subject, pl.InReplyTo}, pl.References...) {
		if strings.ContainsAny(v, "\r\n") {
			return nil, errors.New("gmail: a header field has a line break")
		}
	}
	header("From", from.String())
	for _, f := range []struct {
		name string
		list []string
	}{{"To", pl.To}, {"Cc", pl.Cc}, {"Bcc", pl.Bcc}} {
		if len(f.list) == 0 {
			continue
		}
		v, err := addrs(f.name, f.list)
		if err != nil {
			return nil, err
		}
		header(f.name, v)
	}
	header("Subject", encodeSubject(pl.Subject))
	header("Date", date.Format(time.RFC1123Z))
	header("Message-ID", "<"+msgID+">")
	if pl.InReplyTo != "" {
		header("In-Reply-To", angle(pl.InReplyTo))
	}
	refs := make([]string, 0, len(pl.References)+1)
	for _, r := range pl.References {
		refs = append(refs, angle(r))
	}
	if pl.InReplyTo != "" && !containsID(refs, angle(pl.InReplyTo)) {
		refs = append(refs, angle(pl.InReplyTo))
	}
	if len(refs) > 0 {
		header("References", strings.Join(refs, " "))
	}
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	body := strings.ReplaceAll(pl.Body, "\r\n", "\n")
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r", "\n"), "\n", "\r\n")
	if needsQP(body) {
		header("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		w := quotedprintable.NewWriter(&b)
		if _, err := w.Write([]byte(body)); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	} else {
		header("Content-Transfer-Encoding", "7bit")
		b.WriteString("\r\n")
		b.WriteString(body)
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n")
	}
	return b.Bytes(), nil
}

// encodeSubject makes the subject an RFC 2047 header value the recipient
// reads exactly as the owner did. Non-ASCII text is encoded as usual; ASCII
// text that looks like an encoded word ("=?utf-8?q?…?=") is encoded too
// (Go's encoder leaves it as it is), or the recipient's mail program would
// decode what the owner saw raw.
func encodeSubject(s string) string {
	if !strings.Contains(s, "=?") {
		return mime.QEncoding.Encode("utf-8", s)
	}
	// Base64 words of at most 45 bytes (60 characters encoded, 72 with
	// the markers: under RFC 2047's 75), cut at rune boundaries.
	var words []string
	for s != "" {
		n := min(len(s), 45)
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, " ")
}

func angle(id string) string {
	return "<" + strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(id), "<"), ">") + ">"
}

func containsID(list []string, id string) bool {
	for _, x := range list {
		if x == id {
			return true
		}
	}
	return false
}

// needsQP says whether the body cannot go as 7bit: non-ASCII, or lines
// over RFC 5322's 998 characters.
func needsQP(body string) bool {
	for _, line := range strings.Split(body, "\r\n") {
		if len(line) > 998 {
			return true
		}
	}
	for i := 0; i < len(body); i++ {
		if body[i] >= utf8.RuneSelf || (body[i] < ' ' && body[i] != '\r' && body[i] != '\n' && body[i] != '\t') {
			return true
		}
	}
	return false
}

// fold breaks a header line longer than 78 characters at spaces (RFC
// 5322 folding: unfolding restores the same text), never inside the field
// name: the earliest break is the space after "Name:", which puts a long
// encoded word on a line of its own within RFC 2047's 76 characters.
func fold(line string, minCut int) string {
	var b strings.Builder
	for len(line) > 78 {
		cut := strings.LastIndexByte(line[:78], ' ')
		if cut < minCut {
			cut = strings.IndexByte(line[78:], ' ')
			if cut < 0 {
				break
			}
			cut += 78
		}
		b.WriteString(line[:cut])
		b.WriteString("\r\n")
		line = line[cut:] // keeps the space: it starts the continuation line
		minCut = 1
	}
	b.WriteString(line)
	return b.String()
}
