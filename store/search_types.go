package store

import "time"

// SearchQuery is a memory search: natural-language text plus filters.
type SearchQuery struct {
	Text    string
	Limit   int       // default 10
	Since   time.Time // inclusive; zero: no bound
	Until   time.Time // exclusive; zero: no bound
	Sources []string  // matches an item's source or kind
	People  []string  // names or addresses that must be involved
	Mode    string    // hybrid (default), fts, vector

	// Location and Now resolve date words in Text ("yesterday", "on Dec
	// 30"); UTC and time.Now when unset.
	Location *time.Location
	Now      time.Time
}

// Hit is one search result, best first.
type Hit struct {
	Item    *Item
	Score   float64
	Snippet string // with the matched terms marked [like this]
}
