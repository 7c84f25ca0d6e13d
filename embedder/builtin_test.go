package embedder

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestBuiltinIsDeterministicAndNormalised(t *testing.T) {
	ctx := context.Background()
	b := NewBuiltin(0)
	texts := []string{"The quarterly pipeline forecast is due Friday", "Ünïcödé Grüße aus Köln", "x y 42"}
	v1, err := b.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := NewBuiltin(0).Embed(ctx, texts)
	for i := range texts {
		if len(v1[i]) != b.Dimension() {
			t.Fatalf("dimension %d, want %d", len(v1[i]), b.Dimension())
		}
		if n := math.Sqrt(dot(v1[i], v1[i])); math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d: norm %v, want 1", i, n)
		}
		for j := range v1[i] {
			if v1[i][j] != v2[i][j] {
				t.Fatalf("text %d: not deterministic at %d", i, j)
			}
		}
	}
	if b.Identity() != NewBuiltin(0).Identity() || b.Identity() == NewBuiltin(64).Identity() {
		t.Errorf("identity must be stable and name the dimension: %q vs %q", b.Identity(), NewBuiltin(64).Identity())
	}
}

func TestBuiltinEmptyText(t *testing.T) {
	_, err := NewBuiltin(0).Embed(context.Background(), []string{"the of and, to!"})
	if !errors.Is(err, ErrEmpty) {
		t.Fatalf("stop words only: err = %v, want ErrEmpty", err)
	}
	if v := NewBuiltin(0).EmbedText(""); v != nil {
		t.Fatal("empty text got a vector")
	}
}

func TestBuiltinSimilarity(t *testing.T) {
	b := NewBuiltin(0)
	e := b.EmbedText
	tests := []struct {
		query, near, far string
	}{
		{"painting a sunrise", "I painted the sunrise over the lake last year", "We booked flights to Berlin for the conference"},
		{"gas pipeline capacity", "Pipeline capacity for natural gas in California", "Dinner reservation for Saturday evening"},
		{"LGBTQ support group", "I went to a LGBTQ+ support group yesterday", "My kids love dinosaurs and nature"},
		{"adoption agencies", "Researching adoption agency options this week", "The football game was on Sunday"},
	}
	for _, tc := range tests {
		q := e(tc.query)
		if dn, df := dot(q, e(tc.near)), dot(q, e(tc.far)); dn <= df+0.1 {
			t.Errorf("%q: near %.3f not clearly above far %.3f", tc.query, dn, df)
		}
	}
}

func TestBuiltinQueryWeightsFavourRareWords(t *testing.T) {
	ctx := context.Background()
	b := NewBuiltin(0)
	common := b.EmbedText("meeting meeting notes from the meeting")
	rare := b.EmbedText("the zeppelin hangar")
	idf := map[string]float64{"meeting": 0.2, "zeppelin": 5}
	q, err := b.EmbedQuery(ctx, "meeting about zeppelin", func(w string) float64 {
		if v, ok := idf[w]; ok {
			return v
		}
		return 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if dot(q, rare) <= dot(q, common) {
		t.Fatalf("rare-word document %.3f should beat common-word document %.3f", dot(q, rare), dot(q, common))
	}
}

func TestChunks(t *testing.T) {
	long := ""
	for i := 0; i < 50; i++ {
		long += "This is sentence number ten of the message. "
	}
	tests := []struct {
		name      string
		text      string
		size, max int
		wantN     int
	}{
		{"empty", "  ", 100, 0, 0},
		{"short", "hello there", 100, 0, 1},
		{"long", long, 500, 0, 5},
		{"capped", long, 500, 2, 2},
		{"no spaces", string(make([]byte, 1000)), 300, 0, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := Chunks(tc.text, tc.size, tc.max)
			if len(cs) != tc.wantN {
				t.Fatalf("%d chunks, want %d", len(cs), tc.wantN)
			}
			for _, c := range cs {
				if len(c) > tc.size {
					t.Errorf("chunk of %d bytes > %d", len(c), tc.size)
				}
			}
		})
	}
	// Multi-byte runes are never split.
	for _, c := range Chunks("ééééééééééééééééééééé", 7, 0) {
		for _, r := range c {
			if r == '\uFFFD' {
				t.Fatalf("chunk %q splits a rune", c)
			}
		}
	}
}

// The narrow vector holds the words alone; the wide one also their
// character n-grams, so it relates forms the stemmer does not join.
func TestBuiltinNarrowIsWordsWideAddsGrams(t *testing.T) {
	b := NewBuiltin(0)
	if d := dot(b.EmbedText("pipelines"), b.EmbedText("pipeline")); d < 0.9999 {
		t.Fatalf("one stem, narrow dot %.3f: want the same vector", d)
	}
	n1, w1 := b.Dual("forecasting", nil)
	n2, w2 := b.Dual("forecaster", nil)
	if d := dot(n1, n2); math.Abs(d) > 0.01 {
		t.Errorf("two stems, narrow dot %.3f: want only their words, nothing shared", d)
	}
	if d := dot(w1, w2); d < 0.2 {
		t.Errorf("forecasting/forecaster wide dot %.3f: want their shared n-grams to count", d)
	}
}

func TestBuiltinDual(t *testing.T) {
	b := NewBuiltin(0)
	n, w := b.Dual("quarterly pipeline forecast", nil)
	if len(n) != b.Dimension() || len(w) != WideDimension {
		t.Fatalf("dims %d, %d", len(n), len(w))
	}
	single := b.EmbedText("quarterly pipeline forecast")
	for i := range n {
		if n[i] != single[i] {
			t.Fatal("Dual's narrow vector differs from EmbedText")
		}
	}
	if d := dot(w, w); d < 0.9999 || d > 1.0001 {
		t.Fatalf("wide norm² %v", d)
	}
	if n, w := b.Dual("", nil); n != nil || w != nil {
		t.Fatal("empty text got vectors")
	}
}

// charGramsByRunes is the straightforward form of charGrams: the vectors
// of every stored item depend on the two agreeing exactly.
func charGramsByRunes(word string) []uint64 {
	r := []rune("<" + word + ">")
	if len(r) < 5 {
		return nil
	}
	var out []uint64
	for n := 3; n <= 4; n++ {
		for i := 0; i+n <= len(r); i++ {
			out = append(out, hashString(seedChar+uint64(n), string(r[i:i+n])))
		}
	}
	return out
}

func TestCharGramsMatchTheRuneForm(t *testing.T) {
	words := append(tokenize.Words("a ab abc pipeline Überweisung naïve 日本語のテキスト اختبار ｆｕｌｌ　ｗｉｄｔｈ emoji🙂text"),
		strings.Repeat("long", 40), "x\u0301y", "ß")
	for _, w := range words {
		var got []uint64
		charGrams(w, func(h uint64) { got = append(got, h) })
		want := charGramsByRunes(w)
		if !slices.Equal(got, want) || charGramCount(w) != len(want) {
			t.Errorf("%q: %d grams %v (count %d), want %d %v", w, len(got), got, charGramCount(w), len(want), want)
		}
	}
}

// digestDual hashes the vectors Dual gives each text, with and without
// query weights.
func digestDual(b *Builtin, texts []string) string {
	h := sha256.New()
	weight := func(w string) float64 { return float64(len(w)) / 4 }
	for _, t := range texts {
		for _, wf := range []func(string) float64{nil, weight} {
			n, w := b.Dual(t, wf)
			for _, x := range append(n, w...) {
				binary.Write(h, binary.LittleEndian, math.Float32bits(x))
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

var dualTexts = []string{
	"Quarterly pipeline forecast: the Forecast is due Friday, FORECASTING takes a week.",
	"Überweisung für Café-Besitzer; naïve résumé, ÉCOLE école",
	"日本語のテキスト と English words mixed 東京 meeting",
	"the and of to a in is it you that", // stop words only
	"Dancing danced dances: running ran runs; studies studied studying",
	"a word longer than a cache slot takes: " + strings.Repeat("Qx", 40) + " and " + strings.Repeat("Qx", 40),
	"Hi Wei,\n\nOr snoumspoontneeck that tutral raingee gliony quildrool into smaick queasneensmeet.",
}

// Stored vectors depend on the built-in embedder's exact output: a change
// must come with a new builtinVersion, so the store embeds everything
// again. The digest was taken before the word cache came in.
func TestBuiltinVectorsUnchanged(t *testing.T) {
	const want = "abf52db7b11a46ee3871b4105e49f9ec697e35f7e427655268fef9fd4c99683c"
	b := NewBuiltin(0)
	if got := digestDual(b, dualTexts); got != want {
		t.Fatalf("vectors changed: digest %s, want %s", got, want)
	}
	// The same again once other words have taken every slot of the word
	// caches: what a slot held before must not leak into a vector.
	var other []string
	for i := range 4 * wordCacheSlots {
		other = append(other, fmt.Sprintf("w%dx Q%dz", i, i))
	}
	for range cap(wordCaches) + 1 {
		b.Dual(strings.Join(other, " "), nil)
	}
	if got := digestDual(b, dualTexts); got != want {
		t.Fatalf("vectors changed after the caches filled: digest %s, want %s", got, want)
	}
}

// DropCaches empties the kept word caches; embedding fills them again
// with the same vectors.
func TestDropCaches(t *testing.T) {
	b := NewBuiltin(0)
	want := digestDual(b, dualTexts)
	if len(wordCaches) == 0 {
		t.Fatal("no word cache kept after embedding")
	}
	b.DropCaches()
	if n := len(wordCaches); n != 0 {
		t.Fatalf("%d word caches kept after DropCaches", n)
	}
	if got := digestDual(b, dualTexts); got != want || len(wordCaches) == 0 {
		t.Fatalf("after DropCaches: digest %s (want %s), %d caches kept", got, want, len(wordCaches))
	}
}
