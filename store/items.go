package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

// Item is anything ingested: a mail, a calendar event, a GitHub
// notification, an imported document, a chat message.
type Item struct {
	ID         int64 // assigned by the store
	Source     string
	ExternalID string
	Kind       string
	Thread     string
	Time       time.Time
	Title      string
	Body       string
	Quoted     string
	Sender     string
	People     []string
	Meta       map[string]any
	// MessageID is a mail's Message-ID, with or without its angle
	// brackets; "" for what is not a message. One message is one item
	// whatever sources bring it (UpsertItem).
	MessageID string
	Created   time.Time
	Updated   time.Time
}

// Validate reports what makes an item unstorable.
func (it *Item) Validate() error {
	switch {
	case strings.TrimSpace(it.Source) == "":
		return errors.New("item has no source")
	case strings.TrimSpace(it.ExternalID) == "":
		return errors.New("item has no id")
	case it.Time.IsZero():
		return errors.New("item has no time")
	}
	return nil
}

// contentHash covers every stored field, so an upsert of identical content
// is recognised and changes nothing.
func (it *Item) contentHash(people, meta string) string {
	h := sha256.New()
	for _, s := range []string{it.Kind, it.Thread, it.Time.UTC().Format(time.RFC3339Nano), it.Title, it.Body, it.Quoted, it.Sender, people, meta} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// UpsertOptions control how an upsert is recorded.
type UpsertOptions struct {
	// Event records new and changed items in item_events for the background
	// consumers. Collectors set it; archive imports do not, so importing years
	// of old mail does not trigger years of notifications.
	Event bool
	// EventKind names the event instead of "new" or "updated": an import
	// records recent mail as EventImported, to be triaged but not announced.
	EventKind string
	// Collected says the copy comes from the service the message lives in
	// (the Gmail collector), not from an archive: when the item is already
	// stored from an archive, this copy's source, id and thread become the
	// item's own, so that replies and label changes reach the message.
	Collected bool
	// OnlyBetter says the copy repeats a message the same import already
	// gave (an archive holding it in two folders): it replaces the stored
	// copy only when it is better, so that re-imports do not flip between
	// the two.
	OnlyBetter bool
}

// EventImported is the item event of recent mail from an archive import.
const EventImported = "imported"

// UpsertResult says what an upsert did.
type UpsertResult struct {
	ID      int64
	Created bool // a new row
	Changed bool // an existing row whose content changed
	// Kept says why the stored copy of a message stayed instead of this
	// one (see keepStored); "" otherwise.
	Kept string
}

// UpsertItem inserts the item or updates the one it is another copy of:
// the row with the same source and external id, or, for a message, the
// item with the same Message-ID from any source (mbox, maildir, a JSONL
// line, Gmail), which the new source and id then also name. A message is
// never replaced by a worse copy (keepStored says what worse is); a
// collector's copy makes its source and id the item's own, so that
// actions reach the message where it lives. It never touches state kept
// beside the item (events already consumed, triage, vectors), and an
// identical upsert writes nothing.
func (t *Tx) UpsertItem(it *Item, opts UpsertOptions) (UpsertResult, error) {
	if err := it.Validate(); err != nil {
		return UpsertResult{}, err
	}
	people, err := json.Marshal(nonNil(it.People))
	if err != nil {
		return UpsertResult{}, fmt.Errorf("upsert item: %w", err)
	}
	meta := []byte("{}")
	if len(it.Meta) > 0 {
		if meta, err = json.Marshal(it.Meta); err != nil {
			return UpsertResult{}, fmt.Errorf("upsert item %s: meta: %w", it.ExternalID, err)
		}
	}
	hash := it.contentHash(string(people), string(meta))
	now := Millis(t.now)
	msgID := NormalizeMessageID(it.MessageID)

	st, err := t.storedCopy(it.Source, it.ExternalID, msgID)
	var res UpsertResult
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The id is past every id ever given out: a plain rowid would hand
		// a deleted newest item's id to the next one, and notifications,
		// proposals and evidence that name the old item would name it.
		r, err := t.Exec(`INSERT INTO items (id, source, external_id, kind, thread, time, title, body, quoted, sender, people, meta, message_id, content_hash, created, updated)
			VALUES (1 + MAX(COALESCE((SELECT MAX(id) FROM items), 0), COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '`+metaMaxDeletedItem+`'), 0)),
			?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			it.Source, it.ExternalID, it.Kind, it.Thread, Millis(it.Time), it.Title, it.Body, it.Quoted, strings.ToLower(it.Sender), string(people), string(meta), msgID, hash, now, now)
		var id int64
		if err != nil {
			return UpsertResult{}, fmt.Errorf("insert item %s/%s: %w", it.Source, it.ExternalID, err)
		}
		if id, err = r.LastInsertId(); err != nil {
			return UpsertResult{}, err
		}
		// Not a trigger: see migration 0010.
		if _, err := t.Exec(`INSERT INTO items_fts (rowid, title, body, people) VALUES (?, ?, ?, ?)`, id, it.Title, it.Body, string(people)); err != nil {
			return UpsertResult{}, fmt.Errorf("index item %s/%s: %w", it.Source, it.ExternalID, err)
		}
		if err := t.queueVectors(id); err != nil {
			return UpsertResult{}, fmt.Errorf("queue item %s/%s for embedding: %w", it.Source, it.ExternalID, err)
		}
		if tokenize.HasUnspaced(it.Title) || tokenize.HasUnspaced(it.Body) { // see migration 0019
			if _, err := t.Exec(`INSERT INTO items_unspaced (rowid, title, body, people) VALUES (?, ?, ?, ?)`, id, it.Title, it.Body, string(people)); err != nil {
				return UpsertResult{}, fmt.Errorf("index item %s/%s: %w", it.Source, it.ExternalID, err)
			}
		}
		res = UpsertResult{ID: id, Created: true}
	case err != nil:
		return UpsertResult{}, fmt.Errorf("look up item %s/%s: %w", it.Source, it.ExternalID, err)
	default:
		id := st.id
		if !st.own {
			if err := t.rename(st, it.Source, it.ExternalID, it.Thread, opts.Collected); err != nil {
				return UpsertResult{}, fmt.Errorf("upsert item %s/%s: %w", it.Source, it.ExternalID, err)
			}
		}
		if st.hash == hash {
			it.ID = id
			return UpsertResult{ID: id}, nil
		}
		q := qualityOf(it)
		if msgID != "" {
			if why := keepStored(st.quality, q); why != "" {
				it.ID = id
				return UpsertResult{ID: id, Kept: why}, nil
			}
		}
		// Another archive's copy of a message, or a repeat, that is no
		// better leaves the stored one: importing a mailbox as an mbox and
		// then as a maildir changes nothing, and neither does a re-import.
		onlyBetter := opts.OnlyBetter || msgID != "" && !st.own && !opts.Collected
		if onlyBetter && (msgID == "" || !better(q, st.quality)) {
			it.ID = id
			return UpsertResult{ID: id}, nil
		}
		thread := it.Thread
		if !st.own && !opts.Collected {
			thread = st.thread // an archive's copy does not move the message to its thread
		}
		_, err := t.Exec(`UPDATE items SET kind = ?, thread = ?, time = ?, title = ?, body = ?, quoted = ?, sender = ?, people = ?, meta = ?,
			message_id = ?, content_hash = ?, updated = ? WHERE id = ?`,
			it.Kind, thread, Millis(it.Time), it.Title, it.Body, it.Quoted, strings.ToLower(it.Sender), string(people), string(meta), msgID, hash, now, id)
		if err != nil {
			return UpsertResult{}, fmt.Errorf("update item %s/%s: %w", it.Source, it.ExternalID, err)
		}
		res = UpsertResult{ID: id, Changed: true}
	}
	it.ID = res.ID
	t.itemsStored = true
	if opts.Event {
		kind := "new"
		switch {
		case opts.EventKind != "":
			kind = opts.EventKind
		case res.Changed:
			kind = "updated"
		}
		if _, err := t.Exec(`INSERT INTO item_events (item_id, kind, created) VALUES (?, ?, ?)`, res.ID, kind, now); err != nil {
			return UpsertResult{}, fmt.Errorf("record item event: %w", err)
		}
	}
	return res, nil
}

// queueVectors queues a new item for embedding. Not a trigger: see
// migration 0022. The message after it in its thread, if it came first,
// is queued again by the indexer once this one has its vector.
func (t *Tx) queueVectors(id int64) error {
	_, err := t.Exec(`INSERT OR IGNORE INTO vector_queue (item_id) VALUES (?)`, id)
	return err
}

// UpsertItems upserts a batch in one transaction.
func (s *Store) UpsertItems(ctx context.Context, items []*Item, opts UpsertOptions) ([]UpsertResult, error) {
	out := make([]UpsertResult, 0, len(items))
	err := s.Tx(ctx, func(tx *Tx) error {
		if err := tx.LookAhead(items); err != nil {
			return err
		}
		for _, it := range items {
			r, err := tx.UpsertItem(it, opts)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nonNil makes a nil slice an empty one: JSON says [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

const itemColumns = `id, source, external_id, kind, thread, time, title, body, quoted, sender, people, meta, message_id, created, updated`

func scanItem(row Scanner) (*Item, error) {
	var it Item
	var t, created, updated int64
	var people, meta string
	if err := row.Scan(&it.ID, &it.Source, &it.ExternalID, &it.Kind, &it.Thread, &t, &it.Title, &it.Body, &it.Quoted, &it.Sender, &people, &meta, &it.MessageID, &created, &updated); err != nil {
		return nil, err
	}
	it.Time, it.Created, it.Updated = FromMillis(t), FromMillis(created), FromMillis(updated)
	if err := json.Unmarshal([]byte(people), &it.People); err != nil {
		return nil, fmt.Errorf("item %d: people: %w", it.ID, err)
	}
	if meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &it.Meta); err != nil {
			return nil, fmt.Errorf("item %d: meta: %w", it.ID, err)
		}
	}
	return &it, nil
}

// Item returns the item with the store id.
func (s *Store) Item(ctx context.Context, id int64) (*Item, error) {
	it, err := scanItem(s.db.QueryRowContext(ctx, `SELECT `+itemColumns+` FROM items WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("item %d: %w", id, ErrNotFound)
	}
	return it, err
}

// ItemByExternalID returns the item with the source's id, or the item a
// copy of the same message from that source was merged into.
func (s *Store) ItemByExternalID(ctx context.Context, source, externalID string) (*Item, error) {
	it, err := scanItem(s.db.QueryRowContext(ctx, `SELECT `+itemColumns+` FROM items WHERE source = ? AND external_id = ?
		UNION ALL SELECT `+qualified("i.", itemColumns)+` FROM item_aliases a JOIN items i ON i.id = a.item_id WHERE a.source = ? AND a.external_id = ?
		LIMIT 1`, source, externalID, source, externalID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("item %s/%s: %w", source, externalID, ErrNotFound)
	}
	return it, err
}

// ItemText is the text of an item that is embedded, and the content hash
// it was read with (UpsertItem changes the hash with the content).
type ItemText struct {
	ID          int64
	Title, Body string
	Hash        string
}

// ItemTexts returns the texts of the items with the given store ids, in
// that order; ids that do not exist are left out. The vector indexer reads
// every new item and its thread's previous one back: whole items, with
// their people and meta decoded, cost it twice as much.
func (s *Store) ItemTexts(ctx context.Context, ids []int64) ([]ItemText, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	texts, err := Collect(ctx, s.db, func(r Scanner) (ItemText, error) {
		var t ItemText
		err := r.Scan(&t.ID, &t.Title, &t.Body, &t.Hash)
		return t, err
	}, `SELECT id, title, body, content_hash FROM items WHERE id IN (`+Placeholders(len(ids))+`)`, Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("item texts: %w", err)
	}
	return inOrder(ids, texts, func(t ItemText) int64 { return t.ID }), nil
}

// inOrder puts rows in the order of ids, leaving out ids no row has.
func inOrder[T any](ids []int64, rows []T, id func(T) int64) []T {
	byID := make(map[int64]T, len(rows))
	for _, r := range rows {
		byID[id(r)] = r
	}
	out := make([]T, 0, len(ids))
	for _, i := range ids {
		if r, ok := byID[i]; ok {
			out = append(out, r)
		}
	}
	return out
}

// ItemsByID returns the items with the given store ids, in that order;
// ids that do not exist are left out.
func (s *Store) ItemsByID(ctx context.Context, ids []int64) ([]*Item, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	items, err := Collect(ctx, s.db, scanItem, `SELECT `+itemColumns+` FROM items WHERE id IN (`+Placeholders(len(ids))+`)`, Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("items by id: %w", err)
	}
	return inOrder(ids, items, func(it *Item) int64 { return it.ID }), nil
}

// SourceCount is the number of items from one source.
type SourceCount struct {
	Source string `json:"source"`
	Items  int64  `json:"items"`
}

// CountItems returns item counts per source, largest first.
func (s *Store) CountItems(ctx context.Context) ([]SourceCount, error) {
	out, err := Collect(ctx, s.db, func(r Scanner) (c SourceCount, err error) {
		return c, r.Scan(&c.Source, &c.Items)
	}, `SELECT source, COUNT(*) FROM items GROUP BY source ORDER BY COUNT(*) DESC, source`)
	if err != nil {
		return nil, fmt.Errorf("count items: %w", err)
	}
	return nonNil(out), nil
}

// ItemEvent is one entry of the durable new-item log.
type ItemEvent struct {
	ID     int64
	ItemID int64
	Kind   string
}

// PendingEvents returns up to limit events after the consumer's position.
func (s *Store) PendingEvents(ctx context.Context, consumer string, limit int) ([]ItemEvent, error) {
	out, err := Collect(ctx, s.db, func(r Scanner) (e ItemEvent, err error) {
		return e, r.Scan(&e.ID, &e.ItemID, &e.Kind)
	}, `SELECT e.id, e.item_id, e.kind FROM item_events e
		WHERE e.id > COALESCE((SELECT last_event_id FROM consumers WHERE name = ?), 0)
		ORDER BY e.id LIMIT ?`, consumer, limit)
	if err != nil {
		return nil, fmt.Errorf("pending events for %s: %w", consumer, err)
	}
	return out, nil
}

// AckEvents moves the consumer's position to eventID (never backwards).
func (t *Tx) AckEvents(consumer string, eventID int64) error {
	_, err := t.Exec(`INSERT INTO consumers (name, last_event_id, updated) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET last_event_id = MAX(last_event_id, excluded.last_event_id), updated = excluded.updated`,
		consumer, eventID, Millis(t.now))
	if err != nil {
		return fmt.Errorf("ack events for %s: %w", consumer, err)
	}
	return nil
}

// DeleteItem removes an item its source no longer has (mail the owner
// deleted for good). Its search rows, vectors, events and triage go with
// it (triggers and cascades); contact and thread statistics keep it.
// It reports whether there was such an item.
func (t *Tx) DeleteItem(source, externalID string) (bool, error) {
	// A copy the item was merged with: the item stays with its other copies.
	res, err := t.Exec(`DELETE FROM item_aliases WHERE source = ? AND external_id = ?`, source, externalID)
	if err != nil {
		return false, fmt.Errorf("delete item %s/%s: %w", source, externalID, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, nil
	}
	var id int64
	err = t.QueryRow(`SELECT id FROM items WHERE source = ? AND external_id = ?`, source, externalID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete item %s/%s: %w", source, externalID, err)
	}
	// The item's own copy, when others remain: one of them names it now.
	var aSource, aID string
	err = t.QueryRow(`SELECT source, external_id FROM item_aliases WHERE item_id = ? ORDER BY source, external_id LIMIT 1`, id).Scan(&aSource, &aID)
	switch {
	case err == nil:
		if _, err := t.Exec(`DELETE FROM item_aliases WHERE source = ? AND external_id = ?`, aSource, aID); err != nil {
			return false, fmt.Errorf("delete item %s/%s: %w", source, externalID, err)
		}
		if _, err := t.Exec(`UPDATE items SET source = ?, external_id = ? WHERE id = ?`, aSource, aID, id); err != nil {
			return false, fmt.Errorf("delete item %s/%s: %w", source, externalID, err)
		}
		return true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("delete item %s/%s: %w", source, externalID, err)
	}
	if err := t.forget(id); err != nil {
		return false, fmt.Errorf("delete item %s/%s: %w", source, externalID, err)
	}
	return true, nil
}

// forget deletes an item and remembers its id so that it is never given
// out again (UpsertItem).
func (t *Tx) forget(id int64) error {
	t.itemsStored = true
	if _, err := t.Exec(`INSERT INTO meta (key, value, updated) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(meta.value AS INTEGER), CAST(excluded.value AS INTEGER)), updated = excluded.updated`,
		metaMaxDeletedItem, strconv.FormatInt(id, 10), Millis(t.now)); err != nil {
		return err
	}
	_, err := t.Exec(`DELETE FROM items WHERE id = ?`, id)
	return err
}

// metaMaxDeletedItem is the highest id of a deleted item.
const metaMaxDeletedItem = "items.max_deleted_id"

// Cursor returns a collector's saved sync position ("" if none).
func (s *Store) Cursor(ctx context.Context, collector string) (string, error) {
	var c string
	err := s.db.QueryRowContext(ctx, `SELECT cursor FROM sync_cursors WHERE collector = ?`, collector).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cursor %s: %w", collector, err)
	}
	return c, nil
}

// SetCursor saves a collector's sync position. Called in the transaction
// that stores the items it covers, the cursor can never run ahead of them.
func (t *Tx) SetCursor(collector, cursor string) error {
	_, err := t.Exec(`INSERT INTO sync_cursors (collector, cursor, updated) VALUES (?, ?, ?)
		ON CONFLICT (collector) DO UPDATE SET cursor = excluded.cursor, updated = excluded.updated`,
		collector, cursor, Millis(t.now))
	if err != nil {
		return fmt.Errorf("save cursor %s: %w", collector, err)
	}
	return nil
}

// Meta returns a value from the meta table ("" if unset).
func (s *Store) Meta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read meta %s: %w", key, err)
	}
	return v, nil
}

// SetMeta sets a value in the meta table.
func (t *Tx) SetMeta(key, value string) error {
	_, err := t.Exec(`INSERT INTO meta (key, value, updated) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated`, key, value, Millis(t.now))
	if err != nil {
		return fmt.Errorf("set meta %s: %w", key, err)
	}
	return nil
}
