package approval

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mtibben/confusables"
	"golang.org/x/net/idna"
)

// lookalike says what makes an address or its display name deceptive, or
// "" if nothing does: direction controls or invisible characters anywhere,
// scripts mixed within a domain label, a word of the name or the local
// part, a non-Latin domain whose UTS #39 skeleton is a Latin one, or a
// skeleton equal to that of an address the owner corresponds with while
// the address itself is not one of those.
func lookalike(addr, name string, known correspondents) string {
	for _, s := range []struct{ what, v string }{{"address", addr}, {"name", name}} {
		if r, ok := firstRune(s.v, isBidiControl); ok {
			return fmt.Sprintf("the %s %q holds a hidden direction control (U+%04X) that can reorder what you see", s.what, s.v, r)
		}
		if r, ok := firstRune(s.v, isInvisible); ok {
			return fmt.Sprintf("the %s %q holds an invisible character (U+%04X)", s.what, s.v, r)
		}
	}
	local, domain, _ := strings.Cut(addr, "@")
	if u, err := idna.ToUnicode(domain); err == nil && u != domain {
		domain = u // xn--… is shown to the recipient's mail program as this
	}
	for _, label := range strings.Split(domain, ".") {
		if ss := scriptsOf(label); len(ss) > 1 {
			return fmt.Sprintf("the domain of %s mixes %s letters", addr, strings.Join(ss, " and "))
		}
	}
	if ss := scriptsOf(local); len(ss) > 1 {
		return fmt.Sprintf("the address %s mixes %s letters", addr, strings.Join(ss, " and "))
	}
	for _, word := range strings.Fields(name) {
		if ss := scriptsOf(word); len(ss) > 1 {
			return fmt.Sprintf("the name %q mixes %s letters", name, strings.Join(ss, " and "))
		}
	}
	if !isASCII(domain) {
		if isASCII(skeleton(domain)) {
			return fmt.Sprintf("the domain of %s is written in %s letters that look like Latin ones", addr, strings.Join(scriptsOf(nonASCII(domain)), " and "))
		}
	}
	if k, ok := known.bySkeleton[skeleton(local+"@"+domain)]; ok && !known.has[addr] {
		return fmt.Sprintf("%s looks like %s, whom you correspond with, but is a different address", addr, k)
	}
	return ""
}

// correspondents are the addresses the owner exchanges mail with (and
// their own), lower-case, and their skeletons.
type correspondents struct {
	has        map[string]bool
	bySkeleton map[string]string
}

func newCorrespondents(addrs ...[]string) correspondents {
	c := correspondents{has: map[string]bool{}, bySkeleton: map[string]string{}}
	for _, l := range addrs {
		for _, a := range l {
			a = strings.ToLower(a)
			c.has[a] = true
			c.bySkeleton[skeleton(a)] = a
		}
	}
	return c
}

func skeleton(s string) string { return strings.ToLower(confusables.Skeleton(strings.ToLower(s))) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func nonASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 {
			return -1
		}
		return r
	}, s)
}

func firstRune(s string, is func(rune) bool) (rune, bool) {
	for _, r := range s {
		if is(r) {
			return r, true
		}
	}
	return 0, false
}

// isBidiControl: the explicit direction marks, embeddings, overrides and
// isolates (UAX #9).
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// isInvisible: format characters (zero-width space and joiners, word
// joiner, BOM, soft hyphen, …) and the other default-ignorable fillers.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		r == 0x034F || r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0
}

// scripts that letters are checked against; a letter of any other script
// counts as "other".
var scripts = []struct {
	name  string
	table *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Cherokee", unicode.Cherokee}, {"Georgian", unicode.Georgian},
	{"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew}, {"Han", unicode.Han},
	{"Hiragana", unicode.Hiragana}, {"Katakana", unicode.Katakana}, {"Hangul", unicode.Hangul},
	{"Thai", unicode.Thai}, {"Devanagari", unicode.Devanagari},
}

// scriptsOf lists the scripts of the letters in s (Common and Inherited
// characters — digits, punctuation, marks — belong to none). Japanese
// mixes Han, Hiragana and Katakana, and Korean Han and Hangul, by design
// (UTS #39's highly restrictive level): those count as one.
func scriptsOf(s string) []string {
	var out []string
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		name := "other"
		for _, sc := range scripts {
			if unicode.Is(sc.table, r) {
				name = sc.name
				break
			}
		}
		switch name {
		case "Hiragana", "Katakana", "Hangul":
			name = "Han"
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
