package memory

import (
	"strings"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

var (
	recentPhrases   = []string{"this week", "today", "tonight", "currently", "right now", "these days", "at the moment", "this weekend", "for now", "lately", "this month"}
	preferenceWords = set(`like likes love loves loved hate hates prefer prefers preferred favorite favourite favorites enjoy enjoys dislike dislikes allergic vegetarian vegan rather always never`)
	eventWords      = set(`appointment meeting birthday anniversary trip flight concert party wedding deadline recital game match exam interview visit vacation holiday conference show play next tomorrow`)
	familyWords     = set(`wife husband partner spouse son sons daughter daughters kid kids child children mother mom mum father dad parents sister sisters brother brothers grandma grandmother grandfather grandpa grandparents aunt uncle cousin niece nephew family baby fiance fiancee girlfriend boyfriend dog cat pet`)
)

// Categorize files a fact by simple rules, for facts stored without a
// model: recent context ("this week"), preferences ("I prefer …"),
// events (a day, a date, an appointment), family (relatives, pets),
// notes for the rest.
func Categorize(text string) Category {
	lower := " " + strings.ToLower(text) + " "
	for _, p := range recentPhrases {
		if strings.Contains(lower, " "+p+" ") || strings.Contains(lower, " "+p+",") || strings.Contains(lower, " "+p+".") {
			return RecentContext
		}
	}
	words := tokenize.Words(text)
	has := func(m map[string]bool) bool {
		for _, w := range words {
			if m[w] {
				return true
			}
		}
		return false
	}
	t := analyse(text)
	switch {
	case has(preferenceWords):
		return Preferences
	case t.timed || has(eventWords):
		return Events
	case has(familyWords):
		return Family
	}
	return Notes
}
