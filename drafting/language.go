package drafting

import (
	"strings"
	"unicode"
)

// stopwords are frequent short words that tell the common languages of
// the owner's mail apart.
var stopwords = map[string][]string{
	"English":    {"the", "and", "you", "for", "with", "this", "that", "have", "are", "will", "please", "thanks", "can", "would", "your", "to", "we", "could", "know", "let", "our", "about", "what", "when", "it"},
	"German":     {"der", "die", "das", "und", "ich", "sie", "nicht", "mit", "ist", "für", "wir", "bitte", "danke", "können", "ein"},
	"French":     {"le", "la", "les", "et", "vous", "pour", "avec", "est", "nous", "merci", "une", "des", "pas", "je", "que"},
	"Spanish":    {"el", "los", "las", "y", "usted", "para", "con", "es", "por", "gracias", "una", "que", "del", "pero", "muy"},
	"Italian":    {"il", "gli", "e", "per", "con", "che", "sono", "della", "grazie", "una", "non", "ciao", "questo", "siamo", "ho"},
	"Dutch":      {"de", "het", "en", "ik", "je", "niet", "met", "voor", "dat", "een", "bedankt", "zijn", "wij", "graag", "ook"},
	"Portuguese": {"o", "os", "e", "você", "para", "com", "não", "obrigado", "uma", "que", "do", "da", "em", "muito", "por"},
}

// Language names the language text is most likely written in, or "" when
// the text is too short or too mixed to tell.
func Language(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
	if len(words) > 400 {
		words = words[:400]
	}
	counts := map[string]int{}
	for _, w := range words {
		for lang, list := range stopwords {
			for _, s := range list {
				if w == s {
					counts[lang]++
				}
			}
		}
	}
	best, second := "", 0
	for lang, n := range counts {
		switch {
		case best == "" || n > counts[best] || n == counts[best] && lang < best:
			second = max(second, counts[best])
			best = lang
		case n > second:
			second = n
		}
	}
	if best == "" || counts[best] < 3 || float64(counts[best]) < 1.5*float64(second) {
		return ""
	}
	return best
}
