package store

import (
	"strconv"
	"strings"
	"testing"
)

// A home from before migration 11 held one vector per chunk (narrow and
// wide side by side); opening it drops them and queues every item for
// the indexer to embed again in the new layout (search's tests cover the
// re-embedding).
func TestUpgradeDropsTheChunkVectorLayout(t *testing.T) {
	topics := strings.Fields("apples boats candles dolphins engines forests gardens harbours islands jackets")
	var seed []string
	for i, topic := range topics {
		seed = append(seed,
			`INSERT INTO items (id, source, external_id, kind, thread, time, title, body, sender, people, content_hash, created, updated)
			VALUES (`+strconv.Itoa(i+1)+`, 'gmail', 'm`+strconv.Itoa(i)+`', 'email', 't`+strconv.Itoa(i)+`', 0, 'Topic `+topic+`', 'Body about `+topic+`', 'anna@example.com', '[]', '`+strconv.Itoa(i)+`', 0, 0)`,
			`INSERT INTO item_vectors (item_id, chunk, vector, wide) VALUES (`+strconv.Itoa(i+1)+`, 0, zeroblob(768), zeroblob(2052))`)
	}
	seed = append(seed, `DELETE FROM vector_queue`, // the old indexer was done
		`INSERT INTO meta (key, value, updated) VALUES ('vectors.embedder', 'builtin/hash-v1/d192', 0)`)
	st := upgradeFrom(t, 10, seed...)
	count := func(query string) int {
		t.Helper()
		var n int
		if err := st.DB().QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM vector_queue`); n != len(topics) {
		t.Fatalf("%d items queued after the upgrade, want all %d", n, len(topics))
	}
	if n := count(`SELECT COUNT(*) FROM item_vectors`) + count(`SELECT COUNT(*) FROM chunk_vectors`); n != 0 {
		t.Fatalf("%d vectors kept from the old layout", n)
	}
}
