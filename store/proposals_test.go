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

func TestTransitionProposalIsCompareAndSet(t *testing.T) {
	st := openApprovalStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	p := &Proposal{ID: "abcdefghij", Kind: "email", State: "pending", Payload: []byte(`{"b":1}`), PayloadHash: "h1", Created: now, Expires: now.Add(time.Hour)}
	if err := st.Tx(ctx, func(tx *Tx) error { return tx.InsertProposal(p) }); err != nil {
		t.Fatal(err)
	}
	try := func(c ProposalChange) bool {
		var ok bool
		if err := st.Tx(ctx, func(tx *Tx) error { var err error; ok, err = tx.TransitionProposal(c); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	cases := []struct {
		name string
		c    ProposalChange
		want bool
	}{
		{"wrong hash", ProposalChange{ID: p.ID, From: []string{"pending"}, PayloadHash: "h2", To: "approved"}, false},
		{"wrong state", ProposalChange{ID: p.ID, From: []string{"approved"}, PayloadHash: "h1", To: "executing"}, false},
		{"expired", ProposalChange{ID: p.ID, From: []string{"pending"}, PayloadHash: "h1", UnexpiredAt: now.Add(2 * time.Hour), To: "approved"}, false},
		{"first decision", ProposalChange{ID: p.ID, From: []string{"pending", "snoozed"}, PayloadHash: "h1", UnexpiredAt: now, To: "approved", DecidedBy: "api"}, true},
		{"second decision", ProposalChange{ID: p.ID, From: []string{"pending", "snoozed"}, PayloadHash: "h1", To: "rejected"}, false},
	}
	for _, c := range cases {
		if got := try(c.c); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	got, err := st.Proposal(ctx, p.ID)
	if err != nil || got.State != "approved" || got.DecidedBy != "api" || string(got.Payload) != `{"b":1}` {
		t.Errorf("stored %+v %v", got, err)
	}
	if _, err := st.Proposal(ctx, "nope"); err == nil {
		t.Error("unknown id found")
	}
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
