package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	chromem "github.com/philippgille/chromem-go"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/internal/tokenize"
)

// Vector ranking: how many of the most similar facts count as matching a
// question, and how similar one must be at least. Below that the built-in
// vectors share only a character n-gram or two with the question.
const (
	vectorTop    = 10
	vectorMinSim = 0.15
)

// factIndex ranks facts by similarity to a question: an in-memory
// chromem-go collection of the active facts, embedded by the project's
// embedder. The database stays the source of truth; the collection is
// rebuilt from it at open and follows every change (sync), so it never
// needs persisting.
type factIndex struct {
	emb   embedder.Embedder
	coll  *chromem.Collection
	texts map[int64]string   // the text each document was embedded from
	words map[int64][]string // its content words, for the query's idf
}

// dualEmbedder is the built-in embedder's richer vector: words, word
// bigrams and character n-grams, so "hiking" finds "hike" and "Lisbon"
// finds "Lisboa". Facts are few; the wide vectors fit in memory.
type dualEmbedder interface {
	Dual(text string, weight func(string) float64) (narrow, wide []float32)
}

func newFactIndex(emb embedder.Embedder) (*factIndex, error) {
	if emb == nil {
		emb = embedder.NewBuiltin(0)
	}
	// Vectors are made here, never by the collection: a query weighs its
	// words by their rarity among the facts, which chromem-go cannot.
	noEmbed := func(context.Context, string) ([]float32, error) {
		return nil, errors.New("memory: facts are embedded before they are added")
	}
	coll, err := chromem.NewDB().CreateCollection("facts", nil, noEmbed)
	if err != nil {
		return nil, fmt.Errorf("memory: fact index: %w", err)
	}
	return &factIndex{emb: emb, coll: coll, texts: map[int64]string{}, words: map[int64][]string{}}, nil
}

func docID(id int64) string { return strconv.FormatInt(id, 10) }

// sync makes the collection hold exactly facts (the active ones), each
// embedded from its current text. A fact that cannot be embedded (no
// content words, a failing remote embedder) stays out and is tried again
// at the next sync; word overlap still finds it.
func (x *factIndex) sync(ctx context.Context, facts []*Fact) error {
	want := make(map[int64]bool, len(facts))
	var changed []*Fact
	for _, f := range facts {
		want[f.ID] = true
		if t, ok := x.texts[f.ID]; !ok || t != f.Text {
			changed = append(changed, f)
		}
	}
	var gone []string
	for id := range x.texts {
		if !want[id] {
			gone = append(gone, docID(id))
			delete(x.texts, id)
			delete(x.words, id)
		}
	}
	if len(gone) > 0 {
		if err := x.coll.Delete(ctx, nil, nil, gone...); err != nil {
			return fmt.Errorf("memory: fact index: %w", err)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	texts := make([]string, len(changed))
	for i, f := range changed {
		texts[i] = f.Text
	}
	vecs, err := x.embedDocs(ctx, texts)
	if err != nil {
		return fmt.Errorf("memory: fact index: %w", err)
	}
	for i, f := range changed {
		if vecs[i] == nil {
			delete(x.texts, f.ID)
			delete(x.words, f.ID)
			if err := x.coll.Delete(ctx, nil, nil, docID(f.ID)); err != nil {
				return fmt.Errorf("memory: fact index: %w", err)
			}
			continue
		}
		if err := x.coll.AddDocument(ctx, chromem.Document{ID: docID(f.ID), Embedding: vecs[i], Content: f.Text}); err != nil {
			return fmt.Errorf("memory: fact index: %w", err)
		}
		x.texts[f.ID] = f.Text
		x.words[f.ID] = tokenize.ContentWords(f.Text)
	}
	return nil
}

// embedDocs returns one vector per text; nil for a text without content.
func (x *factIndex) embedDocs(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if d, ok := x.emb.(dualEmbedder); ok {
		for i, t := range texts {
			_, out[i] = d.Dual(t, nil)
		}
		return out, nil
	}
	vecs, err := x.emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	copy(out, vecs)
	return out, nil
}

// rank returns the ids of the facts most similar to query, most similar
// first: at most vectorTop, each at least vectorMinSim similar.
func (x *factIndex) rank(ctx context.Context, query string) ([]int64, error) {
	n := min(vectorTop, x.coll.Count()) // chromem-go refuses more than it holds
	if n == 0 {
		return nil, nil
	}
	q, err := x.embedQuery(ctx, query)
	if err != nil || q == nil {
		return nil, err
	}
	res, err := x.coll.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("memory: fact index: %w", err)
	}
	var ids []int64
	for _, r := range res {
		if r.Similarity < vectorMinSim {
			break
		}
		id, err := strconv.ParseInt(r.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("memory: fact index: document %q: %w", r.ID, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// embedQuery embeds a question with its words weighed by how rare they
// are among the facts (inverse document frequency), as word overlap
// does; nil when it has no content words.
func (x *factIndex) embedQuery(ctx context.Context, query string) ([]float32, error) {
	df := map[string]int{}
	for _, ws := range x.words {
		seen := map[string]bool{}
		for _, w := range ws {
			if s := tokenize.Stem(w); !seen[s] {
				seen[s] = true
				df[s]++
			}
		}
	}
	n := float64(len(x.words))
	idf := func(w string) float64 { return math.Log(1 + n/float64(1+df[tokenize.Stem(w)])) }
	switch e := x.emb.(type) {
	case dualEmbedder:
		_, v := e.Dual(query, idf)
		return v, nil
	case embedder.QueryEmbedder:
		v, err := e.EmbedQuery(ctx, query, idf)
		if errors.Is(err, embedder.ErrEmpty) {
			return nil, nil
		}
		return v, err
	}
	vecs, err := x.emb.Embed(ctx, []string{query})
	if errors.Is(err, embedder.ErrEmpty) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// fuse merges rankings by reciprocal rank fusion: an item scores
// 1/(rrfK+rank) in each list it is in, so one found by both word overlap
// and similarity comes first, and one found by either still counts.
func fuse(lists ...[]int64) []int64 {
	score := map[int64]float64{}
	var order []int64
	for _, l := range lists {
		for i, id := range l {
			if _, seen := score[id]; !seen {
				order = append(order, id)
			}
			score[id] += 1 / float64(rrfK+i+1)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return score[order[i]] > score[order[j]] })
	return order
}

// rrfK is the usual reciprocal rank fusion constant: it keeps the top of
// one list from outweighing agreement between both.
const rrfK = 60
