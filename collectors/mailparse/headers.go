package mailparse

import (
	"encoding/base64"
	"encoding/hex"
	"io"
	"mime"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/transform"
)

// encodedWord matches one RFC 2047 encoded word. The charset may carry an
// RFC 2231 language suffix (=?iso-8859-1*en?q?…?=).
var encodedWord = regexp.MustCompile(`=\?([^?\s]+)\?([bBqQ])\?([^?]*)\?=`)

// decodeHeader turns a raw header value into readable UTF-8: encoded words
// are decoded whatever their charset, whitespace between adjacent encoded
// words is dropped (RFC 2047 §6.2), raw 8-bit bytes are read in fallback
// (the message's body charset) and line folding is undone.
func decodeHeader(raw, fallback string) string {
	v := unfold(raw)
	if !utf8.ValidString(v) {
		v, _ = decodeText(fallback, []byte(v))
	}
	if !strings.Contains(v, "=?") {
		return strings.TrimSpace(v)
	}
	var b strings.Builder
	last := 0
	prevEncoded := false
	for _, m := range encodedWord.FindAllStringSubmatchIndex(v, -1) {
		between := v[last:m[0]]
		if !(prevEncoded && strings.TrimSpace(between) == "") {
			b.WriteString(between)
		}
		word, ok := decodeWord(v[m[2]:m[3]], v[m[4]:m[5]], v[m[6]:m[7]])
		if ok {
			b.WriteString(word)
		} else {
			b.WriteString(v[m[0]:m[1]])
		}
		prevEncoded = ok
		last = m[1]
	}
	b.WriteString(v[last:])
	return strings.TrimSpace(b.String())
}

// decodeWord decodes the text of one encoded word.
func decodeWord(cs, enc, text string) (string, bool) {
	cs, _, _ = strings.Cut(cs, "*")
	var raw []byte
	switch enc {
	case "B", "b":
		t := strings.TrimRight(text, "=")
		var err error
		raw, err = base64.RawStdEncoding.DecodeString(t)
		if err != nil {
			// Some senders use the URL alphabet or stray characters.
			if raw, err = base64.RawURLEncoding.DecodeString(t); err != nil {
				return "", false
			}
		}
	default:
		raw = make([]byte, 0, len(text))
		for i := 0; i < len(text); i++ {
			c := text[i]
			switch {
			case c == '_':
				raw = append(raw, ' ')
			case c == '=' && i+2 < len(text):
				if h, err := hex.DecodeString(text[i+1 : i+3]); err == nil {
					raw = append(raw, h[0])
					i += 2
				} else {
					raw = append(raw, c)
				}
			default:
				raw = append(raw, c)
			}
		}
	}
	s, _ := decodeText(cs, raw)
	return s, true
}

func unfold(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n\t", " ")
	s = strings.ReplaceAll(s, "\n ", " ")
	return strings.ReplaceAll(s, "\n", " ")
}

// Address is one mailbox: a display name and a lower-cased address.
type Address struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email"`
}

func (a Address) String() string {
	if a.Name == "" {
		return a.Email
	}
	return a.Name + " <" + a.Email + ">"
}

var addressParser = mail.AddressParser{WordDecoder: &mime.WordDecoder{CharsetReader: charsetReader}}

func charsetReader(label string, r io.Reader) (io.Reader, error) {
	enc, _ := lookupCharset(label)
	if enc == nil {
		return r, nil // UTF-8, ASCII or unknown: decodeHeader cleans up later
	}
	return transform.NewReader(r, enc.NewDecoder()), nil
}

// parseAddresses reads an address list. It tries the RFC 5322 grammar
// first and falls back to a lenient reading for the broken lists real mail
// carries (unquoted commas in names, Exchange X.400 paths, stray quotes).
// Entries without an address are dropped.
func parseAddresses(raw, fallback string) []Address {
	raw = strings.TrimSpace(unfold(raw))
	if raw == "" {
		return nil
	}
	if list, err := addressParser.ParseList(raw); err == nil {
		out := make([]Address, 0, len(list))
		for _, a := range list {
			out = appendAddress(out, decodeHeader(a.Name, fallback), a.Address)
		}
		return out
	}
	var out []Address
	for _, part := range splitAddressList(raw) {
		name, addr := lenientAddress(part)
		out = appendAddress(out, decodeHeader(name, fallback), addr)
	}
	return out
}

func appendAddress(out []Address, name, addr string) []Address {
	addr = strings.ToLower(strings.Trim(strings.TrimSpace(addr), `"'<>`))
	if !strings.Contains(addr, "@") || strings.ContainsAny(addr, " \t") {
		return out
	}
	name = strings.TrimSpace(strings.Trim(strings.TrimSpace(name), `"'`))
	if strings.EqualFold(name, addr) {
		name = ""
	}
	for _, a := range out {
		if a.Email == addr {
			return out
		}
	}
	return append(out, Address{Name: name, Email: addr})
}

// splitAddressList splits on commas and semicolons outside quotes, angle
// brackets and comments.
func splitAddressList(s string) []string {
	var parts []string
	depthAngle, depthParen, inQuote := 0, 0, false
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '<':
			depthAngle++
		case c == '>' && depthAngle > 0:
			depthAngle--
		case c == '(':
			depthParen++
		case c == ')' && depthParen > 0:
			depthParen--
		case (c == ',' || c == ';') && depthAngle == 0 && depthParen == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

var bareAddress = regexp.MustCompile(`[^\s<>"'(),;:]+@[^\s<>"'(),;:]+`)

// lenientAddress extracts the name and address of one list entry.
func lenientAddress(s string) (name, addr string) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "<"); i >= 0 {
		if j := strings.Index(s[i:], ">"); j > 0 {
			addr = s[i+1 : i+j]
			name = s[:i]
			if !strings.Contains(addr, "@") {
				addr = "" // an Exchange path like </O=ENRON/OU=NA/CN=…>
			}
			return name, addr
		}
	}
	if m := bareAddress.FindStringIndex(s); m != nil {
		addr = s[m[0]:m[1]]
		name = strings.TrimSpace(s[:m[0]] + s[m[1]:])
		name = strings.Trim(name, "()")
		return name, addr
	}
	return s, ""
}

// messageIDs extracts the ids of a Message-ID, In-Reply-To or References
// header, without angle brackets.
func messageIDs(raw string) []string {
	raw = unfold(raw)
	var ids []string
	for {
		i := strings.Index(raw, "<")
		if i < 0 {
			break
		}
		j := strings.Index(raw[i:], ">")
		if j < 0 {
			break
		}
		if id := strings.TrimSpace(raw[i+1 : i+j]); id != "" && !strings.ContainsAny(id, " \t") {
			ids = append(ids, id)
		}
		raw = raw[i+j+1:]
	}
	if len(ids) == 0 {
		// Some mailers omit the brackets.
		if f := strings.Fields(raw); len(f) == 1 && strings.Contains(f[0], "@") {
			ids = append(ids, strings.Trim(f[0], "<>"))
		}
	}
	return ids
}
