package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gm "google.golang.org/api/gmail/v1"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/collectors/gmail"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

// TestDaemonKilledBeforeGmailCursorLosesNothing runs the real daemon over
// the Enron mailbox and SIGKILLs it in the middle of the first backfill:
// after some batches of mail are committed and while the rest is fetched
// but not yet stored, so the cursor is not saved. The next daemon finishes
// the sync, and the mail stored, its item events, contacts and threads are
// exactly those of one uninterrupted sync: nothing lost, nothing twice.
func TestDaemonKilledBeforeGmailCursorLosesNothing(t *testing.T) {
	dir := testutil.SharedData(t, "mail/enron/maildir")
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	n, err := fake.LoadMaildir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The reference: one uninterrupted sync in this process.
	refDir := t.TempDir()
	svc := gmailService(t, fake, refDir)
	want := func() string {
		st, err := store.Open(ctx, filepath.Join(refDir, store.FileName), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c, err := gmail.New(gmail.Options{Service: svc, Store: st, BackfillDays: 800000})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Collect(ctx)
		if err != nil || res.Seen != n {
			t.Fatalf("reference sync = %+v, %v", res, err)
		}
		return mailDigest(t, st.DB())
	}()

	// Hold the fetch of one message in the middle of the listing: the
	// other fetchers go on, full batches are committed, the rest waits in
	// memory for the held one, and the cursor with it.
	var ids []string
	err = svc.Users.Messages.List("me").MaxResults(500).Pages(ctx, func(p *gm.ListMessagesResponse) error {
		for _, m := range p.Messages {
			ids = append(ids, m.Id)
		}
		return nil
	})
	if err != nil || len(ids) != n {
		t.Fatalf("listed %d of %d: %v", len(ids), n, err)
	}
	const gets = "/gmail/v1/users/me/messages/"
	held := gets + ids[len(ids)/2]
	fake.InjectFault(fakegoogle.Fault{Method: "GET", Path: held, Delay: time.Hour})

	home := t.TempDir()
	env := []string{
		"OMNIBRAIN_GOOGLE_API_URL=" + fake.URL, "OMNIBRAIN_GOOGLE_TOKEN_URL=" + fake.TokenURL(),
		"OMNIBRAIN_GOOGLE_CLIENT_ID=" + fake.ClientID(), "OMNIBRAIN_GOOGLE_CLIENT_SECRET=" + fake.ClientSecret(),
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("google:\n  gmail_backfill_days: 800000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeGoogleToken(t, fake, home)

	before := fake.CountRequests("GET", gets) // the reference's
	d := startDaemon(t, home, env...)
	client := api.NewUnixClient(filepath.Join(home, api.SocketName))
	collecting := make(chan struct{})
	go func() {
		// Answered by nobody: the daemon dies during this pass.
		defer close(collecting)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		client.Collect(cctx, "gmail")
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		// A request is recorded when answered: every message but the held
		// one has been fetched, and some batch is committed.
		fetched := fake.CountRequests("GET", gets) - before
		if fetched >= n-1 && gmailItems(t, client) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backfill fetched %d of %d messages and stored %d\n%s", fetched, n, gmailItems(t, client), d.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.stop(t, syscall.SIGKILL)
	<-collecting
	fake.ClearFaults()

	st, err := store.Open(ctx, filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := st.Cursor(ctx, gmail.Name)
	var stored int
	st.DB().QueryRow(`SELECT COUNT(*) FROM items WHERE source = 'gmail'`).Scan(&stored)
	st.Close()
	if cur != "" || stored == 0 || stored >= n {
		t.Fatalf("after the kill: cursor %q, %d of %d messages stored; want some stored and no cursor", cur, stored, n)
	}
	t.Logf("killed with %d of %d messages fetched, %d committed, and no cursor", n-1, n, stored)

	d2 := startDaemon(t, home, env...)
	out, stderr, code := runCLI(t, home, "collect", "gmail")
	if code != 0 {
		t.Fatalf("collect after the restart: exit %d\n%s%s", code, out, stderr)
	}
	res, err := client.Collect(ctx, "gmail")
	if err != nil || len(res) != 1 || res[0].State != "ok" || res[0].Stored != 0 || res[0].Detail != "incremental" {
		t.Errorf("a further pass = %+v, %v; want an incremental pass adding nothing", res, err)
	}
	if err := d2.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("daemon exit: %v\n%s", err, d2.stderr.String())
	}

	st, err = store.Open(ctx, filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := mailDigest(t, st.DB()); got != want {
		t.Errorf("after the kill and restart the mail differs from one clean sync:\n%s", firstDiff(got, want))
	}
	if cur, _ := st.Cursor(ctx, gmail.Name); cur == "" {
		t.Error("no cursor after the completed sync")
	}
}

// gmailService is a Gmail client with a fresh token of fake, kept in dir.
func gmailService(t *testing.T, fake *fakegoogle.Server, dir string) *gm.Service {
	t.Helper()
	writeGoogleToken(t, fake, dir)
	conf, err := google.OAuthConfig(config.Google{TokenURL: fake.TokenURL(), ClientID: fake.ClientID(), ClientSecret: config.Secret(fake.ClientSecret())})
	if err != nil {
		t.Fatal(err)
	}
	auth := google.NewAuth(google.AuthOptions{Path: filepath.Join(dir, google.TokenFileName), Config: conf})
	svc, err := google.NewGmail(context.Background(), fake.URL, google.NewHTTPClient(google.ClientOptions{Auth: auth}))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func writeGoogleToken(t *testing.T, fake *fakegoogle.Server, dir string) {
	t.Helper()
	if err := google.ImportToken(filepath.Join(dir, google.TokenFileName), []byte(tokenJSON(fake.IssueToken(24*time.Hour))), time.Now()); err != nil {
		t.Fatal(err)
	}
}

// gmailItems is the number of Gmail items the daemon reports.
func gmailItems(t *testing.T, c *api.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return 0
	}
	for _, s := range st.Items {
		if s.Source == gmail.Source {
			return s.Items
		}
	}
	return 0
}

// mailDigest is everything a Gmail sync derives, as text: the stored
// messages with how many item events each has, the contacts' volumes and
// the threads' counts.
func mailDigest(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT i.external_id, i.content_hash, (SELECT group_concat(kind) FROM item_events e WHERE e.item_id = i.id) FROM items i WHERE i.source = 'gmail' ORDER BY 1`,
		`SELECT address, inbound, outbound FROM contacts ORDER BY 1`,
		`SELECT thread, messages, inbound, outbound, awaiting_reply, owes_reply FROM threads ORDER BY 1`,
		`SELECT COUNT(*), COUNT(DISTINCT message_id) FROM mail_messages`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(g), len(w))
}
