-- Vector search: the vectors of items' text chunks (SQLite is their source
-- of truth; the in-memory index is loaded from here at start) and the queue
-- of items whose vectors must be computed or dropped. Triggers fill the
-- queue whatever path changes items, so no writer has to remember it.

CREATE TABLE item_vectors (
    item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    chunk   INTEGER NOT NULL,  -- 0.. within the item
    vector  BLOB    NOT NULL,  -- little-endian float32, L2-normalised: the in-memory index
    wide    BLOB,              -- optional wider int8 vector for re-ranking candidates
    PRIMARY KEY (item_id, chunk)
);

-- An item id here means: bring its vectors in line with its text (embed it
-- if it exists, forget it if it was deleted).
CREATE TABLE vector_queue (
    item_id INTEGER PRIMARY KEY
);

-- An item's vector mixes in its neighbours in the thread (the message
-- before and after it), so finding them must be cheap.
CREATE INDEX items_thread_time ON items (source, thread, time);

-- A new, changed or deleted item changes its own vector and the context of
-- the items before and after it in its thread.
CREATE TRIGGER vector_queue_insert AFTER INSERT ON items BEGIN
    INSERT OR IGNORE INTO vector_queue (item_id) VALUES (new.id);
    INSERT OR IGNORE INTO vector_queue (item_id)
        SELECT id FROM (SELECT id FROM items WHERE new.thread != '' AND source = new.source AND thread = new.thread
            AND (time < new.time OR (time = new.time AND id < new.id)) ORDER BY time DESC, id DESC LIMIT 1)
        UNION ALL
        SELECT id FROM (SELECT id FROM items WHERE new.thread != '' AND source = new.source AND thread = new.thread
            AND (time > new.time OR (time = new.time AND id > new.id)) ORDER BY time, id LIMIT 1);
END;
CREATE TRIGGER vector_queue_update AFTER UPDATE OF title, body, thread, time ON items
WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.thread IS NOT new.thread OR old.time IS NOT new.time BEGIN
    INSERT OR IGNORE INTO vector_queue (item_id) VALUES (new.id);
    INSERT OR IGNORE INTO vector_queue (item_id)
        SELECT id FROM (SELECT id FROM items WHERE new.thread != '' AND source = new.source AND thread = new.thread
            AND (time < new.time OR (time = new.time AND id < new.id)) ORDER BY time DESC, id DESC LIMIT 1)
        UNION ALL
        SELECT id FROM (SELECT id FROM items WHERE new.thread != '' AND source = new.source AND thread = new.thread
            AND (time > new.time OR (time = new.time AND id > new.id)) ORDER BY time, id LIMIT 1);
END;
CREATE TRIGGER vector_queue_delete AFTER DELETE ON items BEGIN
    INSERT OR IGNORE INTO vector_queue (item_id) VALUES (old.id);
    INSERT OR IGNORE INTO vector_queue (item_id)
        SELECT id FROM (SELECT id FROM items WHERE old.thread != '' AND source = old.source AND thread = old.thread
            AND (time < old.time OR (time = old.time AND id < old.id)) ORDER BY time DESC, id DESC LIMIT 1)
        UNION ALL
        SELECT id FROM (SELECT id FROM items WHERE old.thread != '' AND source = old.source AND thread = old.thread
            AND (time > old.time OR (time = old.time AND id > old.id)) ORDER BY time, id LIMIT 1);
END;
