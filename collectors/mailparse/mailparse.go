// Package mailparse turns raw RFC 822 mail into a Message: decoded headers
// and addresses, a date that survives broken headers, readable UTF-8 text
// (from HTML when there is no plain part, from any legacy charset), the new
// text separated from quoted replies and signatures, and attachments as
// metadata. The importers and the Gmail collector share it.
//
// Parse takes raw bytes (a Gmail format=raw message, a file of a maildir, a
// message cut from an mbox); ParsePart takes a decoded part tree (Gmail
// format=full). Message.Item converts the result into a store item.
package mailparse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/jhillyerd/enmime/v2"
	"github.com/jhillyerd/enmime/v2/mediatype"

	cliptext "github.com/omnibrain/omnibrain/internal/clip"
)

// Message is a parsed mail.
type Message struct {
	MessageID  string   // without angle brackets; "" if the header is missing
	InReplyTo  string   // the first id of In-Reply-To, without brackets
	References []string // ids of References, oldest first
	Subject    string
	From       Address
	ReplyTo    []Address
	To, Cc     []Address
	Bcc        []Address

	// Date is the Date header when it is usable, else the newest Received
	// header's date, else the mbox From line's, else what the caller's
	// DateFallback supplied; DateSource says which ("date", "received",
	// "mbox", "fallback").
	Date       time.Time
	DateSource string
	// DateUncertain says why Date is a guess (DateSource "fallback"): the
	// message had no date of its own. "" when Date is the message's.
	DateUncertain string

	ListID          string
	ListUnsubscribe string
	Precedence      string
	AutoSubmitted   string
	Labels          []string // X-Gmail-Labels of a Google Takeout export
	GmailThreadID   string   // X-GM-THRID of a Takeout export, as the hex id the Gmail API uses

	Text   string // the whole readable text
	HTML   bool   // Text was rendered from HTML (no usable plain part)
	Body   string // the new text: no quoted reply, no signature (a forward keeps what it forwards)
	Quoted string // quoted replies, signature and list footer

	Attachments []Attachment
	// Warnings are problems that did not stop parsing (a part that could
	// not be read, an unknown charset, a Date header that was ignored).
	Warnings []string
	// Damaged says why the message is not whole, "" when it is: it ends
	// inside its headers, a multipart lacks its closing boundary, an
	// encoded part is cut. A store keeps a whole copy of a message over a
	// damaged one.
	Damaged string
	// Hash identifies the content (SHA-256 of the message without an mbox
	// From line), the id of last resort.
	Hash string
	// Fingerprint identifies the message's bytes whatever archive held it
	// (line ends and surrounding blank lines aside): how two copies of a
	// message without a Message-ID are known to be one.
	Fingerprint string
}

// Attachment is an attachment's metadata; its content is not kept.
type Attachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// MaxSize is the largest message Parse accepts.
const MaxSize = 64 << 20

// ParseOptions change how ParseWith reads a message.
type ParseOptions struct {
	// DateFallback, if set, is asked for a time when the message has no
	// usable date of its own (no Date header, an unreadable one or a
	// converter's epoch placeholder, and no Received or mbox From date):
	// the time, and where it came from ("the neighbouring message …").
	// The message is then kept with that time, marked DateUncertain,
	// instead of failing.
	DateFallback func() (t time.Time, from string, ok bool)
}

// Parse parses one raw RFC 822 message. A leading mbox "From " line is
// skipped (and its date used as the last date fallback). It returns an
// error naming the reason when the input is not a mail at all or has no
// usable date; everything less serious becomes a Warning.
func Parse(raw []byte) (*Message, error) { return ParseWith(raw, ParseOptions{}) }

// ParseWith is Parse with options.
func ParseWith(raw []byte, opts ParseOptions) (m *Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("mailparse: parser failure on malformed input: %v", r)
		}
	}()
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("mailparse: message is %d bytes, more than the %d accepted", len(raw), MaxSize)
	}
	fromLine, raw := cutMboxFrom(raw)
	raw = bytes.TrimLeft(raw, "\r\n\t ")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("mailparse: empty message")
	}
	if err := checkHeaderStart(raw); err != nil {
		return nil, err
	}
	sum, print := sha256.Sum256(raw), fingerprint(raw)
	raw, trailer := cutBase64Trailer(raw)
	root, err := parser.ReadParts(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("mailparse: read MIME structure: %w", err)
	}
	m = &Message{Hash: hex.EncodeToString(sum[:]), Fingerprint: print}
	if !headerEnds(raw) {
		m.Damaged = "it ends inside its headers"
	}
	tree := fromEnmime(root, m)
	if m.Damaged == "" && !boundariesClosed(root, raw) {
		// enmime does not always say so when the last part is cut.
		m.Damaged = "a multipart part ends without its closing boundary"
	}
	if trailer != "" {
		// Keep the appended footer as text of its own, after the body.
		tree = &node{contentType: "multipart/mixed", children: []*node{tree, {contentType: "text/plain", text: trailer}}}
	}
	if err := m.fill(root.Header, tree, fromLine, opts); err != nil {
		return nil, err
	}
	return m, nil
}

// cutBase64Trailer handles a single-part base64 message to which a mailing
// list appended a plain-text footer: decoding the footer as base64 would
// turn it, and the end of the body, into garbage. It returns the message
// without the footer, and the footer.
func cutBase64Trailer(raw []byte) ([]byte, string) {
	end := bytes.Index(raw, []byte("\n\n"))
	if crlf := bytes.Index(raw, []byte("\r\n\r\n")); crlf >= 0 && (end < 0 || crlf < end) {
		end = crlf
	}
	if end < 0 {
		return raw, ""
	}
	head := bytes.ToLower(raw[:end])
	if !bytes.Contains(head, []byte("content-transfer-encoding: base64")) || bytes.Contains(head, []byte("multipart/")) {
		return raw, ""
	}
	body := raw[end:]
	seenData := false
	for off := 0; off < len(body); {
		next := bytes.IndexByte(body[off:], '\n')
		if next < 0 {
			next = len(body) - off
		}
		line := bytes.TrimSpace(body[off : off+next])
		if len(line) > 0 {
			if !isBase64Line(line) {
				if !seenData {
					return raw, ""
				}
				cut := end + off
				text, _ := decodeText("", raw[cut:])
				return raw[:cut], strings.TrimSpace(text)
			}
			seenData = true
		}
		off += next + 1
	}
	return raw, ""
}

func isBase64Line(l []byte) bool {
	for _, c := range l {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// parser is stateless once built; enmime copies it per call.
var parser = enmime.NewParser(
	enmime.SkipMalformedParts(true),
	enmime.MultipartWOBoundaryAsSinglePart(true),
	enmime.SetReadPartErrorPolicy(enmime.AllowCorruptTextPartErrorPolicy),
	enmime.MaxStoredPartErrors(20),
	enmime.DisableCharacterDetection(true),
	enmime.DisableTextConversion(true),
	enmime.SetCustomParseMediaType(parseMediaType),
)

// parseMediaType is enmime's own parser with the charset label rewritten to
// one enmime decodes correctly, or to utf-8 (no conversion) when decodeText
// knows better; the original label stays in the part's header.
func parseMediaType(ctype string) (string, map[string]string, []string, error) {
	mt, params, invalid, err := mediatype.Parse(ctype)
	if err != nil {
		return mt, params, invalid, err
	}
	if cs, ok := params["charset"]; ok {
		params["charset"] = enmimeCharset(cs)
	} else if strings.HasPrefix(strings.ToLower(mt), "text/") {
		params["charset"] = "utf-8" // no guessing in enmime: decodeText guesses only when it must
	}
	return mt, params, invalid, nil
}

// cutMboxFrom splits off a leading mbox "From " separator line.
func cutMboxFrom(raw []byte) (string, []byte) {
	if !bytes.HasPrefix(raw, []byte("From ")) {
		return "", raw
	}
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		return string(raw), nil
	}
	return strings.TrimRight(string(raw[:i]), "\r"), raw[i+1:]
}

// fingerprint hashes a message with its line ends made LF and the blank
// lines around it dropped: an mbox trims what a maildir file keeps.
func fingerprint(raw []byte) string {
	norm := bytes.ReplaceAll(bytes.TrimSpace(raw), []byte("\r\n"), []byte("\n"))
	sum := sha256.Sum256(norm)
	return hex.EncodeToString(sum[:16])
}

// headerEnds reports whether the header block ends with the blank line
// before the body, as in every whole message.
func headerEnds(raw []byte) bool {
	return bytes.Contains(raw, []byte("\n\n")) || bytes.Contains(raw, []byte("\n\r\n"))
}

// boundariesClosed reports whether every multipart part's closing
// boundary ("--" boundary "--") is in the message, as in a whole one.
func boundariesClosed(p *enmime.Part, raw []byte) bool {
	for ; p != nil; p = p.NextSibling {
		if b := p.Boundary; b != "" && strings.HasPrefix(p.ContentType, "multipart/") && !bytes.Contains(raw, []byte("--"+b+"--")) {
			return false
		}
		if !boundariesClosed(p.FirstChild, raw) {
			return false
		}
	}
	return true
}

// checkHeaderStart rejects input that does not begin with a header field.
func checkHeaderStart(raw []byte) error {
	line := raw
	if i := bytes.IndexByte(raw, '\n'); i >= 0 {
		line = raw[:i]
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return fmt.Errorf("mailparse: not a mail: the first line %q is not a header field", clip(string(line), 60))
	}
	for _, c := range line[:colon] {
		if c <= ' ' || c >= 127 {
			return fmt.Errorf("mailparse: not a mail: the first line %q is not a header field", clip(string(line), 60))
		}
	}
	return nil
}

// clip shortens text from a mail, which may not be valid UTF-8, for a
// message.
func clip(s string, n int) string { return cliptext.Text(strings.ToValidUTF8(s, "?"), n) }

// node is a MIME part reduced to what body selection needs; both enmime's
// tree and a Gmail payload become one.
type node struct {
	contentType string // lower-case media type
	disposition string
	filename    string
	text        string // decoded UTF-8 (text parts only)
	size        int64
	children    []*node
}

// fromEnmime converts enmime's part tree, decoding text whose charset
// enmime passed through.
func fromEnmime(p *enmime.Part, m *Message) *node {
	n := &node{
		contentType: strings.ToLower(p.ContentType),
		disposition: strings.ToLower(p.Disposition),
		filename:    decodeHeader(p.FileName, ""),
		size:        int64(len(p.Content)),
	}
	if n.contentType == "" && p.Parent == nil {
		n.contentType = "text/plain"
	}
	for _, e := range p.Errors {
		if e.Name == enmime.ErrorMissingContentType || e.Name == enmime.ErrorCharsetConversion {
			continue
		}
		m.warnf("part %s: %s: %s", p.PartID, e.Name, e.Detail)
		if m.Damaged != "" {
			continue
		}
		switch e.Name {
		case enmime.ErrorMissingBoundary:
			m.Damaged = "a multipart part ends without its closing boundary"
		case enmime.ErrorMalformedBase64:
			m.Damaged = "an encoded part is cut or broken"
		}
	}
	if strings.HasPrefix(n.contentType, "text/") || n.contentType == "" {
		label := originalCharset(p.Header)
		if enmimeCharset(label) == "utf-8" {
			var note string
			n.text, note = decodeText(label, p.Content)
			if note != "" {
				m.warnf("part %s: %s", p.PartID, note)
			}
		} else {
			n.text = strings.ToValidUTF8(string(p.Content), "\uFFFD")
		}
	}
	for c := p.FirstChild; c != nil; c = c.NextSibling {
		n.children = append(n.children, fromEnmime(c, m))
	}
	return n
}

func originalCharset(h textproto.MIMEHeader) string {
	ct := h.Get("Content-Type")
	if ct == "" {
		return ""
	}
	_, params, _, err := mediatype.Parse(ct)
	if err != nil {
		return ""
	}
	return params["charset"]
}

func (m *Message) warnf(format string, args ...any) {
	if len(m.Warnings) < 20 {
		m.Warnings = append(m.Warnings, fmt.Sprintf(format, args...))
	}
}

// fill reads the headers and the body tree into m.
func (m *Message) fill(h textproto.MIMEHeader, tree *node, fromLine string, opts ParseOptions) error {
	cs := originalCharset(h) // raw 8-bit headers are usually in the body's charset
	get := func(name string) string { return decodeHeader(h.Get(name), cs) }

	if ids := messageIDs(h.Get("Message-Id")); len(ids) > 0 {
		m.MessageID = ids[0]
	}
	if ids := messageIDs(h.Get("In-Reply-To")); len(ids) > 0 {
		m.InReplyTo = ids[0]
	}
	m.References = messageIDs(strings.Join(h.Values("References"), " "))
	m.Subject = get("Subject")
	if from := parseAddresses(h.Get("From"), cs); len(from) > 0 {
		m.From = from[0]
	} else if s := parseAddresses(h.Get("Sender"), cs); len(s) > 0 {
		m.From = s[0]
	} else {
		m.warnf("no sender address in From %q", clip(get("From"), 80))
	}
	if m.From.Name == "" {
		m.From.Name = exchangeName(get("X-From"))
	}
	m.ReplyTo = parseAddresses(h.Get("Reply-To"), cs)
	m.To = parseAddresses(strings.Join(h.Values("To"), ", "), cs)
	m.Cc = parseAddresses(strings.Join(h.Values("Cc"), ", "), cs)
	m.Bcc = parseAddresses(strings.Join(h.Values("Bcc"), ", "), cs)
	m.ListID = get("List-Id")
	m.ListUnsubscribe = get("List-Unsubscribe")
	m.Precedence = strings.ToLower(get("Precedence"))
	m.AutoSubmitted = strings.ToLower(get("Auto-Submitted"))
	m.Labels = splitLabels(get("X-Gmail-Labels"))
	if thrid := strings.TrimSpace(h.Get("X-Gm-Thrid")); thrid != "" {
		if v, err := strconv.ParseUint(thrid, 10, 64); err == nil {
			m.GmailThreadID = strconv.FormatUint(v, 16)
		}
	}

	if err := m.fillDate(h, fromLine, opts.DateFallback); err != nil {
		return err
	}

	m.Text, m.HTML = bodyText(tree)
	m.Attachments = attachments(tree)
	if isForward(m.Subject, m.Text) {
		m.Body = m.Text
	} else {
		m.Body, m.Quoted = SplitReply(m.Text)
	}
	return nil
}

// dosEpoch is the placeholder date of mail converted without one (Enron).
var dosEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// fillDate applies the fallback order: a plausible Date header, the newest
// Received header, the mbox From line, the caller's fallback. A Date more
// than two days after or a year before the newest Received date is a
// sender's wrong clock and loses to Received.
func (m *Message) fillDate(h textproto.MIMEHeader, fromLine string, fallback func() (time.Time, string, bool)) error {
	var received time.Time
	for _, r := range h.Values("Received") {
		if t, ok := receivedDate(r); ok {
			received = t
			break
		}
	}
	rawDate := strings.TrimSpace(h.Get("Date"))
	var problem string
	switch t, ok := parseDate(rawDate); {
	case rawDate == "":
		problem = "no Date header"
	case !ok:
		problem = fmt.Sprintf("unreadable Date header %q", clip(rawDate, 60))
	case t.Unix() == 0 || t.Equal(dosEpoch):
		problem = fmt.Sprintf("Date header %q is an epoch, a converter's placeholder", clip(rawDate, 60))
	case !plausible(t):
		problem = fmt.Sprintf("implausible Date header %q", clip(rawDate, 60))
	case !received.IsZero() && t.Sub(received) > 48*time.Hour:
		problem = fmt.Sprintf("Date header %q is later than its delivery", clip(rawDate, 60))
	case !received.IsZero() && received.Sub(t) > 365*24*time.Hour:
		problem = fmt.Sprintf("Date header %q is over a year before its delivery", clip(rawDate, 60))
	default:
		m.Date, m.DateSource = t, "date"
		return nil
	}
	if !received.IsZero() {
		m.Date, m.DateSource = received, "received"
		m.warnf("%s: used the Received date", problem)
		return nil
	}
	if t, ok := mboxFromDate(fromLine); ok {
		m.Date, m.DateSource = t, "mbox"
		m.warnf("%s: used the mbox From line's date", problem)
		return nil
	}
	if fallback != nil {
		if t, from, ok := fallback(); ok && plausible(t) {
			m.Date, m.DateSource = t, "fallback"
			m.DateUncertain = fmt.Sprintf("%s and no Received or mbox date; dated by %s", problem, from)
			m.warnf("%s", m.DateUncertain)
			return nil
		}
	}
	return fmt.Errorf("mailparse: no usable date: %s, and neither a Received header nor an mbox From line has one", problem)
}

// exchangeName reads the display name of an Enron-style X-From header
// ("Carson, Mike </O=ENRON/OU=NA/CN=RECIPIENTS/CN=MCARSON2>" or "Phillip K
// Allen"), which carries the name the From header lacks.
func exchangeName(xfrom string) string {
	name, _, _ := strings.Cut(xfrom, "<")
	name = strings.Trim(strings.TrimSpace(name), `"' `)
	if name == "" || strings.Contains(name, "@") {
		return ""
	}
	return name
}

// splitLabels splits Takeout's X-Gmail-Labels (comma-separated, labels
// with commas quoted).
func splitLabels(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, l := range splitAddressList(s) {
		if l = strings.Trim(strings.TrimSpace(l), `"`); l != "" && !strings.HasPrefix(l, ";") {
			out = append(out, l)
		}
	}
	return out
}

// bodyText picks the readable text of a part tree: in a
// multipart/alternative the plain part unless it is empty, else the HTML
// rendered as text; in other multiparts the text of each inline part in
// order. html reports whether any of the text came from HTML.
func bodyText(n *node) (text string, html bool) {
	switch {
	case strings.HasPrefix(n.contentType, "multipart/alternative"):
		var best *node
		for _, c := range n.children {
			if c.isAttachment() {
				continue
			}
			if t, _ := bodyText(c); strings.TrimSpace(t) == "" {
				continue
			}
			if best == nil || rank(c) > rank(best) {
				best = c
			}
		}
		if best == nil {
			return "", false
		}
		return bodyText(best)
	case strings.HasPrefix(n.contentType, "multipart/"):
		var parts []string
		for _, c := range n.children {
			if c.isAttachment() {
				continue
			}
			t, h := bodyText(c)
			if t = strings.TrimSpace(t); t != "" {
				parts = append(parts, t)
				html = html || h
			}
		}
		return strings.Join(parts, "\n\n"), html
	case n.contentType == "text/html":
		return HTMLToText(n.text), true
	case n.contentType == "text/plain" || n.contentType == "text/enriched" || n.contentType == "text" || n.contentType == "":
		return tidyPlain(n.text), false
	}
	return "", false
}

// rank orders the alternatives: plain text over HTML over anything else.
func rank(n *node) int {
	switch {
	case n.contentType == "text/plain":
		return 3
	case n.contentType == "text/html":
		return 2
	case strings.HasPrefix(n.contentType, "multipart/"):
		return 1
	}
	return 0
}

// isAttachment: marked so, named and not marked inline, or not text.
func (n *node) isAttachment() bool {
	switch {
	case strings.HasPrefix(n.contentType, "multipart/"):
		return false
	case n.disposition == "attachment":
		return true
	case n.filename != "" && n.disposition != "inline":
		return true
	}
	return !strings.HasPrefix(n.contentType, "text/") && n.contentType != ""
}

// attachments lists the leaves that are not body text: parts marked as
// attachments, named parts, and non-text parts.
func attachments(n *node) []Attachment {
	var out []Attachment
	var walk func(n *node)
	walk = func(n *node) {
		if strings.HasPrefix(n.contentType, "multipart/") {
			for _, c := range n.children {
				walk(c)
			}
			return
		}
		if n.isAttachment() {
			out = append(out, Attachment{Filename: n.filename, ContentType: n.contentType, Size: n.size})
		}
	}
	walk(n)
	return out
}

// tidyPlain normalises line ends and trims trailing blanks of plain text.
func tidyPlain(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return tidyText(s)
}
