package tokenize

import (
	"slices"
	"testing"
	"unicode"
)

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

// Spans are the words with their places in the original text, whatever
// case or script surrounds them.
func TestSpans(t *testing.T) {
	text := "Grüße, BOB's «Plan» 2023!"
	got := Spans(text)
	want := []Span{{0, 7, "grüße"}, {9, 12, "bob"}, {13, 14, "s"}, {17, 21, "plan"}, {24, 28, "2023"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Spans = %v, want %v", got, want)
	}
	for _, sp := range got {
		if w := Words(text[sp.Start:sp.End]); len(w) != 1 || w[0] != sp.Word {
			t.Errorf("span %v cuts %q", sp, text[sp.Start:sp.End])
		}
	}
}

// eachWordByRunes is eachWord as first written, rune by rune: the
// definition the byte-at-a-time version must keep.
func eachWordByRunes(text string, f func(start, end int)) {
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f(start, i)
			start = -1
		}
	}
	if start >= 0 {
		f(start, len(text))
	}
}

// eachWord finds the words eachWordByRunes does, in any text: ASCII,
// other scripts, invalid UTF-8 and mixes of them.
func FuzzEachWord(f *testing.F) {
	for _, s := range []string{"", "a", "Caroline's LGBTQ+ group, 8 May-2023", "Grüße, BOB's «Plan» 2023!",
		"日本語のテキスト と English", "x\xffy\xc3", "\xe2\x82", "emoji🙂text", "ﬁle ＡＢＣ ١٢٣ a_b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		type span struct{ start, end int }
		var got, want []span
		eachWord(text, func(s, e int) { got = append(got, span{s, e}) })
		eachWordByRunes(text, func(s, e int) { want = append(want, span{s, e}) })
		if !slices.Equal(got, want) {
			t.Fatalf("eachWord(%q) = %v, want %v", text, got, want)
		}
	})
}
