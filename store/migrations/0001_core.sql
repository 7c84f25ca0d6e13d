-- Core schema: ingested items, their full-text index, the durable log of new
-- items that background consumers work through, and per-collector cursors.
-- All times are INTEGER unix milliseconds, UTC.

CREATE TABLE items (
    id           INTEGER PRIMARY KEY,
    source       TEXT    NOT NULL,            -- gmail, calendar, github, mbox, maildir, jsonl, chat, ...
    external_id  TEXT    NOT NULL,            -- the id at the source; the id users and citations see
    kind         TEXT    NOT NULL DEFAULT '', -- email, event, notification, issue, pr, document, message
    thread       TEXT    NOT NULL DEFAULT '',
    time         INTEGER NOT NULL,
    title        TEXT    NOT NULL DEFAULT '',
    body         TEXT    NOT NULL DEFAULT '', -- the item's own text (for mail: without quotes and signature)
    quoted       TEXT    NOT NULL DEFAULT '', -- quoted replies and signature, kept but not indexed
    sender       TEXT    NOT NULL DEFAULT '', -- lower-cased address or login
    people       TEXT    NOT NULL DEFAULT '[]', -- JSON array: names and addresses involved
    meta         TEXT    NOT NULL DEFAULT '{}', -- JSON: headers, labels, attachments, ...
    content_hash TEXT    NOT NULL,
    created      INTEGER NOT NULL,
    updated      INTEGER NOT NULL,
    UNIQUE (source, external_id)
);
CREATE INDEX items_time   ON items (time);
CREATE INDEX items_thread ON items (source, thread);
CREATE INDEX items_sender ON items (sender);

-- External-content FTS5 index, kept in step by triggers so it never holds a
-- duplicate or orphan row whatever path changes items.
CREATE VIRTUAL TABLE items_fts USING fts5 (
    title, body, people,
    content = 'items', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts (rowid, title, body, people) VALUES (new.id, new.title, new.body, new.people);
END;
CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, title, body, people) VALUES ('delete', old.id, old.title, old.body, old.people);
END;
CREATE TRIGGER items_fts_update AFTER UPDATE OF title, body, people ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, title, body, people) VALUES ('delete', old.id, old.title, old.body, old.people);
    INSERT INTO items_fts (rowid, title, body, people) VALUES (new.id, new.title, new.body, new.people);
END;

-- Durable log of new and changed items, for background consumers (triage,
-- patterns). Each consumer keeps its own position in consumers.
CREATE TABLE item_events (
    id      INTEGER PRIMARY KEY,
    item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    kind    TEXT    NOT NULL, -- new, updated
    created INTEGER NOT NULL
);
CREATE INDEX item_events_item ON item_events (item_id);

CREATE TABLE consumers (
    name          TEXT PRIMARY KEY,
    last_event_id INTEGER NOT NULL DEFAULT 0,
    updated       INTEGER NOT NULL
);

-- Per-collector sync position (Gmail historyId, Calendar syncToken, ...).
CREATE TABLE sync_cursors (
    collector TEXT PRIMARY KEY,
    cursor    TEXT    NOT NULL,
    updated   INTEGER NOT NULL
);

-- Small facts about the store itself (embedder identity, owner pairing, ...).
CREATE TABLE meta (
    key     TEXT PRIMARY KEY,
    value   TEXT    NOT NULL,
    updated INTEGER NOT NULL
);
