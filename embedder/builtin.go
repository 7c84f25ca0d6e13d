package embedder

import (
	"context"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

// DefaultDimension is the length of the built-in embedder's vectors, the
// ones an in-memory index holds (one per item: 100k items at 128
// dimensions are 51 MB). Fewer dimensions collide more often and find
// fewer of the right candidates: measured on real mail, a known mail was
// among a search's candidates about 60% of the time at 96 dimensions, 65%
// at 128 and 78% at 192 (with the index's re-ranking on top).
const DefaultDimension = 128

// builtinVersion changes whenever the features or weights change, so the
// store re-embeds everything under the new identity.
const builtinVersion = "hash-v2"

// Builtin is the offline default embedder: a signed feature-hashing
// ("hashing trick") projection of stemmed words with sublinear term
// frequencies. Its vectors (Embed, and Dual's narrow one) hold only the
// words: they are short, for an in-memory index that finds candidates, and
// the few features of a text's words collide less at that width than the
// many of its character n-grams. Dual's wide vector adds word bigrams and
// character 3/4-grams of each word, for re-ranking the candidates.
//
// Document vectors depend on the document alone, never on corpus
// statistics, so they stay valid however the corpus grows and never need
// recomputing when new mail arrives. Rarity is applied on the query side
// instead (EmbedQuery's weight, the inverse document frequency the store
// knows at query time): the dot product then weighs matches by how rare
// the word is, as BM25 does.
type Builtin struct {
	dim int
}

// NewBuiltin returns the built-in embedder; dim <= 0 means DefaultDimension.
func NewBuiltin(dim int) *Builtin {
	if dim <= 0 {
		dim = DefaultDimension
	}
	return &Builtin{dim: dim}
}

// Dimension implements Embedder.
func (b *Builtin) Dimension() int { return b.dim }

// Identity implements Embedder.
func (b *Builtin) Identity() string { return fmt.Sprintf("builtin/%s/d%d", builtinVersion, b.dim) }

// Embed implements Embedder. A text without content words gets ErrEmpty.
func (b *Builtin) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		v := b.vector(t, nil)
		if v == nil {
			return nil, fmt.Errorf("builtin embedder: text %d: %w", i, ErrEmpty)
		}
		out[i] = v
	}
	return out, nil
}

// EmbedText embeds one document text; nil when it has no content words.
func (b *Builtin) EmbedText(text string) []float32 { return b.vector(text, nil) }

// EmbedQuery implements QueryEmbedder: like Embed, with each word's
// features scaled by weight(word).
func (b *Builtin) EmbedQuery(ctx context.Context, text string, weight func(string) float64) ([]float32, error) {
	v := b.vector(text, weight)
	if v == nil {
		return nil, fmt.Errorf("builtin embedder: query: %w", ErrEmpty)
	}
	return v, nil
}

// Feature weights relative to a word's unigram. Character n-grams are
// spread over a word's n-grams so a long word does not outweigh a short one.
const (
	bigramWeight = 0.6
	charWeight   = 0.8
)

// Seeds keep the feature spaces apart in the hash.
const (
	seedWord   = 0x9e3779b97f4a7c15
	seedBigram = 0xc2b2ae3d27d4eb4f
	seedChar   = 0x165667b19e3779f9
)

func (b *Builtin) vector(text string, weight func(string) float64) []float32 {
	v, _ := b.project(text, weight, false)
	return v
}

// WideDimension is the length of the wide vectors (Dual): wide enough that
// hashed features rarely collide, too wide to keep in memory for every
// item, so they are stored and read back only to re-rank candidates.
const WideDimension = 2048

// Dual returns a text's vector at the embedder's dimension and at
// WideDimension, from one pass over its features; nils when the text has
// no content words. weight scales words as in EmbedQuery (nil: 1).
func (b *Builtin) Dual(text string, weight func(string) float64) (narrow, wide []float32) {
	return b.project(text, weight, true)
}

func (b *Builtin) project(text string, weight func(string) float64, withWide bool) ([]float32, []float32) {
	v := make([]float32, b.dim)
	var wv []float32
	if withWide {
		wv = make([]float32, WideDimension)
	}
	any := false
	features(text, weight, func(h uint64, w float64, word bool) {
		// The sign from the hash makes colliding features cancel out on
		// average instead of piling up.
		if h&1 == 1 {
			w = -w
		}
		if word {
			any = true
			v[(h>>1)%uint64(len(v))] += float32(w)
		}
		if wv != nil {
			wv[(h>>1)%WideDimension] += float32(w)
		}
	})
	if !any || !Normalize(v) {
		return nil, nil
	}
	if wv != nil && !Normalize(wv) {
		return nil, nil
	}
	return v, wv
}

// features emits the hashed features of text with their weights:
// stemmed word unigrams (sublinear term frequency; word is true), character
// 3/4-grams of each word and bigrams of neighbouring content words.
func features(text string, weight func(string) float64, emit func(h uint64, w float64, word bool)) {
	words := tokenize.ContentWords(text)
	if len(words) == 0 {
		return
	}
	sc := scratchPool.Get().(*featureScratch)
	defer sc.reset()
	for _, w := range words {
		s := tokenize.Stem(w)
		at, ok := sc.index[s]
		if !ok {
			at = int32(len(sc.stems))
			sc.index[s] = at
			ww := 1.0
			if weight != nil {
				ww = weight(w)
			}
			sc.stems = append(sc.stems, stemInfo{stem: s, raw: w, weight: ww, bigram: hashString(seedBigram, s)})
		}
		sc.stems[at].tf++
		sc.seq = append(sc.seq, at)
	}
	for _, wi := range sc.stems {
		w := (1 + math.Log(float64(wi.tf))) * wi.weight
		if w <= 0 {
			continue
		}
		emit(hashString(seedWord, wi.stem), w, true)
		if n := charGramCount(wi.raw); n > 0 {
			gw := w * charWeight / math.Sqrt(float64(n))
			charGrams(wi.raw, func(g uint64) { emit(g, gw, false) })
		}
	}
	// In first-seen order: summing floats in map order would make the
	// vectors differ in their last bits from run to run.
	for i := 1; i < len(sc.seq); i++ {
		a, b := &sc.stems[sc.seq[i-1]], &sc.stems[sc.seq[i]]
		h := hashString(a.bigram, b.stem) // as hashString(hashString(seedBigram, a), b)
		w := bigramWeight * math.Sqrt(a.weight*b.weight)
		if j, seen := sc.bigrams[h]; seen {
			sc.bw[j] += w * 0.5 // sublinear: repeats count less
			continue
		}
		sc.bigrams[h] = int32(len(sc.bh))
		sc.bh, sc.bw = append(sc.bh, h), append(sc.bw, w)
	}
	for i, h := range sc.bh {
		emit(h, sc.bw[i], false)
	}
}

// featureScratch is the per-text state of features, kept between texts:
// allocating its maps for every text was a tenth of embedding an import.
type featureScratch struct {
	index   map[string]int32 // stem → its entry in stems
	stems   []stemInfo       // distinct stems, first seen first
	seq     []int32          // each word's entry in stems
	bigrams map[uint64]int32 // bigram hash → its entry in bh, bw
	bh      []uint64
	bw      []float64
}

// stemInfo is one distinct stem of a text.
type stemInfo struct {
	stem, raw string // the stem and the first word that had it
	tf        int
	weight    float64 // weight(raw), 1 without weights
	bigram    uint64  // the stem's hash as a bigram's first word
}

var scratchPool = sync.Pool{New: func() any {
	return &featureScratch{index: map[string]int32{}, bigrams: map[uint64]int32{}}
}}

// reset empties the scratch and returns it to the pool; one that grew for
// a huge text is dropped instead of held.
func (sc *featureScratch) reset() {
	if len(sc.seq) > 1<<14 {
		return
	}
	clear(sc.index)
	clear(sc.bigrams)
	sc.stems, sc.seq, sc.bh, sc.bw = sc.stems[:0], sc.seq[:0], sc.bh[:0], sc.bw[:0]
	scratchPool.Put(sc)
}

// charGramCount is how many character n-grams charGrams emits for word.
func charGramCount(word string) int {
	r := utf8.RuneCountInString(word) + 2 // with < and >
	if r < 5 {                            // words of up to two letters: the unigram says it all
		return 0
	}
	return (r - 2) + (r - 3)
}

// charGrams hashes the character 3- and 4-grams of "<word>", slicing it
// at rune boundaries rather than allocating each gram; "<word>" itself is
// built on the stack for all but very long words.
func charGrams(word string, emit func(uint64)) {
	if charGramCount(word) == 0 {
		return
	}
	var sbuf [64]byte
	s := append(append(append(sbuf[:0], '<'), word...), '>')
	var buf [64]int
	offs := buf[:0] // byte offset of each rune, then the end
	for i := range string(s) {
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	runes := len(offs) - 1
	for n := 3; n <= 4; n++ {
		for i := 0; i+n <= runes; i++ {
			emit(hashString(seedChar+uint64(n), s[offs[i]:offs[i+n]]))
		}
	}
}

// hashString is FNV-1a over s, started from seed, then mixed so that the
// low bits (bucket and sign) are well spread.
func hashString[T string | []byte](seed uint64, s T) uint64 {
	h := seed ^ 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
