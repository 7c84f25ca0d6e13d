// Package search finds what the owner has stored: keywords from the
// store's full-text index, meaning from item vectors persisted in the store
// and held in memory, fused into one ranking, with natural-language dates,
// person and source filters, and snippets.
package search

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/internal/tokenize"
	"github.com/omnibrain/omnibrain/store"
)

// Search modes.
const (
	ModeHybrid = "hybrid"
	ModeFTS    = "fts"
	ModeVector = "vector"
)

// ErrVectorsUnavailable is returned for a vector-only search while the
// vector index is not loaded (or not configured).
var ErrVectorsUnavailable = errors.New("vector search is not available yet (the index is loading or no embedder is configured); use mode fts or hybrid")

// Ranking constants. RRF's k damps the difference between the first few
// ranks; the column weights make a match in a subject count more than one
// in a long body.
const (
	// Both halves read a message with its neighbours in the thread (see
	// ftsSearchContext and mixContext), so they are fused as equals with
	// the k of the RRF paper rather than weights fitted to one benchmark.
	// LoCoMo measures each half and the fusion: TestLoCoMoRecall.
	rrfK       = 60
	bm25Title  = 3.0
	bm25Body   = 1.0
	bm25People = 1.5
	// A query word naming someone involved in the item lifts it a little:
	// enough to order near-equals, not to override the text.
	personBoost   = 0.03
	maxSearchHits = 1000
)

// Searcher searches the store's items. It is safe for concurrent use.
type Searcher struct {
	st    *store.Store
	db    *sql.DB
	vec   *Vectors // nil: keywords only
	log   *slog.Logger
	terms termCache
}

// New returns a searcher over st. With vec, searches are hybrid: full-text
// and vector rankings fused by reciprocal rank, falling back to keywords
// while the index loads; without, fts and hybrid modes use the full-text
// index alone and vector mode is unavailable.
func New(st *store.Store, vec *Vectors, log *slog.Logger) *Searcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Searcher{st: st, db: st.DB(), vec: vec, log: log}
}

// plan is a search after its text has been taken apart.
type plan struct {
	q     Query
	terms []queryTerm
	fts   string // MATCH expression; "" if no words
	// rare (and whole) replace fts when its words are in too many items
	// to score them all (see keywordPlan): every word, then the rarest.
	whole, rare string
	// unspaced are the words in scripts written without spaces, looked
	// up as substrings in the trigram index (unspaced.go).
	unspaced []string
	vecText  string // text for the embedder
	where    string // SQL conditions on items i
	args     []any
	// selected, when a person filter names few items, reads the items
	// that pass once a search (setFilter); nil: the conditions are
	// checked on the hits.
	selected func() (selection, error)
	// via is the FTS5 expression of a person filter naming at most
	// selectRows items, which the plan's SQL starts from ("": none).
	via    string
	people []string // query words that may name people
}

// Search runs q.
func (s *Searcher) Search(ctx context.Context, q Query) ([]Hit, error) {
	v := s.vec
	if q.Limit <= 0 {
		q.Limit = 10
	}
	q.Limit = min(q.Limit, maxSearchHits)
	if q.Location == nil {
		q.Location = time.UTC
	}
	if q.Now.IsZero() {
		q.Now = s.st.Now()
	}
	switch q.Mode {
	case "":
		q.Mode = ModeHybrid
	case ModeHybrid, ModeFTS, ModeVector:
	default:
		return nil, fmt.Errorf("search: unknown mode %q (want hybrid, fts or vector)", q.Mode)
	}
	vectorsOK := v != nil && v.Ready()
	if q.Mode == ModeVector && !vectorsOK {
		return nil, ErrVectorsUnavailable
	}
	if q.Mode == ModeHybrid && !vectorsOK {
		q.Mode = ModeFTS
	}

	text := questionFocus(q.Text)
	dr, rest, hasDate := parseDates(text, q.Now.In(q.Location))
	if hasDate {
		text = rest
	}
	p := plan{q: q, vecText: text}
	p.terms = parseQueryTerms(text)
	var spaced []queryTerm
	for _, t := range p.terms {
		if isUnspacedTerm(t) {
			p.unspaced = append(p.unspaced, strings.Join(t.Words, " "))
		} else {
			spaced = append(spaced, t)
		}
	}
	s.keywordPlan(ctx, &p, spaced)
	for _, t := range p.terms {
		if !t.Phrase && !tokenize.StopWord(t.Words[0]) {
			p.people = append(p.people, t.Words[0])
		}
	}
	if !hasDate {
		s.setFilter(ctx, &p, time.Time{}, time.Time{})
		return s.runSearch(ctx, &p, v)
	}
	s.setFilter(ctx, &p, dr.Since, dr.Until)
	hits, err := s.runSearch(ctx, &p, v)
	if err != nil || !q.Fallback || len(p.terms) == 0 || slices.ContainsFunc(hits, func(h Hit) bool { return !h.ByMeaning }) {
		return hits, err
	}
	// No word matched in the period (it may hold mail found by meaning
	// alone, or nothing): the words may still find what was meant at
	// another time ("the trip last year" may be in this year's mail),
	// marked as from outside the period so the caller says so.
	s.setFilter(ctx, &p, time.Time{}, time.Time{})
	other, err := s.runSearch(ctx, &p, v)
	if err != nil {
		return nil, err
	}
	if len(hits) > 0 && !slices.ContainsFunc(other, func(h Hit) bool { return !h.ByMeaning }) {
		return hits, nil // no better elsewhere: what the period has by meaning
	}
	for i := range other {
		other[i].Outside = &dr
	}
	return other, nil
}

// Words in more than commonShare of all items are left out of the keyword
// half when the query has rarer ones (from commonMinItems items up).
// Above scoreBudget items holding any of the words, the keyword half
// scores those holding every word and those holding the rarest ones;
// above readBudget, only those with the rarest words in a subject or
// among their people (see keywordPlan).
var (
	commonShare    = 0.1
	commonMinItems = int64(10000)
	scoreBudget    = int64(2000)
	readBudget     = int64(100000)
)

// keywordPlan sets the plan's keyword expressions for its spaced terms.
//
// It drops from the keyword search the words that are in more than a
// tenth of all items when the query has rarer ones ("meeting" in a
// mailbox where the query also says "Palo Verde"). BM25 gives them little
// weight, but FTS5 still scores every item they match: at 100k mails that
// was most of a search's time. The vector half still reads every word.
//
// FTS5 scores every item an OR of the words matches, about a microsecond
// each, however few are asked for: a query of three words each in a few
// percent of the items took 60 ms at 100k items and ten times that at a
// million. Reading which items hold a word costs a twentieth of scoring
// them, so above scoreBudget matches the keyword half scores the items
// that hold every word (an AND, which FTS5 reads without scoring the
// rest), and, when they are too few, those that hold the rarest words
// within the budget. BM25 of an item is the sum of its words' scores:
// an item holding every word gets the same score as from the OR.
//
// Even reading is too much when the words are in a tenth of a million
// items each (BM25 reads every match again to count them): above
// readBudget matches, and when the rarest word alone is over the score
// budget, the keyword half takes the items holding the rarest words in a
// subject or among their people, the columns BM25 weighs most, a few
// percent of their matches.
func (s *Searcher) keywordPlan(ctx context.Context, p *plan, terms []queryTerm) {
	p.fts = ftsExpression(terms)
	if len(terms) == 0 {
		return
	}
	type counted struct {
		t  queryTerm
		df int64
	}
	var all []counted
	var n int64
	for _, t := range terms {
		if t.Unfinished {
			// An unfinished-looking last word the index holds as it is
			// was typed to the end: its prefix would read every longer
			// word's matches too (four times the reading for the
			// bench's words at a million).
			if df, total, ok := s.termFreq(ctx, ftsExpression([]queryTerm{{Words: t.Words}})); ok && total >= commonMinItems && df > 0 {
				t.Prefix = false
			}
		}
		df, total, ok := s.termFreq(ctx, ftsExpression([]queryTerm{t}))
		if !ok || total < commonMinItems {
			return // a small store: every item can be scored
		}
		all, n = append(all, counted{t, df}), total
	}
	var kept []counted
	for _, c := range all {
		if float64(c.df) <= commonShare*float64(n) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		kept = all
	}
	var sum int64
	terms = terms[:0:0]
	for _, c := range kept {
		sum += c.df
		terms = append(terms, c.t)
	}
	p.fts = ftsExpression(terms)
	if sum <= scoreBudget {
		return
	}
	if len(kept) >= 2 && sum <= readBudget {
		p.whole = ftsAllExpression(terms)
	}
	slices.SortStableFunc(kept, func(a, b counted) int { return cmp.Compare(a.df, b.df) })
	rare := []queryTerm{kept[0].t}
	for sum, i := kept[0].df, 1; i < len(kept) && sum+kept[i].df <= scoreBudget; i++ {
		sum += kept[i].df
		rare = append(rare, kept[i].t)
	}
	p.rare = ftsExpression(rare)
	if kept[0].df > scoreBudget {
		p.rare = "{title people} : (" + p.rare + ")"
	}
}

// filterSQL builds the conditions on items i for the query's filters and
// an extra period from the text (intersected with Since/Until).
func filterSQL(q Query, since, until time.Time) (string, []any) {
	conds := []string{"1"}
	var args []any
	if !q.Since.IsZero() && (since.IsZero() || q.Since.After(since)) {
		since = q.Since
	}
	if !q.Until.IsZero() && (until.IsZero() || q.Until.Before(until)) {
		until = q.Until
	}
	if !since.IsZero() {
		conds, args = append(conds, "i.time >= ?"), append(args, since.UnixMilli())
	}
	if !until.IsZero() {
		conds, args = append(conds, "i.time < ?"), append(args, until.UnixMilli())
	}
	var sources []any
	for _, src := range q.Sources {
		if src = strings.TrimSpace(src); src != "" {
			sources = append(sources, src)
		}
	}
	if len(sources) > 0 {
		ph := store.Placeholders(len(sources))
		conds = append(conds, "(i.source IN ("+ph+") OR i.kind IN ("+ph+"))")
		args = append(append(args, sources...), sources...)
	}
	for _, person := range filterPeople(q) {
		cond, a := personCondition(person)
		conds, args = append(conds, cond), append(args, a...)
	}
	return strings.Join(conds, " AND "), args
}

// filterPeople returns the query's person filters in lower case, blank
// ones left out.
func filterPeople(q Query) []string {
	var out []string
	for _, person := range q.People {
		if person = strings.ToLower(strings.TrimSpace(person)); person != "" {
			out = append(out, person)
		}
	}
	return out
}

// personCondition is the condition on items i for a person filter (lower
// case). The full-text index's people column answers it, case- and
// accent-insensitive (personExpression). The leading + keeps SQLite from
// driving the query by that list of items: a listing walks the time
// index and stops when its page is full, so a common name costs what it
// did, and a name no item holds costs a walk of the index, not a read of
// every row's people (a million items: 0.12 s, not 1.7 s). An address is
// matched as written, among the items that hold its words.
func personCondition(person string) (string, []any) {
	const indexed = "+i.id IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?)"
	// The people column's JSON text, not its elements: json_each on
	// every row made a filter alone scan 100k items in 0.24 s, instr
	// over the text in 0.07 s, for the same rows.
	const written = "(instr(i.sender, ?) > 0 OR instr(lower(i.people), ?) > 0)"
	if expr := personExpression(person); expr != "" {
		return indexed, []any{expr}
	}
	if expr := addressExpression(person); expr != "" {
		return "(" + indexed + " AND " + written + ")", []any{expr, person, person}
	}
	return written, []any{person, person}
}

// addressExpression is an FTS5 query for the items whose people hold an
// address's words in a row: those among which it is written; "" for
// what is no address.
func addressExpression(person string) string {
	words := tokenize.Words(person)
	if !strings.Contains(person, "@") || len(words) == 0 || tokenize.HasUnspaced(person) {
		return ""
	}
	return `people : "` + strings.Join(words, " ") + `"`
}

// personExpression is an FTS5 query for a person's name among an item's
// people: the words of the name near each other in any order ("Buy, Rick"
// for Rick Buy, "Phillip K Allen" for Phillip Allen, rick.buy@… for
// either), case- and accent-insensitive as the index is. An initial the
// stored name may lack is left out. "" for an address, and for a name in
// a script written without spaces, which the index holds as whole runs
// (a given name inside one is found as written).
func personExpression(name string) string {
	if strings.Contains(name, "@") || tokenize.HasUnspaced(name) {
		return ""
	}
	words := tokenize.Words(name)
	var full []string
	for _, w := range words {
		if len([]rune(w)) > 1 {
			full = append(full, `"`+w+`"`)
		}
	}
	switch len(full) {
	case 0:
		return ""
	case 1:
		return "people : " + full[0]
	default:
		return fmt.Sprintf("people : NEAR(%s, %d)", strings.Join(full, " "), len(full)+1)
	}
}

// candidate is an item on its way to becoming a hit.
type candidate struct {
	id       int64
	score    float64
	ftsRank  int     // 1-based; 0: not found by keywords
	ftsScore float64 // -bm25: higher is better
	vecRank  int     // 1-based; 0: not found by vectors
	vecSim   float64
	// unembedded: a keyword hit whose vector does not exist yet.
	unembedded bool
	item       *store.Item
}

func (s *Searcher) runSearch(ctx context.Context, p *plan, v *Vectors) ([]Hit, error) {
	q := p.q
	depth := max(3*q.Limit, 50)
	cands := map[int64]*candidate{}
	get := func(id int64) *candidate {
		c, ok := cands[id]
		if !ok {
			c = &candidate{id: id}
			cands[id] = c
		}
		return c
	}

	// The vector half's first step (embedding the query and finding its
	// nearest items) does not need the keyword hits: it runs beside the
	// keyword search, on the other core, and the two meet for re-ranking.
	wantVec := q.Mode != ModeFTS && strings.TrimSpace(p.vecText) != ""
	var near chan vecCandidates
	if wantVec {
		near = make(chan vecCandidates, 1)
		go func() { near <- s.vectorCandidates(ctx, p, v, depth) }()
	}

	var ftsIDs []int64
	var ftsErr error
	if p.keywords() && (q.Mode != ModeVector || wantVec) {
		search := s.ftsSearch // keywords alone, as asked
		if q.Mode == ModeHybrid {
			search = s.ftsSearchContext
		}
		var ranked []ftsRow
		if ranked, ftsErr = search(ctx, p, depth); ftsErr == nil {
			for i, r := range ranked {
				ftsIDs = append(ftsIDs, r.id)
				if q.Mode == ModeVector {
					// Only candidates for the vectors to rank: the
					// narrow vectors miss items the exact ones rank high.
					continue
				}
				c := get(r.id)
				c.ftsRank, c.ftsScore = i+1, -r.bm25 // bm25 is lower-is-better
			}
		}
	}
	if wantVec {
		vc := <-near // always received: the goroutine never outlives the search
		var hits []vecHit
		err := vc.err
		if err == nil {
			hits, err = v.rerankCandidates(ctx, vc, ftsIDs, depth, q.Mode == ModeHybrid)
		}
		if err != nil && q.Mode == ModeVector {
			return nil, err
		}
		if err != nil {
			// Hybrid degrades to keywords when the embedder is down.
			s.log.Warn("vector half of search failed; keywords only", "err", err)
		}
		for i, r := range hits {
			if r.sim <= 0 {
				break // nothing in common with the query: no hit, however near
			}
			c := get(r.item)
			c.vecRank, c.vecSim = i+1, float64(r.sim)
		}
	}
	if ftsErr != nil {
		return nil, ftsErr
	}
	if wantVec {
		pruneByMeaning(cands, v, q.Mode)
	}
	if !p.keywords() && strings.TrimSpace(p.vecText) == "" && p.where != "1" {
		// Only filters ("yesterday", a source): what they select, newest first.
		if err := s.newest(ctx, p, depth, get); err != nil {
			return nil, err
		}
	}
	if len(cands) == 0 {
		return []Hit{}, nil
	}
	fuse(q.Mode, cands)

	ordered := make([]*candidate, 0, len(cands))
	for _, c := range cands {
		ordered = append(ordered, c)
	}
	slices.SortFunc(ordered, func(a, b *candidate) int { return cmp.Compare(b.score, a.score) })
	// Enough candidates to survive boosts and duplicates.
	ordered = ordered[:min(len(ordered), 2*q.Limit+20)]
	ids := make([]int64, len(ordered))
	for i, c := range ordered {
		ids[i] = c.id
	}
	items, err := s.st.ItemsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*store.Item, len(items))
	for _, it := range items {
		byID[it.ID] = it
	}
	live := ordered[:0]
	for _, c := range ordered {
		if c.item = byID[c.id]; c.item != nil { // deleted since indexed
			live = append(live, c)
		}
	}
	ordered = live
	if wantVec && p.keywords() && len(ftsIDs) == 0 {
		ordered = keepNearSpellings(ordered, p.terms)
	}

	if ordered, err = s.preferAnswers(ctx, p, ordered); err != nil {
		return nil, err
	}
	if len(p.people) > 0 {
		for _, c := range ordered {
			if n := namesPeople(c.item, p.people); n > 0 {
				if c.score > 0 {
					c.score *= 1 + personBoost*float64(n)
				} else {
					c.score /= 1 + personBoost*float64(n) // bm25 scores are negative
				}
			}
		}
	}
	// Best first; newer first among equals.
	slices.SortStableFunc(ordered, func(a, b *candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := b.item.Time.Compare(a.item.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if q.Mode == ModeHybrid {
		ordered = keepWholeMatchesFirst(ordered, p.terms)
	}

	hits := make([]Hit, 0, q.Limit)
	seen := map[string]bool{}
	for _, c := range ordered {
		key := dedupeKey(c.item)
		if key != "" && seen[key] {
			continue
		}
		seen[key] = true
		hits = append(hits, Hit{Item: c.item, Score: c.score, Snippet: snippet(c.item, p.terms), ByMeaning: q.Mode != ModeVector && p.keywords() && c.ftsRank == 0})
		if len(hits) == q.Limit {
			break
		}
	}
	return hits, nil
}

type ftsRow struct {
	id   int64
	bm25 float64
}

func (s *Searcher) ftsSearch(ctx context.Context, p *plan, n int) ([]ftsRow, error) {
	if len(p.unspaced) > 0 {
		return s.unspacedSearch(ctx, p, n)
	}
	if p.rare == "" {
		return s.ftsRanked(ctx, p, p.fts, n)
	}
	// Too many items hold some word to score them all (keywordPlan):
	// those holding every word, then, if they are too few, those holding
	// the rarest words.
	var out []ftsRow
	if p.whole != "" {
		var err error
		if out, err = s.ftsRanked(ctx, p, p.whole, n); err != nil || len(out) >= n {
			return out, err
		}
	}
	more, err := s.ftsRanked(ctx, p, p.rare, n)
	if err != nil {
		return nil, err
	}
	for _, r := range more {
		if !slices.ContainsFunc(out, func(o ftsRow) bool { return o.id == r.id }) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b ftsRow) int { return cmp.Compare(a.bm25, b.bm25) })
	return out[:min(n, len(out))], nil
}

// ftsRanked returns the best n items the MATCH expression expr finds that
// pass the plan's filters, by BM25.
func (s *Searcher) ftsRanked(ctx context.Context, p *plan, expr string, n int) ([]ftsRow, error) {
	// The index alone, without joining items: looking up the row of every
	// match cost most of a search (20 of 25 ms at 100k mails). Filters are
	// checked on the ranked ids instead, a chunk at a time or against the
	// items selected first, until n pass.
	query := fmt.Sprintf(`SELECT rowid, bm25(items_fts, %g, %g, %g) AS score
		FROM items_fts WHERE items_fts MATCH ? ORDER BY score`, bm25Title, bm25Body, bm25People)
	if p.where == "1" {
		query += " LIMIT " + strconv.Itoa(n)
	}
	var sel *selection // the items selected first, checked as they come
	if p.selected != nil {
		selected, err := p.selected()
		if err != nil {
			return nil, err
		}
		sel = &selected
	}
	rows, err := s.db.QueryContext(ctx, query, expr)
	if err != nil {
		return nil, fmt.Errorf("search: full text: %w", err)
	}
	defer rows.Close()
	var out, chunk []ftsRow
	keep := func() error {
		if len(chunk) == 0 {
			return nil
		}
		ids := make([]int64, len(chunk))
		for i, r := range chunk {
			ids[i] = r.id
		}
		pass, err := s.passing(ctx, p, ids)
		if err != nil {
			return err
		}
		for _, r := range chunk {
			if pass[r.id] && len(out) < n {
				out = append(out, r)
			}
		}
		chunk = chunk[:0]
		return nil
	}
	for rows.Next() && len(out) < n {
		var r ftsRow
		if err := rows.Scan(&r.id, &r.bm25); err != nil {
			return nil, err
		}
		if sel != nil {
			if sel.has(r.id) {
				out = append(out, r)
			}
			continue
		}
		chunk = append(chunk, r)
		if len(chunk) == store.MaxVariables {
			if err := keep(); err != nil {
				return nil, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: full text: %w", err)
	}
	if err := keep(); err != nil {
		return nil, err
	}
	return out, nil
}

// vecCandidates is the first step of the vector half: the query's
// vectors and the items nearest to it.
type vecCandidates struct {
	qv   chunkVec
	hits []vecHit
	err  error // nil with no qv: nothing to embed
}

// vectorCandidates embeds the query and finds the items nearest to it
// for re-ranking a search that keeps n vector hits (see candidates): from
// the in-memory index, or, under a filter, among the items it selects
// (scanning the whole index and filtering afterwards would miss
// everything when the filter is narrow).
func (s *Searcher) vectorCandidates(ctx context.Context, p *plan, v *Vectors, n int) vecCandidates {
	qv, err := v.embedQuery(ctx, p.vecText, func(word string) float64 { return s.queryWeight(ctx, word) })
	if errors.Is(err, embedder.ErrEmpty) {
		return vecCandidates{}
	}
	if err != nil {
		return vecCandidates{err: fmt.Errorf("search: embed query: %w", err)}
	}
	var hits []vecHit
	if p.where == "1" {
		hits, err = v.nearest(ctx, qv.narrow, n)
	} else {
		var ids []int64
		if ids, err = s.passingIDs(ctx, p); err == nil {
			hits, err = v.nearestAmong(ctx, qv.narrow, ids, n)
		}
	}
	return vecCandidates{qv: qv, hits: hits, err: err}
}

// rerankCandidates ranks the nearest items and the keyword hits (also) by
// their chunks' stored vectors, and returns the best n: the index holds
// one narrow vector per item, the chunks say which item is nearest. The
// keyword hits are candidates because the narrow vectors (a word's
// dimension shared with the item's other words) miss a third of the items
// the chunks rank highest (TestVectorKnownItemsAtScale).
//
// For fusion (fused true), when the keywords found n hits themselves, the
// index's best 2n join them: more only adds far-fetched items that crowd
// the fused ranking (on LoCoMo, with or without 8k mails beside it). When
// they found fewer (a misspelt query), the vector half has to fill the
// list and keeps all.
func (v *Vectors) rerankCandidates(ctx context.Context, c vecCandidates, also []int64, n int, fused bool) ([]vecHit, error) {
	if c.qv.narrow == nil {
		return nil, nil
	}
	hits := c.hits
	if fused && len(also) >= n {
		hits = hits[:min(len(hits), 2*n)]
	}
	ids := slices.Clone(also)
	for _, h := range hits {
		ids = append(ids, h.item)
	}
	return v.rerank(ctx, c.qv, ids, n)
}

// A search starts from the items a person filter names when they are
// few: up to selectRows when the other filters are checked on each item's
// row, up to selectIndex when the filters are names alone, which the
// index answers without reading rows.
var (
	selectRows  = int64(5000)
	selectIndex = int64(100_000)
)

// setFilter sets the plan's conditions for the query's filters and a
// period from its text, and, when a person filter names few items (by the
// index's count), which items the search starts from. A person in a few
// hundred of a million mails made a keyword search check its words' best
// matches row by row (220 ms), the vector half read every row's people
// (1.5 s).
func (s *Searcher) setFilter(ctx context.Context, p *plan, since, until time.Time) {
	p.where, p.args = filterSQL(p.q, since, until)
	p.selected, p.via = nil, ""
	var names []string // the name filters' expressions
	best, onlyNames := int64(math.MaxInt64), true
	for _, person := range filterPeople(p.q) {
		name := personExpression(person)
		if name == "" {
			onlyNames = false
		} else {
			names = append(names, "("+name+")")
		}
		expr := cmp.Or(name, addressExpression(person))
		if expr == "" {
			continue
		}
		if df, _, ok := s.termFreq(ctx, expr); ok && df < best {
			best, p.via = df, expr
		}
	}
	if best > selectRows {
		p.via = ""
	}
	namesAlone := onlyNames && len(names) > 0 && best <= selectIndex
	if namesAlone {
		rest := p.q
		rest.People = nil
		others, _ := filterSQL(rest, since, until)
		namesAlone = others == "1"
	}
	if namesAlone {
		expr := strings.Join(names, " AND ")
		p.selected = sync.OnceValues(func() (selection, error) {
			return s.collectSelection(ctx, `SELECT rowid FROM items_fts WHERE items_fts MATCH ?`, expr)
		})
	} else if p.via != "" {
		query, args := p.selectSQL()
		p.selected = sync.OnceValues(func() (selection, error) { return s.collectSelection(ctx, query, args...) })
	}
}

// selectSQL is the query for the items that pass the plan's filters.
func (p *plan) selectSQL() (string, []any) {
	if p.via == "" {
		return `SELECT i.id FROM items i WHERE ` + p.where, slices.Clone(p.args)
	}
	return `SELECT i.id FROM items i WHERE i.id IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?) AND ` + p.where,
		append([]any{p.via}, p.args...)
}

// selection is the set of items a search's filters select.
type selection struct {
	ids  []int64
	bits []uint64 // bit id is set for each id
}

func (sel selection) has(id int64) bool {
	return id >= 0 && id/64 < int64(len(sel.bits)) && sel.bits[id/64]&(1<<(id%64)) != 0
}

// passingIDs returns the ids of the items that pass the plan's filters:
// the ones read first, or all of them.
func (s *Searcher) passingIDs(ctx context.Context, p *plan) ([]int64, error) {
	if p.selected != nil {
		sel, err := p.selected()
		return sel.ids, err
	}
	query, args := p.selectSQL()
	return s.collectIDs(ctx, query, args...)
}

// collectIDs reads the ids a filter's query selects.
func (s *Searcher) collectIDs(ctx context.Context, query string, args ...any) ([]int64, error) {
	ids, err := store.Collect(ctx, s.db, store.Value[int64], query, args...)
	if err != nil {
		return nil, fmt.Errorf("search: filter: %w", err)
	}
	return ids, nil
}

// collectSelection reads the ids query selects into a selection.
func (s *Searcher) collectSelection(ctx context.Context, query string, args ...any) (selection, error) {
	ids, err := s.collectIDs(ctx, query, args...)
	if err != nil {
		return selection{}, err
	}
	var hi int64
	for _, id := range ids {
		hi = max(hi, id)
	}
	sel := selection{ids: ids, bits: make([]uint64, hi/64+1)}
	for _, id := range ids {
		if id >= 0 {
			sel.bits[id/64] |= 1 << (id % 64)
		}
	}
	return sel, nil
}

// namesPeople counts the query words that name someone involved in the
// item: a word of a display name or of an address's local part.
func namesPeople(it *store.Item, words []string) int {
	var names []string
	for _, p := range append([]string{it.Sender}, it.People...) {
		if at := strings.IndexByte(p, '@'); at >= 0 {
			p = p[:at] // the domain names a company, not a person
		}
		names = append(names, tokenize.Words(p)...)
	}
	n := 0
	for _, w := range words {
		if slices.Contains(names, w) {
			n++
		}
	}
	return n
}

// dedupeKey identifies the same content reached twice: one message in
// two mailboxes or imported from two archives, or the same text sent
// twice by one sender.
func dedupeKey(it *store.Item) string {
	if id, ok := it.Meta["message_id"].(string); ok && id != "" {
		return "m:" + strings.ToLower(strings.Trim(id, "<> "))
	}
	body := strings.Join(strings.Fields(strings.ToLower(it.Body)), " ")
	if body == "" {
		return "" // nothing to compare: never a duplicate
	}
	h := sha256.Sum256([]byte(it.Sender + "\x00" + strings.ToLower(strings.TrimSpace(it.Title)) + "\x00" + body))
	return fmt.Sprintf("c:%x", h[:12])
}

// fuse scores the candidates: keyword or vector scores alone in those
// modes; in hybrid, reciprocal rank fusion of the two rankings with
// equal weights and the customary k = 60 (Cormack et al., 2009).
func fuse(mode string, cands map[int64]*candidate) {
	for _, c := range cands {
		switch mode {
		case ModeFTS:
			c.score = c.ftsScore
		case ModeVector:
			c.score = c.vecSim
		default:
			c.score = 0
			if c.ftsRank > 0 {
				c.score += 1 / (rrfK + float64(c.ftsRank))
			}
			switch {
			case c.vecRank > 0:
				c.score += 1 / (rrfK + float64(c.vecRank))
			case c.unembedded:
				// Until its vector exists, a keyword hit is counted as
				// ranked alike by meaning: an item just imported is not
				// displaced by older ones for want of a vector.
				c.score += 1 / (rrfK + float64(c.ftsRank))
			}
		}
	}
}

// ftsSearchContext ranks keyword hits for hybrid search with their thread
// neighbours' scores mixed in, with the weights the vector half uses to
// read a message with its neighbours: an answer ("5 years already!") is
// found by the words of the question it answers. The neighbours come from
// the keyword hits themselves, so a message no keyword matched can still
// rank through the one before or after it.
func (s *Searcher) ftsSearchContext(ctx context.Context, p *plan, n int) ([]ftsRow, error) {
	// Twice as deep: a message can rank through its neighbours' words.
	ranked, err := s.ftsSearch(ctx, p, 2*n)
	if err != nil || len(ranked) == 0 {
		return ranked, err
	}
	ids := make([]int64, len(ranked))
	matched := make(map[int64]bool, len(ranked))
	for i, r := range ranked {
		ids[i] = r.id
		matched[r.id] = true
	}
	nb, err := threadNeighbours(ctx, s.db, ids)
	if err != nil {
		return nil, err
	}
	score := map[int64]float64{}
	for _, r := range ranked {
		f := -r.bm25
		score[r.id] += f
		if pn, ok := nb[r.id]; ok {
			if pn[1] != 0 {
				score[pn[1]] += contextPrev * f // r is the message before it
			}
			if pn[0] != 0 {
				score[pn[0]] += contextNext * f // r is the answer it got
			}
		}
	}
	// A neighbour no keyword matched must still pass the filters.
	var others []int64
	for id := range score {
		if !matched[id] {
			others = append(others, id)
		}
	}
	pass, err := s.passing(ctx, p, others)
	if err != nil {
		return nil, err
	}
	out := make([]ftsRow, 0, len(score))
	for id, f := range score {
		if matched[id] || pass[id] {
			out = append(out, ftsRow{id: id, bm25: -f})
		}
	}
	slices.SortFunc(out, func(a, b ftsRow) int {
		if c := cmp.Compare(a.bm25, b.bm25); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out[:min(n, len(out))], nil
}

// newest adds the n newest items that pass the plan's filters, scored by
// recency, for a search that names nothing but a period or a filter.
func (s *Searcher) newest(ctx context.Context, p *plan, n int, get func(int64) *candidate) error {
	query, args := p.selectSQL()
	ids, err := store.Collect(ctx, s.db, store.Value[int64], query+` ORDER BY i.time DESC, i.id DESC LIMIT ?`, append(args, n)...)
	if err != nil {
		return fmt.Errorf("search: list: %w", err)
	}
	for i, id := range ids {
		rank := i + 1
		c := get(id)
		c.ftsRank, c.ftsScore, c.vecRank, c.vecSim = rank, 1/float64(rank), rank, 1/float64(rank)
	}
	return nil
}

// passing returns which of ids pass the plan's filters.
func (s *Searcher) passing(ctx context.Context, p *plan, ids []int64) (map[int64]bool, error) {
	pass := make(map[int64]bool, len(ids))
	if p.where == "1" {
		for _, id := range ids {
			pass[id] = true
		}
		return pass, nil
	}
	if p.selected != nil {
		sel, err := p.selected()
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if sel.has(id) {
				pass[id] = true
			}
		}
		return pass, nil
	}
	for chunk := range slices.Chunk(ids, store.MaxVariables) {
		ok, err := store.Collect(ctx, s.db, store.Value[int64], `SELECT i.id FROM items i WHERE i.id IN (`+store.Placeholders(len(chunk))+`) AND `+p.where, append(store.Args(chunk), p.args...)...)
		if err != nil {
			return nil, fmt.Errorf("search: filter: %w", err)
		}
		for _, id := range ok {
			pass[id] = true
		}
	}
	return pass, nil
}
