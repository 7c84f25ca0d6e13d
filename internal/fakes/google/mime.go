package fakegoogle

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file turns raw RFC 822 bytes into Gmail's "full" payload tree. It is
// deliberately lenient, as Gmail is: whatever arrives is stored and served,
// malformed parts become a single leaf.

type header struct{ Name, Value string }

// splitMessage separates the header block (unfolded, in order) from the body.
func splitMessage(raw []byte) ([]header, []byte) {
	var headerBlock, body []byte
	if rest, ok := bytes.CutPrefix(raw, []byte("\n")); ok { // a blank first line: no headers
		return nil, rest
	}
	if rest, ok := bytes.CutPrefix(raw, []byte("\r\n")); ok {
		return nil, rest
	}
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 && (bytes.Index(raw, []byte("\n\n")) < 0 || i < bytes.Index(raw, []byte("\n\n"))) {
		headerBlock, body = raw[:i], raw[i+4:]
	} else if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
		headerBlock, body = raw[:i], raw[i+2:]
	} else {
		headerBlock = raw
	}
	var hs []header
	for _, line := range strings.Split(string(headerBlock), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(hs) > 0 {
			hs[len(hs)-1].Value = strings.TrimSpace(hs[len(hs)-1].Value + " " + strings.TrimSpace(line))
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			continue // not a header line; Gmail drops these too
		}
		hs = append(hs, header{Name: name, Value: strings.TrimSpace(value)})
	}
	return hs, body
}

func headerValue(hs []header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// buildPart builds the payload part for one entity.
func buildPart(hs []header, body []byte, partID string, depth int) *wirePart {
	p := &wirePart{PartID: partID, Headers: make([]wireHeader, 0, len(hs))}
	for _, h := range hs {
		p.Headers = append(p.Headers, wireHeader{Name: h.Name, Value: h.Value})
	}
	mediaType, params, err := mime.ParseMediaType(headerValue(hs, "Content-Type"))
	if err != nil || mediaType == "" {
		mediaType, params = "text/plain", map[string]string{}
	}
	p.MimeType = mediaType
	if strings.HasPrefix(mediaType, "multipart/") && params["boundary"] != "" && depth < 20 {
		parts := splitMultipart(body, params["boundary"])
		if len(parts) > 0 {
			p.Body = &wireBody{}
			for i, raw := range parts {
				childID := strconv.Itoa(i)
				if partID != "" {
					childID = partID + "." + childID
				}
				chs, cbody := splitMessage(raw)
				p.Parts = append(p.Parts, buildPart(chs, cbody, childID, depth+1))
			}
			return p
		}
		p.MimeType = "text/plain" // a multipart without parts: serve it as text
	}
	data := decodeTransfer(headerValue(hs, "Content-Transfer-Encoding"), body)
	p.Filename = filename(hs)
	if p.Filename != "" {
		p.Body = &wireBody{AttachmentID: "att-" + partIDOrRoot(partID), Size: len(data)}
		return p
	}
	p.Body = &wireBody{Data: base64.URLEncoding.EncodeToString(data), Size: len(data)}
	return p
}

func partIDOrRoot(id string) string {
	if id == "" {
		return "root"
	}
	return id
}

func filename(hs []header) string {
	if _, params, err := mime.ParseMediaType(headerValue(hs, "Content-Disposition")); err == nil && params["filename"] != "" {
		return params["filename"]
	}
	if _, params, err := mime.ParseMediaType(headerValue(hs, "Content-Type")); err == nil && params["name"] != "" {
		return params["name"]
	}
	return ""
}

// splitMultipart returns the raw body parts between boundary lines.
func splitMultipart(body []byte, boundary string) [][]byte {
	delim := "--" + boundary
	var parts [][]byte
	var cur *bytes.Buffer
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		trimmed := strings.TrimRight(string(line), "\r\n \t")
		switch {
		case trimmed == delim+"--":
			if cur != nil {
				parts = append(parts, trimPartEnd(cur.Bytes()))
			}
			return parts
		case trimmed == delim:
			if cur != nil {
				parts = append(parts, trimPartEnd(cur.Bytes()))
			}
			cur = &bytes.Buffer{}
		case cur != nil:
			cur.Write(line)
		}
	}
	if cur != nil { // no closing delimiter: keep what there is
		parts = append(parts, trimPartEnd(cur.Bytes()))
	}
	return parts
}

// trimPartEnd drops the line break that belongs to the next delimiter.
func trimPartEnd(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

func decodeTransfer(cte string, body []byte) []byte {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "base64":
		clean := bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, body)
		if out, err := base64.StdEncoding.DecodeString(string(clean)); err == nil {
			return out
		}
		if out, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(string(clean), "=")); err == nil {
			return out
		}
		return body
	case "quoted-printable":
		if out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body))); err == nil {
			return out
		}
		return body
	default:
		return body
	}
}

// snippetOf is the first text of the message, whitespace collapsed, as
// Gmail shows it in lists.
func snippetOf(p *wirePart) string {
	text := firstText(p)
	text = strings.ToValidUTF8(text, "")
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) > 200 {
		r := []rune(text)
		text = string(r[:200])
	}
	return text
}

func firstText(p *wirePart) string {
	if p == nil {
		return ""
	}
	if len(p.Parts) > 0 {
		for _, c := range p.Parts {
			if t := firstText(c); t != "" {
				return t
			}
		}
		return ""
	}
	if p.Body == nil || p.Body.Data == "" || !strings.HasPrefix(p.MimeType, "text/") {
		return ""
	}
	b, err := base64.URLEncoding.DecodeString(p.Body.Data)
	if err != nil {
		return ""
	}
	if p.MimeType == "text/html" {
		return stripTags(string(b))
	}
	return string(b)
}

func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
			b.WriteByte(' ')
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
