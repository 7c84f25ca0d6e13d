package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/health"
	fakegh "github.com/omnibrain/omnibrain/internal/fakes/github"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/store"
	"github.com/omnibrain/omnibrain/telegram"
)

// With every integration configured, every component the daemon supervises
// reports into the health model, and `status` serves those reports with
// the item counts per source.
func TestEveryComponentReportsIntoHealth(t *testing.T) {
	gf := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	tg := faketg.New("111222:health-test-token")
	t.Cleanup(tg.Close)
	gh := fakegh.New(fakegh.Options{Token: "ghp_healthtest"})
	t.Cleanup(gh.Close)

	cfg := config.Default(t.TempDir())
	cfg.Google.APIURL, cfg.Google.TokenURL, cfg.Google.AuthURL = gf.URL, gf.TokenURL(), gf.AuthURL()
	cfg.Google.ClientID, cfg.Google.ClientSecret = gf.ClientID(), config.Secret(gf.ClientSecret())
	cfg.Telegram.Token, cfg.Telegram.APIURL, cfg.Telegram.OwnerID = "111222:health-test-token", tg.URL(), 4242
	cfg.GitHub.Token, cfg.GitHub.APIURL = "ghp_healthtest", gh.URL()
	cfg.LLM.Provider = "none"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tok := gf.IssueToken(time.Hour)
	data := `{"access_token":"` + tok.AccessToken + `","refresh_token":"` + tok.RefreshToken + `","expiry":"` + tok.Expiry.Format(time.RFC3339) + `"}`
	if err := google.ImportToken(cfg.Path(google.TokenFileName), []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app, err := Open(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Store().UpsertItems(ctx, []*store.Item{
		{Source: "mbox", ExternalID: "<a@x>", Kind: "mail", Time: time.Now(), Title: "a"},
		{Source: "mbox", ExternalID: "<b@x>", Kind: "mail", Time: time.Now(), Title: "b"},
		{Source: "jsonl", ExternalID: "n1", Kind: "note", Time: time.Now(), Title: "c"},
	}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()

	// Components report as they start; some (the bot) report under the
	// name of the part they serve.
	reportsAs := map[string]string{"notify": telegram.HealthName}
	want := []string{"api", "store", "search"}
	for _, c := range app.components {
		name := c.Name
		if alias, ok := reportsAs[name]; ok {
			name = alias
		}
		want = append(want, name)
	}
	if len(app.components) < 10 {
		t.Fatalf("only %d supervised components with every integration configured: %v", len(app.components), want)
	}
	t.Logf("supervised and reporting: %v", want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var missing []string
		for _, name := range want {
			if c, ok := app.Health().Get(name); !ok || c.State == health.Starting && c.Detail == "" {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("components that never reported: %v\n%+v", missing, app.Health().Snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}

	c, stop := api.NewInProcessClient(app.Handler())
	defer stop()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Daemon || st.PID == 0 || st.TotalItems != 3 || st.DiskBytes == 0 {
		t.Fatalf("status = %+v", st)
	}
	counts := map[string]int64{}
	for _, sc := range st.Items {
		counts[sc.Source] = sc.Items
	}
	if counts["mbox"] != 2 || counts["jsonl"] != 1 {
		t.Fatalf("item counts = %+v", st.Items)
	}
	listed := map[string]bool{}
	for _, comp := range st.Components {
		listed[comp.Name] = true
	}
	for _, name := range want {
		if !listed[name] {
			t.Errorf("status lacks component %s", name)
		}
	}
	for _, k := range []string{"telegram", "google", "github", "llm"} {
		if _, ok := st.Configured[k]; !ok {
			t.Errorf("status.configured lacks %s: %v", k, st.Configured)
		}
	}
	if !st.Configured["telegram"] || !st.Configured["google"] || !st.Configured["github"] || st.Configured["llm"] {
		t.Errorf("configured = %v", st.Configured)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
