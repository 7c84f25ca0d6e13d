package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func openApprovalStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestTelegramStateHelpers(t *testing.T) {
	st := openApprovalStore(t)
	ctx := context.Background()
	if id, at, err := st.TelegramLastUpdate(ctx); err != nil || id != 0 || !at.IsZero() {
		t.Errorf("last update before any: %d at %v, %v", id, at, err)
	}
	for _, id := range []int64{5, 9, 7} {
		if err := st.SetTelegramLastUpdate(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got, at, _ := st.TelegramLastUpdate(ctx); got != 7 || at.IsZero() {
		t.Errorf("last update %d at %v, want 7 (ids may be reseeded lower) and its time", got, at)
	}
	if err := st.AddPairingCode(ctx, "hash", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.UsePairingCode(ctx, "other", 1); ok {
		t.Error("wrong code used")
	}
	if ok, _ := st.UsePairingCode(ctx, "hash", 42); !ok {
		t.Error("code refused")
	}
	if ok, _ := st.UsePairingCode(ctx, "hash", 43); ok {
		t.Error("code used twice")
	}
	if id, _ := st.TelegramOwner(ctx); id != 42 {
		t.Errorf("owner %d", id)
	}
}
