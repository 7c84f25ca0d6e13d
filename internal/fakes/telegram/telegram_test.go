package telegram

import (
	"strings"
	"testing"
)

func TestFakeMethodsFollowTheSpec(t *testing.T) {
	sp := LoadSpec(t)
	for method, params := range Methods {
		fields, ok := sp[method]
		if !ok {
			t.Errorf("the fake serves %s, which the Bot API does not have", method)
			continue
		}
		for _, p := range params {
			if _, ok := fields[p]; !ok {
				t.Errorf("%s: the fake accepts %q, which the Bot API does not define", method, p)
			}
		}
		for f, req := range fields {
			if !req {
				continue
			}
			found := false
			for _, r := range required[method] {
				found = found || r == f
			}
			if !found {
				t.Errorf("%s: %q is required by the Bot API but not by the fake", method, f)
			}
		}
	}
}

func TestParseHTML(t *testing.T) {
	cases := []struct {
		in, visible, err string
	}{
		{"plain", "plain", ""},
		{"<b>bold</b> &amp; <i>it</i>", "bold & it", ""},
		{"a &lt;b&gt; &#65; &#x42;", "a <b> A B", ""},
		{`<a href="https://x.y">x</a>`, "x", ""},
		{"<b>open", "", "end tag"},
		{"<b><i>x</b></i>", "", "unmatched"},
		{"<script>x</script>", "", "unsupported start tag"},
		{"1 < 2", "", "unclosed start tag"},
		{"a & b", "", "unescaped '&'"},
		{"x > y", "", "unescaped '>'"},
		{"&nbsp;", "", "unsupported entity"},
	}
	for _, c := range cases {
		got, err := parseHTML(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.visible {
			t.Errorf("%q: %q %v, want %q", c.in, got, err, c.visible)
		}
	}
}

func TestUTF16Len(t *testing.T) {
	if n := utf16Len("a😀é"); n != 4 {
		t.Errorf("utf16Len = %d, want 4 (a, surrogate pair, é)", n)
	}
}
