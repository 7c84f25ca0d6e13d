package tokenize

import (
	"slices"
	"testing"
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
