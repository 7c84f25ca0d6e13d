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
}

// Content records untrusted texts the run read from one source; an
// address keeps the first source it was seen in.
func (p *Provenance) Content(src Source, texts ...string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, text := range texts {
		eachAddress(text, func(a string) {
			if _, seen := p.content[a]; !seen {
				p.content[a] = src
			}
		})
	}
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
		domain := strings.TrimRight(text[at+1:end], ".-")
		if local != "" && domain != "" {
			fn(strings.ToLower(local + "@" + domain))
		}
		i = max(end, at+1)
	}
}

func localRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Cf, r) || strings.ContainsRune(".!#$%&'*+/=?^_`{|}~-", r)
}

func domainRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Cf, r) || r == '.' || r == '-'
}
