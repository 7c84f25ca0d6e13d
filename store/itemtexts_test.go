package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// ItemTexts gives the texts of the ids asked for, in that order, and
// leaves out ids that name nothing.
func TestItemTextsInTheOrderAsked(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	res, err := s.UpsertItems(ctx, []*Item{
		{Source: "mail", ExternalID: "a", Time: at, Title: "Regatta", Body: "Boats at dawn.", People: []string{"anna@example.com"}},
		{Source: "mail", ExternalID: "b", Time: at, Title: "Baking", Body: "Sourdough starter."},
	}, UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := res[0].ID, res[1].ID
	got, err := s.ItemTexts(ctx, []int64{b, a + b + 100, a})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Hash == "" {
			t.Fatalf("item %d read without its content hash", got[i].ID)
		}
		got[i].Hash = ""
	}
	want := []ItemText{{ID: b, Title: "Baking", Body: "Sourdough starter."}, {ID: a, Title: "Regatta", Body: "Boats at dawn."}}
	if !slices.Equal(got, want) {
		t.Fatalf("ItemTexts = %+v, want %+v", got, want)
	}
}
