package agent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// nopSearch is only for tests that build tools without searching.
type nopSearch struct{}

func (nopSearch) Search(context.Context, search.Query) ([]search.Hit, error) { return nil, nil }
