package store

import (
	"context"
	"testing"
)

// A database from before memory_messages lost its unused extracted
// column: the messages waiting for extraction stay, the column goes.
func TestUpgradeDropsMemoryMessagesExtracted(t *testing.T) {
	ctx := context.Background()
	s := upgradeFrom(t, 17,
		`INSERT INTO memory_messages (session, text, created) VALUES ('s1', 'my sister moved to Porto', 1), ('s1', 'hello', 2)`,
	)
	texts, err := Collect(ctx, s.DB(), func(sc Scanner) (string, error) {
		var t string
		return t, sc.Scan(&t)
	}, `SELECT text FROM memory_messages ORDER BY id`)
	if err != nil || len(texts) != 2 || texts[0] != "my sister moved to Porto" {
		t.Fatalf("messages after the upgrade: %q, %v", texts, err)
	}
	cols, err := Collect(ctx, s.DB(), func(sc Scanner) (string, error) {
		var name string
		return name, sc.Scan(&name)
	}, `SELECT name FROM pragma_table_info('memory_messages')`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if c == "extracted" {
			t.Fatalf("memory_messages still has extracted: %q", cols)
		}
	}
}
