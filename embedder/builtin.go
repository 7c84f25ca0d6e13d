package embedder

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
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
	// The sign from the hash makes colliding features cancel out on
	// average instead of piling up.
	features(text, weight, func(h uint64, w float64, word bool) {
		signed := [2]float64{w, -w}[h&1]
		if word {
			any = true
			v[(h>>1)%uint64(len(v))] += float32(signed)
		}
		if wv != nil {
			wv[(h>>1)%WideDimension] += float32(signed)
		}
	}, func(grams []uint16, w float64) {
		if wv == nil {
			return
		}
		// The sign as an index, not a branch: it is the hash's coin
		// flip, which no branch predictor guesses.
		signed := [2]float32{float32(w), -float32(w)}
		for _, g := range grams {
			wv[g>>1] += signed[g&1]
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
// stemmed word unigrams (sublinear term frequency; word is true) and
// bigrams of neighbouring content words through emit, and the character
// 3/4-grams of each word, as wideGram slots, through emitGrams.
func features(text string, weight func(string) float64, emit func(h uint64, w float64, word bool), emitGrams func(grams []uint16, w float64)) {
	sc := scratchPool.Get().(*featureScratch)
	defer sc.reset()
	wc := takeWordCache()
	defer giveWordCache(wc)
	// The content words of tokenize.ContentWords, as the cache knows them.
	tokenize.EachWord(text, func(word string) {
		cw := wc.lookup(word)
		if cw.stop {
			return
		}
		at, ok := sc.index[cw.hash]
		if !ok {
			s := word[:min(len(word), len(cw.stem))] // most stems are a prefix of their word
			if s != string(cw.stem) {
				s = string(cw.stem)
			}
			at = int32(len(sc.stems))
			sc.index[cw.hash] = at
			ww := 1.0
			if weight != nil {
				ww = weight(strings.ToLower(word))
			}
			from := len(sc.grams)
			sc.grams = append(sc.grams, cw.grams...) // the slot may be reused before they are emitted
			sc.stems = append(sc.stems, stemInfo{stem: s, weight: ww, hash: cw.hash, bigram: cw.bigram, grams: [2]int32{int32(from), int32(len(sc.grams))}})
		}
		sc.stems[at].tf++
		sc.seq = append(sc.seq, at)
	})
	for _, wi := range sc.stems {
		w := (1 + math.Log(float64(wi.tf))) * wi.weight
		if w <= 0 {
			continue
		}
		emit(wi.hash, w, true)
		if grams := sc.grams[wi.grams[0]:wi.grams[1]]; len(grams) > 0 {
			emitGrams(grams, w*charWeight/math.Sqrt(float64(len(grams))))
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
	index   map[uint64]int32 // stem (by its hash as a word) → its entry in stems
	stems   []stemInfo       // distinct stems, first seen first
	grams   []uint16         // the stems' character n-grams (stemInfo.grams)
	seq     []int32          // each word's entry in stems
	bigrams map[uint64]int32 // bigram hash → its entry in bh, bw
	bh      []uint64
	bw      []float64
}

// stemInfo is one distinct stem of a text.
type stemInfo struct {
	stem   string
	tf     int
	weight float64  // weight of the first word with the stem, 1 without weights
	hash   uint64   // the stem's hash as a word
	bigram uint64   // the stem's hash as a bigram's first word
	grams  [2]int32 // the first word's n-grams: featureScratch.grams[from:to]
}

var scratchPool = sync.Pool{New: func() any {
	return &featureScratch{index: map[uint64]int32{}, bigrams: map[uint64]int32{}}
}}

// reset empties the scratch and returns it to the pool; one that grew for
// a huge text is dropped instead of held.
func (sc *featureScratch) reset() {
	if len(sc.seq) > 1<<14 {
		return
	}
	clear(sc.index)
	clear(sc.bigrams)
	sc.stems, sc.grams, sc.seq, sc.bh, sc.bw = sc.stems[:0], sc.grams[:0], sc.seq[:0], sc.bh[:0], sc.bw[:0]
	scratchPool.Put(sc)
}

// wordCacheSlots is how many words a wordCache holds, in sets of two:
// about 5 MB. Of the words of 20k chunks of the bench's mails, 95% were
// found in a cache of 32,768 slots, 81% in one of 8,192 (the word
// misses were a sixth of embedding them), 98% in one of 65,536.
const wordCacheSlots = 32768

// wordCaches keeps the word caches between texts. Not a sync.Pool: that
// drops what it holds at garbage collections, and a cache is worth
// keeping. More callers at once than it holds make caches of their own,
// dropped after them.
var wordCaches = make(chan *wordCache, runtime.GOMAXPROCS(0))

func takeWordCache() *wordCache {
	select {
	case c := <-wordCaches:
		return c
	default:
		return new(wordCache)
	}
}

func giveWordCache(c *wordCache) {
	select {
	case wordCaches <- c:
	default:
	}
}

// DropCaches lets the word caches go, for the garbage collector to give
// their memory back (about 5 MB a core): after an import, the hours of
// quiet that follow do not need them. The next texts fill new ones.
func (b *Builtin) DropCaches() {
	for {
		select {
		case <-wordCaches:
		default:
			return
		}
	}
}

// wordCache holds what features needs of the words seen lately, so a
// common word is lower-cased, stemmed and its n-grams hashed once, not in
// every text it is in: that was about half of embedding a mail. A word can sit
// in either slot of the set its hash chooses; a new word takes the one
// used less recently.
type wordCache struct {
	slots [wordCacheSlots]cachedWord
	mru   [wordCacheSlots / 2]uint8 // the slot of each set used last
}

// cachedWord is one word's features. The byte slices are reused when the
// slot changes hands, so nothing of a text is kept.
type cachedWord struct {
	key          uint64   // wordKey of the word as written; 0 in an empty slot
	stop         bool     // not a content word (tokenize.StopWord of it lower-cased)
	stem         []byte   // tokenize.Stem of it lower-cased
	hash, bigram uint64   // the stem hashed as a word and as a bigram's first word
	grams        []uint16 // wideGram of each charGrams hash of it lower-cased, in order
}

// maxCachedWord is the longest word a wordCache keeps: a slot keeps its
// buffers, and a word of a megabyte (base64 without line breaks) would
// stay with it.
const maxCachedWord = 64

func (c *wordCache) lookup(word string) *cachedWord {
	if len(word) > maxCachedWord {
		return newCachedWord(new(cachedWord), word)
	}
	key := wordKey(word)
	set := (key >> 1) % (wordCacheSlots / 2)
	for way := range uint8(2) {
		if cw := &c.slots[2*set+uint64(way)]; cw.key == key {
			c.mru[set] = way
			return cw
		}
	}
	way := 1 - c.mru[set]
	c.mru[set] = way
	cw := newCachedWord(&c.slots[2*set+uint64(way)], word)
	cw.key = key
	return cw
}

// wordKey names a word in a wordCache by 63 bits of its hash (never 0)
// instead of its bytes: comparing those, kept in a buffer of their own,
// was where the cache missed the CPU's caches most. Two words of one set with
// the same key would share features; at 2^-49 a pair, far below the
// collisions the hashing of features into 2,048 dimensions makes anyway.
func wordKey(word string) uint64 { return hashString(0, word) | 1 }

// newCachedWord fills cw with word's features.
func newCachedWord(cw *cachedWord, word string) *cachedWord {
	lower := strings.ToLower(word)
	stem := tokenize.Stem(lower)
	cw.stop = tokenize.StopWord(lower)
	cw.stem = append(cw.stem[:0], stem...)
	cw.hash, cw.bigram = hashString(seedWord, stem), hashString(seedBigram, stem)
	cw.grams = cw.grams[:0]
	charGrams(lower, func(h uint64) { cw.grams = append(cw.grams, wideGram(h)) })
	return cw
}

// wideGram packs a feature hash's slot in a wide vector and its sign (the
// low bit) as project reads them; WideDimension fits in 15 bits.
func wideGram(h uint64) uint16 {
	return uint16((h>>1)%WideDimension)<<1 | uint16(h&1)
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
