package embed

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
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

func TestStem(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"painting", "paint"}, {"painted", "paint"}, {"paints", "paint"},
		{"running", "run"}, {"agencies", "agency"}, {"classes", "class"},
		{"dancing", "danc"}, {"dance", "danc"}, {"bus", "bus"}, {"analysis", "analysis"},
		{"go", "go"}, {"köln", "köln"}, {"2023", "2023"},
	} {
		if got := Stem(tc.in); got != tc.want {
			t.Errorf("Stem(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWords(t *testing.T) {
	got := Words("Caroline's LGBTQ+ group, 8 May-2023; e-mail: Bob@Example.com")
	want := []string{"caroline", "s", "lgbtq", "group", "8", "may", "2023", "e", "mail", "bob", "example", "com"}
	if len(got) != len(want) {
		t.Fatalf("Words = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Words = %q, want %q", got, want)
		}
	}
	if cw := ContentWords("What did Caroline research?"); len(cw) != 2 || cw[0] != "caroline" || cw[1] != "research" {
		t.Fatalf("ContentWords = %q", cw)
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

func TestBuiltinSparse(t *testing.T) {
	b := NewBuiltin(0)
	q := b.EmbedSparse("painting a sunrise", nil)
	near := b.EmbedSparse("I painted the sunrise over the lake", nil)
	far := b.EmbedSparse("We booked flights to Berlin", nil)
	if d := q.Dot(q); d < 0.9999 || d > 1.0001 {
		t.Fatalf("sparse self dot %v, want 1", d)
	}
	if q.Dot(near) <= q.Dot(far) || q.Dot(far) > 0.05 {
		t.Fatalf("near %.3f, far %.3f", q.Dot(near), q.Dot(far))
	}
	if b.EmbedSparse("of the", nil) != nil {
		t.Fatal("stop words got a sparse vector")
	}
	// Mixing in context moves a text towards its context, and stays unit length.
	ctx := b.EmbedSparse("We booked flights to Berlin", nil)
	mixed := Mix([]Sparse{near, ctx, nil}, []float64{1, 0.5, 0.3})
	if d := mixed.Dot(mixed); d < 0.9999 || d > 1.0001 {
		t.Fatalf("mixed norm² %v", d)
	}
	if mixed.Dot(far) <= near.Dot(far) || mixed.Dot(q) >= near.Dot(q) {
		t.Fatalf("mixing did not move the vector towards its context")
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
	words := append(Words("a ab abc pipeline Überweisung naïve 日本語のテキスト اختبار ｆｕｌｌ　ｗｉｄｔｈ emoji🙂text"),
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
