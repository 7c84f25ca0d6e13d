-- Event ids are never reused. A plain INTEGER PRIMARY KEY hands out the
-- highest id again once its row is gone (mail deleted for good takes its
-- events along), and a consumer that had acknowledged that id would skip
-- the new event for good. AUTOINCREMENT starts past the highest id any
-- consumer has acknowledged.
CREATE TABLE item_events_new (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    kind    TEXT    NOT NULL, -- new, updated
    created INTEGER NOT NULL
);
INSERT INTO item_events_new (id, item_id, kind, created) SELECT id, item_id, kind, created FROM item_events;
DROP TABLE item_events;
ALTER TABLE item_events_new RENAME TO item_events;
CREATE INDEX item_events_item ON item_events (item_id);

DELETE FROM sqlite_sequence WHERE name = 'item_events';
INSERT INTO sqlite_sequence (name, seq) SELECT 'item_events', MAX(
    COALESCE((SELECT MAX(id) FROM item_events), 0),
    COALESCE((SELECT MAX(last_event_id) FROM consumers), 0));
