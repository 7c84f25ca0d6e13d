package daemon

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/store"
)

// The import API runs the real importer through the real client, and Open
// records the configured owner addresses and VIPs.
func TestImportThroughTheAPI(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default(t.TempDir())
	cfg.Owner.Emails = []string{"Owner@Example.com"}
	cfg.Owner.VIPs = []string{"@board.example"}
	app, err := Open(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	c, stop := api.NewInProcessClient(app.Handler())
	defer stop()

	owners, err := app.Store().OwnerAddresses(ctx)
	if err != nil || !slices.Equal(owners, []string{"owner@example.com"}) {
		t.Fatalf("owner addresses = %v, %v", owners, err)
	}

	fixture, err := filepath.Abs(filepath.Join("..", "collectors", "importer", "testdata", "takeout.mbox"))
	if err != nil {
		t.Fatal(err)
	}
	var events int
	sum, err := c.Import(ctx, api.ImportRequest{Format: "mbox", Path: fixture}, func(api.ImportProgress) { events++ })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Seen != 4 || sum.Added != 2 || sum.Unchanged != 1 || len(sum.Failed) != 1 || sum.Path != fixture || events == 0 {
		t.Fatalf("summary %+v after %d progress events", sum, events)
	}
	// The owner's reply is outbound by its address as well as its label.
	it, err := app.Store().ItemByExternalID(ctx, "mbox", "m2@example.com")
	if err != nil || it.Meta["outbound"] != true {
		t.Fatalf("owner's mail: %+v, %v", it, err)
	}
	if h, ok := app.Health().Get(importerHealth); !ok || h.State != "ok" || h.Counters["imported"] != 2 {
		t.Fatalf("importer health = %+v", h)
	}

	// Mail from the configured VIP domain makes a VIP contact.
	err = app.Store().Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.UpsertMail(&store.Item{Source: "test", ExternalID: "v1", Kind: "email", Time: time.Now()},
			store.Mail{From: store.Address{Email: "ceo@board.example"}, To: []store.Address{{Email: "owner@example.com"}}}, store.UpsertOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if ceo, err := app.Store().Contact(ctx, "ceo@board.example"); err != nil || !ceo.VIP {
		t.Fatalf("vip from config: %+v, %v", ceo, err)
	}

	for _, c2 := range []struct {
		req  api.ImportRequest
		want string
	}{
		{api.ImportRequest{Format: "mbox", Path: "testdata/takeout.mbox"}, "must be absolute"},
		{api.ImportRequest{Format: "mbox", Path: fixture + ".missing"}, "does not exist"},
		{api.ImportRequest{Format: "maildir", Path: fixture}, "not a maildir directory"},
	} {
		if _, err := c.Import(ctx, c2.req, nil); err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("Import(%+v) = %v, want %q", c2.req, err, c2.want)
		}
	}
}
