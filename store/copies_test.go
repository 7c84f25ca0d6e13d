package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestKeepStoredRule(t *testing.T) {
	whole := copyQuality{length: 500}
	for _, tc := range []struct {
		name             string
		stored, incoming copyQuality
		keep             string // substring of the reason; "" to replace
	}{
		{"same", whole, whole, ""},
		{"longer new copy", whole, copyQuality{length: 900}, ""},
		{"cut in the body", whole, copyQuality{length: 120}, "shorter (120 characters, the stored one 500)"},
		{"cut in the headers", whole, copyQuality{damaged: "it ends inside its headers", length: 900}, "damaged (it ends inside its headers)"},
		{"whole after damaged", copyQuality{damaged: "x", length: 900}, copyQuality{length: 100}, ""},
		{"undated", whole, copyQuality{undated: true, length: 900}, "no date of its own"},
		{"dated after undated", copyQuality{undated: true, length: 900}, copyQuality{length: 10}, ""},
		{"both damaged, shorter", copyQuality{damaged: "a", length: 500}, copyQuality{damaged: "b", length: 400}, "shorter"},
	} {
		got := keepStored(tc.stored, tc.incoming)
		if (tc.keep == "") != (got == "") || !strings.Contains(got, tc.keep) {
			t.Errorf("%s: keepStored = %q, want %q", tc.name, got, tc.keep)
		}
	}
}

func message(source, id, msgID, body string) *Item {
	return &Item{Source: source, ExternalID: id, Kind: "email", Time: time.Date(2002, 5, 1, 9, 0, 0, 0, time.UTC),
		Title: "Quarterly numbers", Body: body, Sender: "anna@example.com", MessageID: msgID,
		Meta: map[string]any{"message_id": msgID}}
}

func upsertOne(t *testing.T, s *Store, it *Item, opts UpsertOptions) UpsertResult {
	t.Helper()
	var res UpsertResult
	err := s.Tx(context.Background(), func(tx *Tx) error {
		var err error
		res, err = tx.UpsertItem(it, opts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func countItems(t testing.TB, s *Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A damaged or shorter copy of a stored message, from its own source or
// another, never replaces it and says why; a better one does; every
// source's id finds the one item.
func TestUpsertKeepsTheBetterCopyOfAMessage(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	full := "The numbers for the quarter are final. Revenue grew by four percent and costs fell."
	first := upsertOne(t, s, message("maildir", "<q1@example.com>", "<q1@example.com>", full), UpsertOptions{})

	cut := upsertOne(t, s, message("maildir", "<q1@example.com>", "<q1@example.com>", full[:40]), UpsertOptions{})
	if cut.ID != first.ID || cut.Changed || !strings.Contains(cut.Kept, "shorter") {
		t.Fatalf("a copy cut mid-body: %+v, want the stored copy kept as the longer", cut)
	}
	damaged := message("mbox", "<Q1@example.com>", "<Q1@EXAMPLE.com>", full+" Extra words the cut headers let in.")
	damaged.Meta["damaged"] = "it ends inside its headers"
	res := upsertOne(t, s, damaged, UpsertOptions{})
	if res.ID != first.ID || res.Changed || !strings.Contains(res.Kept, "damaged") {
		t.Fatalf("a damaged copy from another source: %+v, want the stored copy kept", res)
	}
	if it, err := s.Item(ctx, first.ID); err != nil || it.Body != full || it.Source != "maildir" {
		t.Fatalf("stored item now %+v, %v; want the whole maildir copy", it, err)
	}
	if n := countItems(t, s); n != 1 {
		t.Fatalf("%d items for one message", n)
	}
	if it, err := s.ItemByExternalID(ctx, "mbox", "<Q1@example.com>"); err != nil || it.ID != first.ID {
		t.Fatalf("the mbox copy's id finds %+v, %v", it, err)
	}

	longer := message("jsonl", "q1-doc", "q1@example.com", full+" A postscript only the archive kept.")
	res = upsertOne(t, s, longer, UpsertOptions{})
	if res.ID != first.ID || !res.Changed || res.Kept != "" {
		t.Fatalf("a longer whole copy: %+v, want it to replace the stored one", res)
	}
	if it, _ := s.Item(ctx, first.ID); it.Body != longer.Body || it.Source != "maildir" {
		t.Fatalf("after the better copy: source %s, body %q", it.Source, it.Body)
	}
}

// A collector's copy of an imported message becomes the item's name, so
// that a reply goes through Gmail; the archive's name stays an alias.
// Deleting a name leaves the item to its other names.
func TestCollectorCopyNamesTheMessageAndDeletesLeaveTheRest(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	body := "Lunch on Friday at noon?"
	imported := upsertOne(t, s, message("mbox", "<l1@example.com>", "<l1@example.com>", body), UpsertOptions{})
	gm := message("gmail", "18c0ffee", "<l1@example.com>", body)
	gm.Thread = "18c0ff00"
	// Recent mail from another archive is recorded as an event too, but it
	// does not name the message: it is not where the message lives.
	upsertOne(t, s, message("maildir", "<l1@example.com>", "<l1@example.com>", body), UpsertOptions{Event: true, EventKind: EventImported})
	if it, err := s.Item(ctx, imported.ID); err != nil || it.Source != "mbox" {
		t.Fatalf("after a recent archive copy: %+v, %v; want the mbox name kept", it, err)
	}
	res := upsertOne(t, s, gm, UpsertOptions{Event: true, Collected: true})
	if res.ID != imported.ID || res.Created {
		t.Fatalf("the Gmail copy: %+v, want the imported item", res)
	}
	it, err := s.ItemByExternalID(ctx, "gmail", "18c0ffee")
	if err != nil || it.ID != imported.ID || it.Source != "gmail" || it.Thread != "18c0ff00" {
		t.Fatalf("by the Gmail id: %+v, %v; want the item named by Gmail in Gmail's thread", it, err)
	}
	if it, err := s.ItemByExternalID(ctx, "mbox", "<l1@example.com>"); err != nil || it.ID != imported.ID {
		t.Fatalf("by the archive id: %+v, %v", it, err)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		if ok, err := tx.DeleteItem("gmail", "18c0ffee"); err != nil || !ok {
			return fmt.Errorf("delete the Gmail name: %v, %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if it, err := s.Item(ctx, imported.ID); err != nil || (it.Source != "mbox" && it.Source != "maildir") {
		t.Fatalf("after Gmail deleted it: %+v, %v; want an archive's copy to remain", it, err)
	}
	for _, src := range []string{"maildir", "mbox"} {
		err = s.Tx(ctx, func(tx *Tx) error {
			ok, err := tx.DeleteItem(src, "<l1@example.com>")
			if err != nil || !ok {
				return fmt.Errorf("delete the %s name: %v, %v", src, ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countItems(t, s); n != 0 {
		t.Fatalf("%d items after every name was deleted", n)
	}
}

// A database from before Message-IDs were kept with items, holding one
// message three times (an mbox, a maildir, a cut copy) and another once:
// opening it merges the copies into the best, moves what named the others
// (triage) to it, and every old id still finds it.
func TestUpgradeMergesCopiesOfOneMessage(t *testing.T) {
	row := func(id int, source, body, meta string) string {
		return fmt.Sprintf(`INSERT INTO items (id, source, external_id, kind, time, title, body, meta, content_hash, created, updated)
			VALUES (%d, '%s', '<m1@example.com>', 'email', 0, 'Hello', '%s', '%s', '%d', 0, 0);
			INSERT INTO items_fts (rowid, title, body, people) VALUES (%d, 'Hello', '%s', '[]')`, id, source, body, meta, id, id, body)
	}
	s := upgradeFrom(t, 20,
		row(1, "mbox", "Hello there, the whole text of the message.", `{"message_id":"m1@example.com"}`),
		row(2, "maildir", "Hello there, the whole text of the message, and more of it.", `{"message_id":"M1@example.com","damaged":"it ends inside its headers"}`),
		row(3, "jsonl", "Hello there, the whole text of the message. And its end.", `{"message_id":"<m1@example.com>"}`),
		row(4, "jsonl2", "Hello there", `{"message_id":"m1@example.com"}`),
		`INSERT INTO items (id, source, external_id, kind, time, title, body, meta, content_hash, created, updated)
			VALUES (5, 'mbox', '<other@example.com>', 'email', 0, 'Other', 'Another message.', '{"message_id":"other@example.com"}', '5', 0, 0)`,
		`INSERT INTO items_fts (rowid, title, body, people) VALUES (5, 'Other', 'Another message.', '[]')`,
		`INSERT INTO triage (item_id, decision, category, score, level, deadline, factors, reason, model, tokens, proposal_id, item_time, created, updated)
			VALUES (4, 'ignore', 'fyi', 0.1, 'silent', 0, '[]', '', '', 0, 'p1', 0, 0, 0)`,
		`INSERT INTO proposals (id, kind, state, payload, payload_hash, item_id, created, expires, updated) VALUES ('p1', 'reply', 'pending', '{}', 'h', 2, 0, 0, 0)`,
		`INSERT INTO item_chains (subject, chain, stage, at, evidence) VALUES ('item:2', 'mail', 'triaged', 0, '[2, 5]'), ('item:3', 'mail', 'triaged', 1, '[3]'), ('item:2', 'mail', 'drafted', 2, '[]')`,
		`INSERT INTO observations (kind, key, summary, confidence, evidence, first_seen, last_seen) VALUES ('recurring_sender', 'a', 's', 0.5, '[1, 4, 5]', 0, 0)`,
		`INSERT INTO agent_runs (id, status, state, created, updated, kind, subject) VALUES ('r1', 'done', '{}', 0, 0, 'draft_reply', 'item:1')`,
		`INSERT INTO threads (thread, first_time, last_time, last_item_id, updated) VALUES ('t', 0, 0, 1, 0)`,
		`INSERT INTO item_vectors (item_id, vector) VALUES (1, x'00'), (3, x'00'), (5, x'00')`,
		`INSERT INTO meeting_preps (event_id, start, item_id, text, context, created)
			VALUES ('ev', 0, 5, 'prep', '{"mail":[2,5],"threads":["t"],"last_meeting":4,"cited":[1]}', 0)`,
		`INSERT INTO chat_sessions (id, created, updated) VALUES ('s', 0, 0)`,
		`INSERT INTO chat_messages (session, role, content, citations, created) VALUES ('s', 'assistant', 'a [1] [2]',
			'[{"n":1,"id":"<m1@example.com>","item_id":2,"title":"Hello"},{"n":2,"id":"<other@example.com>","item_id":5,"title":"Other"}]', 0)`,
	)
	ctx := context.Background()
	if n := countItems(t, s); n != 2 {
		t.Fatalf("%d items after the merge, want 2", n)
	}
	it, err := s.ItemByExternalID(ctx, "mbox", "<m1@example.com>")
	if err != nil || it.ID != 3 || !strings.HasSuffix(it.Body, "And its end.") {
		t.Fatalf("merged item %+v, %v: want item 3, the longest whole copy", it, err)
	}
	for _, src := range []string{"maildir", "jsonl2"} {
		if got, err := s.ItemByExternalID(ctx, src, "<m1@example.com>"); err != nil || got.ID != 3 {
			t.Errorf("the %s copy's id finds %+v, %v", src, got, err)
		}
	}
	// What named a dropped copy names the item that stays.
	for _, c := range []struct{ query, want string }{
		{`SELECT item_id FROM triage`, "3"},
		{`SELECT item_id FROM proposals`, "3"},
		{`SELECT group_concat(subject || ' ' || stage || ' ' || evidence, '; ') FROM (SELECT * FROM item_chains ORDER BY at)`, "item:3 triaged [3]; item:3 drafted []"},
		{`SELECT evidence FROM observations`, "[3,3,5]"},
		{`SELECT context FROM meeting_preps`, `{"mail":[3,5],"threads":["t"],"last_meeting":3,"cited":[3]}`},
		{`SELECT citations FROM chat_messages`, `[{"n":1,"id":"<m1@example.com>","item_id":3,"title":"Hello"},{"n":2,"id":"<other@example.com>","item_id":5,"title":"Other"}]`},
		{`SELECT subject FROM agent_runs`, "item:3"},
		{`SELECT last_item_id FROM threads`, "3"},
		{`SELECT group_concat(item_id) FROM (SELECT item_id FROM item_vectors ORDER BY item_id)`, "3,5"},
		{`SELECT group_concat(rowid) FROM (SELECT rowid FROM items_fts WHERE items_fts MATCH 'hello OR another' ORDER BY rowid)`, "3,5"},
	} {
		var got string
		if err := s.DB().QueryRow(c.query).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s = %q, %v; want %q", c.query, got, err, c.want)
		}
	}
	if items, err := s.ItemsByExternalID(ctx, "<m1@example.com>"); err != nil || len(items) != 1 || items[0].ID != 3 {
		t.Errorf("explain's lookup of the id finds %v, %v; want item 3 once", items, err)
	}
	// Reopening does not merge again, and new copies never duplicate.
	s2, err := Open(ctx, s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	upsertOne(t, s2, message("gmail", "abc", "<m1@example.com>", "Hello"), UpsertOptions{})
	if n := countItems(t, s2); n != 2 {
		t.Fatalf("%d items after a Gmail copy, want 2", n)
	}
}

// FuzzMergeCopies stores copies of a few messages in any order, from any
// source, as upserts or as the duplicates an old database held, and checks
// that each message is one item holding a copy no other copy beats.
func FuzzMergeCopies(f *testing.F) {
	f.Add(uint64(1), uint8(6), false)
	f.Add(uint64(7), uint8(12), true)
	f.Add(uint64(42), uint8(3), true)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, asOldRows bool) {
		rng := rand.New(rand.NewPCG(seed, 9))
		s := openTest(t)
		ctx := context.Background()
		const text = "Alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november."
		best := map[string]copyQuality{}
		sources := []string{"mbox", "maildir", "jsonl", "gmail"}
		// Upserts one by one, or in batches that look ahead (LookAhead)
		// and may hold several copies of one message.
		batched := !asOldRows && rng.IntN(2) == 0
		var batch []*Item
		flush := func() {
			if _, err := s.UpsertItems(ctx, batch, UpsertOptions{}); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
		for i := range int(n%24) + 1 {
			msg := fmt.Sprintf("m%d@example.com", rng.IntN(3))
			// A source's id always names the same message.
			it := message(sources[rng.IntN(len(sources))], fmt.Sprintf("%s/%d", msg, rng.IntN(2)), "<"+msg+">", text[:1+rng.IntN(len(text)-1)])
			if rng.IntN(3) == 0 {
				it.Meta["damaged"] = "cut"
			}
			if rng.IntN(4) == 0 {
				it.Meta["date_uncertain"] = "guessed"
			}
			q := qualityOf(it)
			if b, ok := best[msg]; !ok || better(q, b) {
				best[msg] = q
			}
			if asOldRows {
				// The duplicates an old database could hold, merged below.
				damaged, _ := it.Meta["damaged"].(string)
				undated, _ := it.Meta["date_uncertain"].(string)
				r, err := s.DB().Exec(`INSERT INTO items (source, external_id, time, title, body, meta, message_id, content_hash, created, updated)
					VALUES (?, ?, 0, ?, ?, json_object('damaged', ?, 'date_uncertain', ?), ?, ?, 0, 0)`, it.Source, fmt.Sprintf("old%d", i), it.Title, it.Body,
					damaged, undated, NormalizeMessageID(msg), fmt.Sprint(i))
				if err != nil {
					t.Fatal(err)
				}
				id, _ := r.LastInsertId()
				if _, err := s.DB().Exec(`INSERT INTO items_fts (rowid, title, body, people) VALUES (?, ?, ?, '[]')`, id, it.Title, it.Body); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if batched {
				if batch = append(batch, it); rng.IntN(4) == 0 {
					flush()
				}
				continue
			}
			upsertOne(t, s, it, UpsertOptions{Event: rng.IntN(2) == 0})
		}
		if len(batch) > 0 {
			flush()
		}
		if asOldRows {
			if _, err := s.mergeDuplicateMessages(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := countItems(t, s); n != len(best) {
			t.Fatalf("%d items for %d messages", n, len(best))
		}
		for msg, want := range best {
			var got copyQuality
			err := s.DB().QueryRow(`SELECT COALESCE(json_extract(meta, '$.damaged'), ''), COALESCE(json_extract(meta, '$.date_uncertain'), '') != '',
				length(title) + length(body) + length(quoted) FROM items WHERE message_id = ?`, msg).Scan(&got.damaged, &got.undated, &got.length)
			if err != nil {
				t.Fatal(err)
			}
			if better(want, got) {
				t.Fatalf("<%s> holds %+v, but a copy %+v was better", msg, got, want)
			}
		}
	})
}

// The lookups an upsert and the merge make use indexes: a scan of the
// items table per imported message made an import quadratic.
func TestCopyLookupsUseIndexes(t *testing.T) {
	s := openTest(t)
	for name, q := range map[string]string{"storedCopy": storedCopyQuery, "copies": copiesQuery,
		"lookAheadItems": inList(lookAheadItems, 2), "lookAheadAliases": inList(lookAheadAliases, 2), "lookAheadMessages": inList(lookAheadMessages, 3)} {
		plan, err := Collect(context.Background(), s.DB(), func(r Scanner) (string, error) {
			var id, parent, unused int
			var detail string
			err := r.Scan(&id, &parent, &unused, &detail)
			return detail, err
		}, `EXPLAIN QUERY PLAN `+q, "mbox", "<a@example.com>", "a@example.com")
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN (subquery") {
				t.Errorf("%s: %q in its plan %q", name, step, plan)
			}
		}
	}
}

// BenchmarkMergeCopiesOnUpgrade opens an old database of 20,000 mails in
// which 4,000 messages are stored twice (an mbox and a maildir import of
// one mailbox), beside one without copies: the difference is the one-off
// merge.
func BenchmarkMergeCopiesOnUpgrade(b *testing.B) {
	for _, bc := range []struct {
		name   string
		copies int
	}{{"none", 0}, {"4000-copies", 4000}} {
		b.Run(bc.name, func(b *testing.B) {
			first := 20000 - bc.copies
			seed := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000),
				m(i, src, msg) AS (SELECT i, CASE WHEN i > %[1]d THEN 'maildir' ELSE 'mbox' END, 'm' || (CASE WHEN i > %[1]d THEN i - %[1]d ELSE i END) FROM n)
				INSERT INTO items (id, source, external_id, kind, time, title, body, meta, content_hash, created, updated)
				SELECT i, src, msg, 'email', i, 'Subject ' || i, 'Body of the message ' || msg, json_object('message_id', msg || '@example.com'), i, 0, 0 FROM m`, first)
			for range b.N {
				s := upgradeFrom(b, 20, seed, `INSERT INTO items_fts (rowid, title, body, people) SELECT id, title, body, people FROM items`,
					`INSERT INTO notifications (key, level, created, item_id) SELECT 'k' || id, 'fyi', 0, id FROM items WHERE id % 10 = 0`)
				b.StopTimer()
				if n := countItems(b, s); n != first {
					b.Fatalf("%d items after the merge, want %d", n, first)
				}
				s.Close()
				b.StartTimer()
			}
		})
	}
}
