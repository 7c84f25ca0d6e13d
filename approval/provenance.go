package approval

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Provenance records, for one agent run, where the addresses it could put
// into a proposal came from: the owner's own words (the request), or
// untrusted content the run read — a mail, an event, a file, a tool's
// result — and which. The agent feeds it as results arrive; the gate reads
// it when the run proposes, to warn about recipients that only content
// named. A nil *Provenance records nothing. It is safe for concurrent use.
type Provenance struct {
	mu      sync.Mutex
	request map[string]bool
	content map[string]Source
	said    string       // the owner's words, folded (see fold)
	texts   []sourceText // untrusted texts in the order read
}

// sourceText is one untrusted text, folded when first compared: most
// runs propose nothing, so reading a result costs no folding.
type sourceText struct {
	src    Source
	text   string
	folded bool
}

// Source names untrusted content a run read.
type Source struct {
	Tool   string // the tool whose result carried it; "" for what came with the task
	ItemID int64  // the stored item, if it was one
	Title  string // the item's title
}

func (s Source) String() string {
	var b strings.Builder
	switch {
	case s.ItemID != 0 && s.Title != "":
		b.WriteString("“" + s.Title + "” (item " + strconv.FormatInt(s.ItemID, 10) + ")")
	case s.ItemID != 0:
		b.WriteString("item " + strconv.FormatInt(s.ItemID, 10))
	case s.Title != "":
		b.WriteString(s.Title)
	default:
		b.WriteString("data the run read")
	}
	if s.Tool != "" {
		b.WriteString(", from " + s.Tool)
	}
	return b.String()
}

// NewProvenance returns an empty record.
func NewProvenance() *Provenance {
	return &Provenance{request: map[string]bool{}, content: map[string]Source{}}
}

// Request records the owner's own words: addresses in them are named by
// the owner.
func (p *Provenance) Request(text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	eachAddress(text, func(a string) { p.request[a] = true })
	p.said += fold(text) + "\n"
}

// Content records untrusted texts the run read from one source: the
// addresses in them, each with the first source it was seen in, and the
// texts themselves, so that text they dictate to a proposal is known.
func (p *Provenance) Content(src Source, texts ...string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addresses(src, texts)
	for _, text := range texts {
		if text != "" {
			p.texts = append(p.texts, sourceText{src: src, text: text})
		}
	}
}

// Echo records text the model wrote that may repeat untrusted content (an
// earlier answer): its addresses count as content's; its words do not,
// since a draft the model wrote earlier is no text dictated by a mail.
func (p *Provenance) Echo(src Source, texts ...string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addresses(src, texts)
}

func (p *Provenance) addresses(src Source, texts []string) {
	for _, text := range texts {
		eachAddress(text, func(a string) {
			if _, seen := p.content[a]; !seen {
				p.content[a] = src
			}
		})
	}
}

// copied reports the untrusted content that holds phrase word for word
// (folded), unless the owner's words hold it too.
func (p *Provenance) copied(phrase string) (Source, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := fold(phrase)
	if f == "" || strings.Contains(p.said, f) {
		return Source{}, false
	}
	for i := range p.texts {
		t := &p.texts[i]
		if !t.folded {
			t.text, t.folded = fold(t.text), true
		}
		if strings.Contains(t.text, f) {
			return t.src, true
		}
	}
	return Source{}, false
}

// fold is text as compared for copying: lower case, each run of white
// space one space, without the quotes a text puts around what it dictates.
// It is one pass: every tool result goes through it.
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		var r rune
		if c < utf8.RuneSelf { // most text: a byte at a time
			i++
			switch {
			case c == ' ' || '\t' <= c && c <= '\r':
				space = b.Len() > 0
				continue
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			}
			r = rune(c)
		} else {
			var n int
			r, n = utf8.DecodeRuneInString(s[i:])
			i += n
			if unicode.IsSpace(r) {
				space = b.Len() > 0
				continue
			}
			r = unicode.ToLower(r)
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), "'\"‘’“”`")
}

// named reports whether the owner's request named addr (lower-case).
func (p *Provenance) named(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.request[addr]
}

// source returns the untrusted content addr (lower-case) appeared in.
func (p *Provenance) source(addr string) (Source, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.content[addr]
	return s, ok
}

// eachAddress calls fn with every address-like token in text, lower-cased:
// a run of address characters around an "@". Letters of any script and
// invisible characters count as address characters, so a look-alike or
// disguised address is recorded as it is written, not cut short.
func eachAddress(text string, fn func(string)) {
	for i := 0; i < len(text); {
		at := strings.IndexByte(text[i:], '@')
		if at < 0 {
			return
		}
		at += i
		start := at
		for start > 0 {
			r, n := utf8.DecodeLastRuneInString(text[:start])
			if !localRune(r) {
				break
			}
			start -= n
		}
		end := at + 1
		for end < len(text) {
			r, n := utf8.DecodeRuneInString(text[end:])
			if !domainRune(r) {
				break
			}
			end += n
		}
		local := strings.Trim(text[start:at], ".")
		domain := strings.ToLower(strings.TrimRight(text[at+1:end], ".-"))
		if local != "" && domain != "" {
			fn(strings.ToLower(local) + "@" + domain)
			// Quoted ('a@b'), in a URL (?to=a@b, mailto/a@b) or a template
			// ({a@b}): the address inside counts too, or a quote would
			// hide where an address came from.
			if k := strings.LastIndexAny(local, quoting); k >= 0 {
				if inner := strings.Trim(local[k+1:], "."); inner != "" {
					fn(strings.ToLower(inner) + "@" + domain)
				}
			}
		}
		i = max(end, at+1)
	}
}

// quoting are the address characters that, in running text, quote or
// introduce an address rather than belong to it.
const quoting = "'`=/|{}"

func localRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Cf, r) || strings.ContainsRune(".!#$%&'*+/=?^_`{|}~-", r)
}

func domainRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Cf, r) || r == '.' || r == '-'
}
