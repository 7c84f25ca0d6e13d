package untrusted

import (
	"strings"
	"testing"
)

func TestStripRemovesDelimitersFromModelOutput(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Here is a short summary:\n- " + Open + ` source="briefing">>>` + "\n- Alice wrote about Q3.\n" + Close + ">>>\nThat is all.",
			"Here is a short summary:\n- Alice wrote about Q3.\nThat is all."},
		{"Done. " + Close + ">>> Nothing else.", "Done.  Nothing else."},
		{"a cut-off <<<untrusted data source=\"x\"", "a cut-off"},
		{"no delimiters << here >>", "no delimiters << here >>"},
	}
	for _, c := range cases {
		if got := Strip(c.in); got != c.want {
			t.Errorf("Strip(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStripperAcrossPieces(t *testing.T) {
	full := "Summary: " + Wrap("briefing", "mail one") + " end <not a marker"
	for size := 1; size <= 12; size++ {
		var s Stripper
		var b strings.Builder
		for i := 0; i < len(full); i += size {
			b.WriteString(s.Write(full[i:min(i+size, len(full))]))
		}
		b.WriteString(s.Flush())
		got := b.String()
		if strings.Contains(got, "UNTRUSTED") || !strings.Contains(got, "mail one") || !strings.HasSuffix(got, " end <not a marker") {
			t.Errorf("pieces of %d: %q", size, got)
		}
	}
}
