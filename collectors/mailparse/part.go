package mailparse

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/jhillyerd/enmime/v2/mediatype"
)

// Part is a message given as a decoded part tree, as the Gmail API's
// format=full returns it. From a gmail.MessagePart: MimeType, Filename,
// Headers, Data = the base64url-decoded Body.Data, Size = Body.Size (for
// attachments fetched separately, whose Data is empty), Parts.
type Part struct {
	MimeType string
	Filename string
	Headers  []Header
	Data     []byte // transfer-decoded body, in the charset of its Content-Type
	Size     int64
	Parts    []Part
}

// Header is one header field.
type Header struct {
	Name, Value string
}

// ParsePart parses a message given as a part tree (root holds the message
// headers). It gives the same Message as Parse on the raw form, except that
// Hash covers the tree rather than raw bytes.
func ParsePart(root Part) (m *Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("mailparse: parser failure on malformed input: %v", r)
		}
	}()
	if len(root.Headers) == 0 {
		return nil, errors.New("mailparse: message part has no headers")
	}
	h := sha256.New()
	m = &Message{}
	tree := fromPart(root, m, h, "0")
	m.Hash = hex.EncodeToString(h.Sum(nil))
	if err := m.fill(mimeHeader(root.Headers), tree, "", ParseOptions{}); err != nil {
		return nil, err
	}
	return m, nil
}

func mimeHeader(hs []Header) textproto.MIMEHeader {
	mh := textproto.MIMEHeader{}
	for _, h := range hs {
		mh.Add(textproto.CanonicalMIMEHeaderKey(h.Name), h.Value)
	}
	return mh
}

func fromPart(p Part, m *Message, h hash.Hash, id string) *node {
	hdr := mimeHeader(p.Headers)
	for _, x := range p.Headers {
		fmt.Fprintf(h, "%s:%s\n", x.Name, x.Value)
	}
	h.Write(p.Data)
	ct := strings.ToLower(strings.TrimSpace(p.MimeType))
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = strings.TrimSpace(ct[:i])
	}
	n := &node{contentType: ct, filename: decodeHeader(p.Filename, ""), size: int64(len(p.Data))}
	if n.size == 0 {
		n.size = p.Size
	}
	if d := hdr.Get("Content-Disposition"); d != "" {
		if disp, params, _, err := mediatype.Parse(d); err == nil {
			n.disposition = strings.ToLower(disp)
			if n.filename == "" {
				n.filename = decodeHeader(params["filename"], "")
			}
		}
	}
	if strings.HasPrefix(ct, "text/") || ct == "" {
		label := originalCharset(hdr)
		if utf8.Valid(p.Data) && !isASCII(p.Data) {
			n.text = string(p.Data) // already UTF-8: legacy 8-bit text is almost never valid UTF-8
		} else {
			var note string
			n.text, note = decodeText(label, p.Data)
			if note != "" {
				m.warnf("part %s: %s", id, note)
			}
		}
	}
	for i, c := range p.Parts {
		n.children = append(n.children, fromPart(c, m, h, fmt.Sprintf("%s.%d", id, i+1)))
	}
	return n
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
