package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// One message reaches the store by several routes: an mbox and a maildir
// of the same mailbox, a Takeout import and the Gmail collector, a JSONL
// line that names its Message-ID. It is one item: its Message-ID (the
// message_id column) finds it whatever the source, and the other sources'
// ids are aliases of it (item_aliases). Copies differ when one is damaged
// (a file cut inside its headers or in the middle of its body); the store
// keeps the better one (keepStored).

// NormalizeMessageID is the form Message-IDs are compared in: without
// angle brackets and surrounding space, lower-cased.
func NormalizeMessageID(id string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(id), "<> \t"))
}

// copyQuality is what decides between two copies of one message.
type copyQuality struct {
	damaged string // why the copy is damaged (meta "damaged"); "" when whole
	undated bool   // its date is a guess (meta "date_uncertain")
	length  int    // characters of its title, body and quoted text
}

func qualityOf(it *Item) copyQuality {
	q := copyQuality{length: utf8.RuneCountInString(it.Title) + utf8.RuneCountInString(it.Body) + utf8.RuneCountInString(it.Quoted)}
	q.damaged, _ = it.Meta["damaged"].(string)
	if v, _ := it.Meta["date_uncertain"].(string); v != "" {
		q.undated = true
	}
	return q
}

// keepStored says why the stored copy of a message stays instead of a new
// copy, or "" when the new one may replace it. The rule, in order: a whole
// copy beats a damaged one (cut inside its headers, a multipart without
// its closing boundary, a broken encoding); a copy with a date of its own
// beats one dated by a guess; the longer text beats the shorter (a copy
// cut in the middle of its body is shorter). Otherwise the new copy may
// replace the stored one (UpsertItem: a copy under the item's own source
// and id does, with its new labels; another source's copy only when it is
// better).
func keepStored(stored, incoming copyQuality) string {
	switch {
	case stored.damaged == "" && incoming.damaged != "":
		return "the new copy is damaged (" + incoming.damaged + ")"
	case stored.damaged != "" && incoming.damaged == "":
		return ""
	case !stored.undated && incoming.undated:
		return "the new copy has no date of its own"
	case stored.undated && !incoming.undated:
		return ""
	case incoming.length < stored.length:
		return fmt.Sprintf("the new copy is shorter (%d characters, the stored one %d)", incoming.length, stored.length)
	}
	return ""
}

// better reports whether a is a strictly better copy than b.
func better(a, b copyQuality) bool {
	return keepStored(b, a) == "" && keepStored(a, b) != ""
}

// storedItem is the stored copy an upsert meets.
type storedItem struct {
	id      int64
	own     bool // found by the upsert's own source and id
	source  string
	extID   string
	thread  string
	hash    string
	quality copyQuality
}

// copyColumns are what storedCopy and mergeMessage read of a stored copy.
const copyColumns = `i.id, i.source, i.external_id, i.thread, i.content_hash,
	COALESCE(json_extract(i.meta, '$.damaged'), ''), COALESCE(json_extract(i.meta, '$.date_uncertain'), '') != '',
	length(i.title) + length(i.body) + length(i.quoted)`

// storedCopyQuery finds the item an upsert is a copy of: by its source and
// id (?1, ?2), then as an alias, then by its Message-ID (?3), in one query
// (an import asks it for every message). Saying that message_id is not empty lets
// SQLite use the partial index: without it every upsert scanned the table.
const storedCopyQuery = `SELECT * FROM (SELECT 1, ` + copyColumns + ` FROM items i WHERE i.source = ?1 AND i.external_id = ?2)
	UNION ALL SELECT * FROM (SELECT 0, ` + copyColumns + ` FROM item_aliases a JOIN items i ON i.id = a.item_id WHERE a.source = ?1 AND a.external_id = ?2)
	UNION ALL SELECT * FROM (SELECT 0, ` + copyColumns + ` FROM items i WHERE i.message_id = ?3 AND i.message_id != '' ORDER BY i.id LIMIT 1)
	LIMIT 1`

// copiesQuery lists the copies of one Message-ID (?1), oldest first.
const copiesQuery = `SELECT 0, ` + copyColumns + ` FROM items i WHERE i.message_id = ?1 AND i.message_id != '' ORDER BY i.id`

func scanStoredItem(r Scanner) (storedItem, error) {
	var s storedItem
	err := r.Scan(&s.own, &s.id, &s.source, &s.extID, &s.thread, &s.hash, &s.quality.damaged, &s.quality.undated, &s.quality.length)
	return s, err
}

// storedCopy finds the item an upsert is a copy of (storedCopyQuery);
// sql.ErrNoRows when none, without asking when LookAhead found that
// nothing stored is named by the item's id or Message-ID.
func (t *Tx) storedCopy(source, externalID, messageID string) (storedItem, error) {
	own, msg := copyKey{source, externalID}, copyKey{"", messageID}
	isNew := t.absent[own] && (messageID == "" || t.absent[msg])
	// What this upsert stores names an item from now on.
	delete(t.absent, own)
	delete(t.absent, msg)
	if isNew {
		return storedItem{}, sql.ErrNoRows
	}
	return scanStoredItem(t.QueryRow(storedCopyQuery, source, externalID, messageID))
}

// The look-ahead's queries; inList gives "(?)" its n placeholders.
const (
	lookAheadItems    = `SELECT external_id FROM items WHERE source = ? AND external_id IN (?)`
	lookAheadAliases  = `SELECT external_id FROM item_aliases WHERE source = ? AND external_id IN (?)`
	lookAheadMessages = `SELECT message_id FROM items WHERE message_id IN (?) AND message_id != ''`
)

func inList(query string, n int) string {
	return strings.Replace(query, "(?)", "("+Placeholders(n)+")", 1)
}

// copyKey is what finds a stored copy: a source and its id, or a
// Message-ID (source "").
type copyKey struct{ source, id string }

// lookAheadChunk bounds the ids one look-ahead query binds.
const lookAheadChunk = 500

// LookAhead finds out, in a few queries, which of the items about to be
// upserted in this transaction name nothing stored yet (by source and id,
// alias or Message-ID), so that their upserts skip the copy lookup. SQLite
// re-plans storedCopyQuery at every execution (its plan depends on the
// bound values through the partial Message-ID index), about 150 µs an
// item: a fifth of an import's CPU time. Each upsert then forgets the
// keys of what it stored, so a second copy in the same batch is looked up.
func (t *Tx) LookAhead(items []*Item) error {
	absent := make(map[copyKey]bool, 2*len(items))
	bySource := map[string][]any{}
	var msgIDs []any
	for _, it := range items {
		absent[copyKey{it.Source, it.ExternalID}] = true
		bySource[it.Source] = append(bySource[it.Source], it.ExternalID)
		if m := NormalizeMessageID(it.MessageID); m != "" {
			absent[copyKey{"", m}] = true
			msgIDs = append(msgIDs, m)
		}
	}
	found := func(source string) func(Scanner) error {
		return func(r Scanner) error {
			var id string
			if err := r.Scan(&id); err != nil {
				return err
			}
			delete(absent, copyKey{source, id})
			return nil
		}
	}
	for source, ids := range bySource {
		for from := 0; from < len(ids); from += lookAheadChunk {
			chunk := ids[from:min(len(ids), from+lookAheadChunk)]
			args := append([]any{source}, chunk...)
			for _, q := range []string{lookAheadItems, lookAheadAliases} {
				if err := Each(t.ctx, t, found(source), inList(q, len(chunk)), args...); err != nil {
					return fmt.Errorf("look up stored copies: %w", err)
				}
			}
		}
	}
	for from := 0; from < len(msgIDs); from += lookAheadChunk {
		chunk := msgIDs[from:min(len(msgIDs), from+lookAheadChunk)]
		if err := Each(t.ctx, t, found(""), inList(lookAheadMessages, len(chunk)), chunk...); err != nil {
			return fmt.Errorf("look up stored copies: %w", err)
		}
	}
	t.absent = absent
	return nil
}

// rename records that source and externalID also name the stored item. A
// collector's copy (takeOver) becomes the item's own name and thread, the
// old name an alias: replies and label changes then reach the message
// where it lives.
func (t *Tx) rename(st storedItem, source, externalID, thread string, takeOver bool) error {
	if !takeOver {
		_, err := t.Exec(`INSERT OR IGNORE INTO item_aliases (source, external_id, item_id) VALUES (?, ?, ?)`, source, externalID, st.id)
		return err
	}
	if _, err := t.Exec(`DELETE FROM item_aliases WHERE source = ? AND external_id = ?`, source, externalID); err != nil {
		return err
	}
	if _, err := t.Exec(`INSERT OR IGNORE INTO item_aliases (source, external_id, item_id) VALUES (?, ?, ?)`, st.source, st.extID, st.id); err != nil {
		return err
	}
	_, err := t.Exec(`UPDATE items SET source = ?, external_id = ?, thread = ? WHERE id = ?`, source, externalID, thread, st.id)
	return err
}

// itemRefs are the columns outside items that name an item by its id,
// which a merge moves to the item that stays. Where the item that stays
// has a row of its own (a triage decision, a mail row), that row wins and
// the dropped item's goes with it.
var itemRefs = []struct{ table, column string }{
	{"triage", "item_id"},
	{"mail_messages", "item_id"},
	{"reply_times", "item_id"},
	{"notifications", "item_id"},
	{"proposals", "item_id"},
	{"followups", "item_id"},
	{"meeting_preps", "item_id"},
	{"item_events", "item_id"},
	{"threads", "last_item_id"},
}

// itemLists are JSON arrays of item ids, at path in column (evidence, what
// a meeting prep drew on): a merge rewrites the dropped item's id to the
// one that stays.
var itemLists = []struct{ table, column, path string }{
	{"item_chains", "evidence", "$"},
	{"observations", "evidence", "$"},
	{"meeting_preps", "context", "$.mail"},
	{"meeting_preps", "context", "$.cited"},
}

// itemFields are single item ids at path in a JSON column.
var itemFields = []struct{ table, column, path string }{
	{"meeting_preps", "context", "$.last_meeting"},
}

// itemCitations are JSON arrays of objects that name an item by item_id:
// the citations of chat answers.
var itemCitations = []struct{ table, column string }{
	{"chat_messages", "citations"},
}

// itemSubjects are columns naming an item as "item:<id>" (graph.ItemSubject):
// an item's lifecycle and its background runs.
var itemSubjects = []string{"item_chains", "agent_runs"}

// repoint makes everything that names the item from name the item to.
func (t *Tx) repoint(from, to int64) error {
	for _, ref := range itemRefs {
		if _, err := t.Exec(`UPDATE OR IGNORE `+ref.table+` SET `+ref.column+` = ? WHERE `+ref.column+` = ?`, to, from); err != nil {
			return fmt.Errorf("%s: %w", ref.table, err)
		}
	}
	for _, l := range itemLists {
		_, err := t.Exec(`UPDATE `+l.table+` SET `+l.column+` = json_set(`+l.column+`, ?3,
				json((SELECT json_group_array(CASE WHEN value = ?1 THEN ?2 ELSE value END) FROM json_each(`+l.column+`, ?3))))
			WHERE EXISTS (SELECT 1 FROM json_each(`+l.column+`, ?3) WHERE value = ?1)`, from, to, l.path)
		if err != nil {
			return fmt.Errorf("%s: %w", l.table, err)
		}
	}
	for _, f := range itemFields {
		_, err := t.Exec(`UPDATE `+f.table+` SET `+f.column+` = json_set(`+f.column+`, ?3, ?2) WHERE json_extract(`+f.column+`, ?3) = ?1`, from, to, f.path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.table, err)
		}
	}
	for _, c := range itemCitations {
		_, err := t.Exec(`UPDATE `+c.table+` SET `+c.column+` = json((SELECT json_group_array(
				CASE WHEN json_extract(value, '$.item_id') = ?1 THEN json_set(value, '$.item_id', ?2) ELSE json(value) END) FROM json_each(`+c.column+`)))
			WHERE EXISTS (SELECT 1 FROM json_each(`+c.column+`) WHERE json_extract(value, '$.item_id') = ?1)`, from, to)
		if err != nil {
			return fmt.Errorf("%s: %w", c.table, err)
		}
	}
	for _, table := range itemSubjects {
		// A stage the item that stays reached too keeps its own record.
		if _, err := t.Exec(`UPDATE OR IGNORE `+table+` SET subject = ? WHERE subject = ?`, subjectOf(to), subjectOf(from)); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
		if _, err := t.Exec(`DELETE FROM `+table+` WHERE subject = ?`, subjectOf(from)); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return nil
}

// subjectOf is graph.ItemSubject (graph imports store, not the reverse).
func subjectOf(id int64) string { return "item:" + strconv.FormatInt(id, 10) }

// metaMessagesMerged is set once the copies of messages stored before
// items had Message-IDs (migration 21) are merged.
const metaMessagesMerged = "items.messages_merged"

// mergeOnce merges the duplicate messages of an upgraded database, once:
// from then on UpsertItem never makes one.
func (s *Store) mergeOnce(ctx context.Context) error {
	if done, err := s.Meta(ctx, metaMessagesMerged); err != nil || done != "" {
		return err
	}
	n, err := s.mergeDuplicateMessages(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("merged copies of the same messages", "items", n)
	}
	return s.Tx(ctx, func(tx *Tx) error { return tx.SetMeta(metaMessagesMerged, s.now().UTC().Format(time.RFC3339)) })
}

// mergeDuplicateMessages merges the items that are copies of one message
// (same Message-ID) into the best copy (keepStored; the first stored on a
// tie): the others' sources and ids become its aliases, what named them
// names it, and they are deleted. It returns how many items it merged
// away.
func (s *Store) mergeDuplicateMessages(ctx context.Context) (int, error) {
	groups, err := Collect(ctx, s.db, Value[string],
		`SELECT message_id FROM items WHERE message_id != '' GROUP BY message_id HAVING COUNT(*) > 1`)
	if err != nil {
		return 0, fmt.Errorf("store: find duplicate messages: %w", err)
	}
	merged := 0
	for from := 0; from < len(groups); from += 100 {
		chunk := groups[from:min(len(groups), from+100)]
		err := s.Tx(ctx, func(tx *Tx) error {
			for _, msgID := range chunk {
				n, err := tx.mergeMessage(msgID)
				if err != nil {
					return fmt.Errorf("merge copies of <%s>: %w", msgID, err)
				}
				merged += n
			}
			return nil
		})
		if err != nil {
			return merged, fmt.Errorf("store: %w", err)
		}
	}
	return merged, nil
}

// mergeMessage merges the items with one Message-ID into the best.
func (t *Tx) mergeMessage(msgID string) (int, error) {
	copies, err := Collect(t.ctx, t, scanStoredItem, copiesQuery, msgID)
	if err != nil || len(copies) < 2 {
		return 0, err
	}
	best := copies[0]
	for _, c := range copies[1:] {
		if better(c.quality, best.quality) {
			best = c
		}
	}
	for _, c := range copies {
		if c.id == best.id {
			continue
		}
		if _, err := t.Exec(`UPDATE item_aliases SET item_id = ? WHERE item_id = ?`, best.id, c.id); err != nil {
			return 0, err
		}
		if _, err := t.Exec(`INSERT OR IGNORE INTO item_aliases (source, external_id, item_id) VALUES (?, ?, ?)`, c.source, c.extID, best.id); err != nil {
			return 0, err
		}
		if err := t.repoint(c.id, best.id); err != nil {
			return 0, err
		}
		if err := t.forget(c.id); err != nil {
			return 0, err
		}
	}
	return len(copies) - 1, nil
}
