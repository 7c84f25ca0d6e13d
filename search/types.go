package search

import (
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// Query is a memory search: natural-language text plus filters.
type Query struct {
	Text    string
	Limit   int       // default 10
	Since   time.Time // inclusive; zero: no bound
	Until   time.Time // exclusive; zero: no bound
	Sources []string  // matches an item's source or kind
	People  []string  // names or addresses that must be involved
	Mode    string    // hybrid (default), fts, vector

	// Location and Now resolve date words in Text ("yesterday", "on Dec
	// 30"); UTC and time.Now when unset. A period named in Text filters
	// like Since and Until.
	Location *time.Location
	Now      time.Time

	// Fallback: when nothing in the period named in Text matches, search
	// all time instead and mark every hit Outside, for callers that show
	// the owner that the period was relaxed. Without it such a search
	// finds nothing, which is the honest answer to "last year" in a
	// mailbox that ends in 2002.
	Fallback bool
}

// Sender is who sent the item, for showing it: "Name <address>" when
// the item's people name the sender just before the address (as mail
// items list them), else the address; "" when nobody sent it.
func Sender(it *store.Item) string {
	if it.Sender == "" {
		return ""
	}
	for i, p := range it.People {
		if i > 0 && strings.EqualFold(p, it.Sender) {
			if name := strings.TrimSpace(it.People[i-1]); name != "" && !strings.Contains(name, "@") {
				return name + " <" + it.Sender + ">"
			}
			break
		}
	}
	return it.Sender
}

// Hit is one search result, best first.
type Hit struct {
	Item    *store.Item
	Score   float64
	Snippet string // with the matched terms marked «like this»
	// Outside is the period the query named when nothing in it matched
	// and the hit comes from another time (only with Fallback).
	Outside *Period
	// ByMeaning says only the vector search found it: the query had
	// words to look for and none of them matched it.
	ByMeaning bool
}
