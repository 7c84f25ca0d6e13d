package memory

import (
	"strings"
	"testing"
)

// FuzzParseMemory: the parser never panics, and what it accepts survives
// a round trip through RenderMemory unchanged.
func FuzzParseMemory(f *testing.F) {
	f.Add([]byte(RenderMemory([]*Fact{{ID: 3, Text: "My sister Ana lives in Lisbon", Category: Family}, {ID: 9, Text: "I like tea", Category: Preferences, Pinned: true}})))
	f.Add([]byte("# Memory\n<!-- a\ncomment -->\n## Recent context\n- [pinned] working from Porto\n* [m2] x\n"))
	f.Add([]byte("## Family\n- [m1] a\n- [m1] b\n"))
	f.Add([]byte("## Hobbies\n- chess\n"))
	f.Add([]byte("- before a section\n"))
	f.Add([]byte("## Notes\n- [m0] zero\n- [mx] bad\n- [] empty\n- [m5, pinned, m6] two ids\n"))
	f.Add([]byte("## Notes\n<!-- unclosed\n"))
	f.Add([]byte("\xff\xfe## Notes"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := ParseMemory(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "MEMORY.md") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		var facts []*Fact
		next := int64(1 << 40) // ids for new lines, past any parsed one
		for _, l := range lines {
			if l.Text == "" || strings.ContainsAny(l.Text, "\n\r") {
				t.Fatalf("line %d: bad text %q", l.No, l.Text)
			}
			id := l.ID
			if id == 0 {
				next++
				id = next
			}
			facts = append(facts, &Fact{ID: id, Text: l.Text, Category: l.Category, Pinned: l.Pinned})
		}
		again, err := ParseMemory(RenderMemory(facts))
		if err != nil {
			t.Fatalf("a rendered file does not parse: %v\n%s", err, RenderMemory(facts))
		}
		if len(again) != len(facts) {
			t.Fatalf("%d lines back, want %d", len(again), len(facts))
		}
		byID := map[int64]*Fact{}
		for _, f := range facts {
			byID[f.ID] = f
		}
		for _, l := range again {
			f := byID[l.ID]
			if f == nil || f.Text != l.Text || f.Category != l.Category || f.Pinned != l.Pinned {
				t.Fatalf("round trip changed %+v into %+v", f, l)
			}
		}
	})
}
