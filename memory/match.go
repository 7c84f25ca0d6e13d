package memory

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

// terms is what the matching rules see of a fact's text.
type terms struct {
	all    map[string]bool // stems of the content words
	topic  map[string]bool // all, less values and change cues: what the fact is about
	values map[string]bool // numbers, dates, times, proper names: what it says about it
	key    map[string]bool // stems before the first "is/are/was": "favorite dance style"
	timed  bool            // it names a day, date or time
	change cue
}

// cue is a word that says a fact replaces an earlier one.
type cue int

const (
	noCue     cue = iota
	moveCue       // moved, rescheduled: a new place or time
	changeCue     // now, no longer, switched, …
)

var (
	timeWords = set(`monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun
january february march april may june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec
today tomorrow tonight yesterday weekend morning afternoon evening noon midnight am pm week month year next last`)
	numberWords = set(`one two three four five six seven eight nine ten eleven twelve first second third`)
	moveWords   = set(`moved move moving relocated relocating rescheduled postponed delayed pushed`)
	changeWords = set(`now longer anymore instead changed changing switched switching became become quit left stopped new newly actually updated replaced no already again`)
	// ownerWords name the owner, not what a fact is about.
	ownerWords = set(`owner owners user`)
	// attributeWords make a one-word key specific enough to have one value.
	attributeWords = set(`favorite favourite name birthday address phone number email password age job title role employer salary anniversary doctor dentist school office home hometown nickname size`)
	copulas        = set(`is are was were`)
)

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

var digitsRe = regexp.MustCompile(`\d`)

// analyse splits text into the terms the rules compare.
func analyse(text string) terms {
	t := terms{all: map[string]bool{}, topic: map[string]bool{}, values: map[string]bool{}, key: map[string]bool{}}
	proper := properNames(text)
	words := tokenize.Words(text)
	inKey := true
	for i, w := range words {
		if inKey && copulas[w] && i > 0 {
			inKey = false
		}
		switch {
		case moveWords[w]:
			t.change = moveCue
		case changeWords[w] && t.change == noCue:
			t.change = changeCue
		}
		if tokenize.StopWord(w) && !timeWords[w] && !numberWords[w] && !digitsRe.MatchString(w) {
			continue
		}
		if ownerWords[w] {
			continue
		}
		s := tokenize.Stem(w)
		t.all[s] = true
		switch {
		case timeWords[w]:
			t.values[s] = true
			t.timed = true
		case numberWords[w]:
			t.values[s] = true
		case digitsRe.MatchString(w):
			t.values[s] = true
			t.timed = t.timed || len(w) <= 4
		case proper[w]:
			t.values[s] = true
		case moveWords[w] || changeWords[w]:
		default:
			t.topic[s] = true
			if inKey {
				t.key[s] = true
			}
		}
	}
	if inKey { // no copula: no key
		t.key = map[string]bool{}
	}
	return t
}

// properNames are the lower-cased words written with a capital inside
// the text (not its first word): names of people, places, companies.
func properNames(text string) map[string]bool {
	out := map[string]bool{}
	fields := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	for i, f := range fields {
		if i == 0 {
			continue
		}
		r := []rune(f)
		if unicode.IsUpper(r[0]) && strings.ToLower(f) != "i" {
			for _, w := range tokenize.Words(f) {
				out[w] = true
			}
		}
	}
	return out
}

func intersect(a, b map[string]bool) int {
	n := 0
	for k := range a {
		if b[k] {
			n++
		}
	}
	return n
}

func equalSets(a, b map[string]bool) bool {
	return len(a) == len(b) && intersect(a, b) == len(a)
}

// jaccard is |a∩b| / |a∪b|.
func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	n := intersect(a, b)
	return float64(n) / float64(len(a)+len(b)-n)
}

// overlap is |a∩b| / min(|a|,|b|).
func overlap(a, b map[string]bool) float64 {
	m := min(len(a), len(b))
	if m == 0 {
		return 0
	}
	return float64(intersect(a, b)) / float64(m)
}

// relation is how a new fact stands to an old one.
type relation int

const (
	unrelated  relation = iota
	duplicate           // says the same (or the old one says more): keep the old
	refines             // says the same and more: the old one takes the new text
	supersedes          // a newer fact about the same thing
)

// relate decides how new stands to old. The rules are deliberately
// narrow: two facts that can both be true (a dog named Luna, a cat named
// Oliver) must stay two facts.
func relate(old, new terms) relation {
	if len(old.all) == 0 || len(new.all) == 0 {
		return unrelated
	}
	j := jaccard(old.all, new.all)
	n := intersect(old.all, new.all)
	switch {
	case j >= 0.75:
		if len(new.all) > len(old.all) {
			return refines
		}
		return duplicate
	case j >= 0.5 && n == len(old.all) && new.change == noCue:
		return refines // everything the old fact said, and more
	case j >= 0.5 && n == len(new.all):
		return duplicate
	}
	// The same frame with another value: "the play is on Friday" → "…
	// on Saturday", "my son is 7" → "… 8".
	if len(old.topic) > 0 && equalSets(old.topic, new.topic) && len(old.values) > 0 && len(new.values) > 0 && !equalSets(old.values, new.values) {
		return supersedes
	}
	// The same key with another value: "my favorite dance style is …".
	if len(old.key) > 0 && equalSets(old.key, new.key) && (len(old.key) >= 2 || hasAttribute(old.key)) {
		return supersedes
	}
	// A change word ("now", "moved", "no longer") and enough in common.
	shared := intersect(old.all, new.all)
	if (intersect(old.topic, new.topic) == 0 && intersect(old.values, new.values) < 2) || overlap(old.all, new.all) < 0.5 {
		return unrelated
	}
	switch new.change {
	case moveCue: // a new place or time: only for a fact that had one
		if len(old.values) > 0 || old.timed {
			return supersedes
		}
	case changeCue:
		if len(old.values) > 0 || shared >= 2 {
			return supersedes
		}
	}
	return unrelated
}

func hasAttribute(key map[string]bool) bool {
	for k := range key {
		if attributeWords[k] || attributeWords[k+"e"] {
			return true
		}
	}
	return false
}

// score ranks a fact for a query: the share of the query's content stems
// (sorted, so that the float sum and with it the order of near ties is
// the same every run) the fact has, weighted by how rare each is among
// the facts (idf).
func score(q []string, f map[string]bool, idf map[string]float64) float64 {
	s := 0.0
	for _, k := range q {
		if f[k] {
			s += idf[k]
		}
	}
	return s
}
