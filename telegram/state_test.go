package telegram

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

func TestStateKeepsPairingAndUpdates(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := state{db: st.DB(), now: time.Now}
	if id, at, err := s.lastUpdate(ctx); err != nil || id != 0 || !at.IsZero() {
		t.Errorf("last update before any: %d at %v, %v", id, at, err)
	}
	for _, id := range []int64{5, 9, 7} {
		if err := s.setLastUpdate(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got, at, _ := s.lastUpdate(ctx); got != 7 || at.IsZero() {
		t.Errorf("last update %d at %v, want 7 (ids may be reseeded lower) and its time", got, at)
	}
	if err := s.addPairingCode(ctx, "hash", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.addPairingCode(ctx, "old", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.usePairingCode(ctx, "other", 1); ok {
		t.Error("wrong code used")
	}
	if ok, _ := s.usePairingCode(ctx, "old", 1); ok {
		t.Error("expired code used")
	}
	if id, _ := s.owner(ctx); id != 0 {
		t.Errorf("owner %d before pairing", id)
	}
	if ok, _ := s.usePairingCode(ctx, "hash", 42); !ok {
		t.Error("code refused")
	}
	if ok, _ := s.usePairingCode(ctx, "hash", 43); ok {
		t.Error("code used twice")
	}
	if id, _ := s.owner(ctx); id != 42 {
		t.Errorf("owner %d", id)
	}
	if err := s.setAwaiting(ctx, `{"action":"edit"}`); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.awaiting(ctx); v != `{"action":"edit"}` {
		t.Errorf("awaiting %q", v)
	}
	if err := s.setAwaiting(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.awaiting(ctx); v != "" {
		t.Errorf("awaiting %q after clearing", v)
	}
	if err := s.addMessage(ctx, shownMessage{ProposalID: "p1", ChatID: 1, MessageID: 10, PayloadHash: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := s.addMessage(ctx, shownMessage{ProposalID: "p2", ChatID: 1, MessageID: 10, PayloadHash: "h2"}); err != nil {
		t.Fatal(err)
	}
	if ms, _ := s.messages(ctx, "p1"); len(ms) != 0 {
		t.Errorf("a message re-recorded for p2 still shows p1: %+v", ms)
	}
	if ms, _ := s.messages(ctx, "p2"); len(ms) != 1 || ms[0].PayloadHash != "h2" {
		t.Errorf("messages of p2: %+v", ms)
	}
}
