package gmail

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/store"
)

// A message imported from an archive, there cut in the middle of its body,
// and then collected from Gmail is one item: Gmail's whole copy replaces
// the cut one, Gmail's id and thread name it (replies go through Gmail),
// and the archive's id still finds it.
func TestCollectedCopyOfAnImportedMessageIsOneItem(t *testing.T) {
	e := newEnv(t, base)
	ctx := context.Background()
	body := "The board meets on Thursday at nine. Bring the forecast for the third quarter and the hiring plan."
	raw := mail("Alice <alice@example.org>", "owner@example.com", "Board", "board@x", "", body, base.Add(-24*time.Hour))
	cut := raw[:len(raw)-40]
	m, err := mailparse.Parse(cut)
	if err != nil {
		t.Fatal(err)
	}
	it, mm := m.Item(mailparse.ItemOptions{Source: "mbox"})
	err = e.st.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.UpsertMail(it, mm, store.UpsertOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	added := e.add(raw, base.Add(-24*time.Hour))
	res, err := e.collector(t, Options{BackfillDays: 30}).Collect(ctx)
	if err != nil || res.Stored != 1 {
		t.Fatalf("collect: %+v, %v", res, err)
	}
	counts, err := e.st.CountItems(ctx)
	if err != nil || len(counts) != 1 || counts[0].Items != 1 {
		t.Fatalf("items per source %+v, %v; want one item", counts, err)
	}
	got := e.item(t, added.ID)
	if got.Thread != added.ThreadID || !strings.HasSuffix(got.Body, "the hiring plan.") {
		t.Fatalf("by its Gmail id: thread %q, body %q; want Gmail's thread and the whole text", got.Thread, got.Body)
	}
	if byArchive, err := e.st.ItemByExternalID(ctx, "mbox", "board@x"); err != nil || byArchive.ID != got.ID {
		t.Fatalf("the archive's id finds %v, %v", byArchive, err)
	}
}
