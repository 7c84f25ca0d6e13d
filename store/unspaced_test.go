package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

// unspacedIDs lists the items in the trigram index, by external id.
func unspacedIDs(t *testing.T, s *Store) []string {
	t.Helper()
	ids, err := Collect(context.Background(), s.DB(), Value[string],
		`SELECT i.external_id FROM items_unspaced u JOIN items i ON i.id = u.rowid ORDER BY i.external_id`)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// The trigram index holds exactly the items with letters of scripts
// written without spaces, whether they arrive by insert (Go decides), by
// update (the migration's trigger decides) or leave by delete: both sides
// name the same ranges.
func TestUnspacedIndexFollowsItems(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	texts := map[string]string{
		"ascii":     "plain English mail",
		"latin":     "Grüße aus Köln, à bientôt",
		"cyrillic":  "Привет, как дела",
		"japanese":  "明日の会議は東京で行います",
		"katakana":  "コーヒー",
		"halfwidth": "ｺｰﾋｰ",
		"chinese":   "我们明天在北京见面",
		"thai":      "สวัสดีครับ",
		"korean":    "서울에서 만나요",
		"ext-b":     "𠀋 rare ideograph",
		"compat":    "\uF900 compatibility ideograph",
		"fullwidth": "ＡＢＣ full-width Latin", // spaced: not in the index
	}
	var want []string
	var items []*Item
	for id, text := range texts {
		items = append(items, &Item{Source: "test", ExternalID: id, Kind: "note", Time: time.Unix(1e9, 0), Body: text})
		if tokenize.HasUnspaced(text) {
			want = append(want, id)
		}
	}
	if _, err := s.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if got := unspacedIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("after insert the trigram index holds %q, want %q", got, want)
	}
	if len(want) != 8 {
		t.Fatalf("HasUnspaced picked %q", want)
	}

	// Updates go through the trigger's GLOB: each text moves to another
	// item, so every range is decided by SQL as well.
	for i, it := range items {
		it.Body = texts[items[(i+1)%len(items)].ExternalID]
	}
	if _, err := s.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	want = want[:0]
	for _, it := range items {
		if tokenize.HasUnspaced(it.Body) {
			want = append(want, it.ExternalID)
		}
	}
	slices.Sort(want)
	if got := unspacedIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("after update the trigram index holds %q, want %q", got, want)
	}

	if err := s.Tx(ctx, func(tx *Tx) error {
		for _, id := range want {
			if _, err := tx.DeleteItem("test", id); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := unspacedIDs(t, s); len(got) != 0 {
		t.Fatalf("after delete the trigram index still holds %q", got)
	}
}
