package mailparse

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gogs/chardet"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// charsetAliases maps labels seen in real mail that neither the WHATWG nor
// the IANA tables know to the encoding their senders meant.
var charsetAliases = map[string]encoding.Encoding{
	"gb2312_charset": simplifiedchinese.GBK,
	"chinesebig5":    traditionalchinese.Big5,
	"x-gbk":          simplifiedchinese.GBK,
	"cp936":          simplifiedchinese.GBK,
	"ms936":          simplifiedchinese.GBK,
	"x-euc-cn":       simplifiedchinese.GBK,
	"cp1252":         charmap.Windows1252,
	"x-mac-roman":    charmap.Macintosh,
	"macintosh":      charmap.Macintosh,
	"cp850":          charmap.CodePage850,
	"ibm850":         charmap.CodePage850,
	"cp437":          charmap.CodePage437,
	"ibm437":         charmap.CodePage437,
	"unicode":        unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), // Microsoft's name for UTF-16LE
	"ucs-2":          unicode.UTF16(unicode.LittleEndian, unicode.UseBOM),
}

// asciiLabels are labels that promise 7-bit text. Mail under them that has
// 8-bit bytes is UTF-8 when it is valid UTF-8 and Windows-1252 otherwise,
// which is what the sending software almost always meant.
var asciiLabels = map[string]bool{
	"us-ascii": true, "ascii": true, "ansi_x3.4-1968": true, "iso646-us": true,
	"us": true, "646": true, "default": true, "default_charset": true,
	"unknown-8bit": true, "x-unknown": true, "unknown": true, "x-user-defined": true,
	"utf-8": true, "utf8": true, "unicode-1-1-utf-8": true, "": true,
}

// normalizeLabel cleans a charset parameter: quotes, spaces, a repeated
// "charset=" prefix and the quoted-printable residue "3d" of a mangled header.
func normalizeLabel(label string) string {
	l := strings.ToLower(strings.TrimSpace(label))
	l = strings.Trim(l, `"' ;`)
	if _, after, ok := strings.Cut(l, "charset="); ok {
		l = strings.Trim(after, `"' ;`)
	}
	return l
}

// lookupCharset finds the decoder for a label; nil when unknown. UTF-8 and
// the ASCII family return nil too: their bytes are checked, not converted.
func lookupCharset(label string) (encoding.Encoding, bool) {
	l := normalizeLabel(label)
	if asciiLabels[l] {
		return nil, true
	}
	if e, ok := charsetAliases[l]; ok {
		return e, true
	}
	if e, _ := charset.Lookup(l); e != nil {
		return e, true
	}
	if e, err := ianaindex.IANA.Encoding(l); err == nil && e != nil {
		return e, true
	}
	return nil, false
}

// enmimeCharset rewrites a charset label for enmime so that it either
// decodes it correctly or leaves the bytes alone for decodeText: the ASCII
// family and unknown labels become utf-8 (no conversion), labels enmime
// lacks become a name it has.
func enmimeCharset(label string) string {
	l := normalizeLabel(label)
	if asciiLabels[l] {
		return "utf-8"
	}
	switch l {
	case "gb2312_charset", "x-euc-cn", "ms936":
		return "gbk"
	case "chinesebig5":
		return "big5"
	}
	if e, _ := charset.Lookup(l); e != nil {
		return l
	}
	// Unknown to enmime's WHATWG-derived table: pass the bytes through
	// untouched and let decodeText use the wider tables.
	return "utf-8"
}

// decodeText converts b from the labelled charset to valid UTF-8. It never
// fails: bytes that do not decode are replaced, and a note says why.
func decodeText(label string, b []byte) (string, string) {
	enc, known := lookupCharset(label)
	if enc != nil {
		out, err := io.ReadAll(transform.NewReader(bytes.NewReader(b), enc.NewDecoder()))
		if err == nil && utf8.Valid(out) {
			return string(out), ""
		}
	}
	if utf8.Valid(b) {
		return string(b), ""
	}
	if normalizeLabel(label) == "" && len(b) >= 64 {
		// No label at all: guess, trusting only a confident guess.
		if r, err := chardet.NewTextDetector().DetectBest(b); err == nil && r.Confidence >= 80 {
			if enc, _ := lookupCharset(r.Charset); enc != nil {
				if out, err := enc.NewDecoder().Bytes(b); err == nil && utf8.Valid(out) {
					return string(out), ""
				}
			}
		}
	}
	note := ""
	if !known {
		note = "unknown charset " + quote(label) + ": decoded as windows-1252"
	} else if enc != nil {
		note = "text is not valid " + normalizeLabel(label) + ": decoded as windows-1252"
	}
	out, err := charmap.Windows1252.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD"), note
	}
	return string(out), note
}

func quote(s string) string { return `"` + s + `"` }
