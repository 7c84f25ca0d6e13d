package approval

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

func TestTransitionIsCompareAndSet(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g, err := NewGate(GateOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	p := &Proposal{ID: "abcdefghij", Kind: KindEmail, State: StatePending, Payload: []byte(`{"b":1}`), PayloadHash: "h1", Created: now, Expires: now.Add(time.Hour)}
	if err := st.Tx(ctx, func(tx *store.Tx) error { return inTx(tx).insert(p) }); err != nil {
		t.Fatal(err)
	}
	try := func(c change) bool {
		var ok bool
		if err := st.Tx(ctx, func(tx *store.Tx) error { var err error; ok, err = inTx(tx).transition(c); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	cases := []struct {
		name string
		c    change
		want bool
	}{
		{"wrong hash", change{ID: p.ID, From: []State{StatePending}, PayloadHash: "h2", To: StateApproved}, false},
		{"wrong state", change{ID: p.ID, From: []State{StateApproved}, PayloadHash: "h1", To: StateExecuting}, false},
		{"expired", change{ID: p.ID, From: []State{StatePending}, PayloadHash: "h1", UnexpiredAt: now.Add(2 * time.Hour), To: StateApproved}, false},
		{"first decision", change{ID: p.ID, From: undecided, PayloadHash: "h1", UnexpiredAt: now, To: StateApproved, DecidedBy: "api"}, true},
		{"second decision", change{ID: p.ID, From: undecided, PayloadHash: "h1", To: StateRejected}, false},
	}
	for _, c := range cases {
		if got := try(c.c); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	got, err := g.Get(ctx, p.ID)
	if err != nil || got.State != StateApproved || got.DecidedBy != "api" || string(got.Payload) != `{"b":1}` {
		t.Errorf("stored %+v %v", got, err)
	}
	if _, err := g.records(ctx).get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
}
