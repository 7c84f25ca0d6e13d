-- Vectors, second layout: the in-memory index holds one vector per item
-- (the normalised sum of its chunks' vectors) instead of one per chunk,
-- and the chunks' vectors are only read back to re-rank candidates. The
-- re-ranking vector of a chunk is the built-in embedder's wide int8 vector
-- (a 4-byte float32 scale, then one byte per dimension), or the
-- embedder's own float32 vector for the others; the narrow vectors of the
-- built-in embedder's chunks are no longer kept.
--
-- Every item is queued to be embedded again in this layout; until it is,
-- search finds it by keywords.
DROP TABLE item_vectors;

CREATE TABLE item_vectors (
    item_id INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    vector  BLOB NOT NULL  -- little-endian float32, L2-normalised: the in-memory index
);

CREATE TABLE chunk_vectors (
    item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    chunk   INTEGER NOT NULL,  -- 0.. within the item
    vector  BLOB    NOT NULL,  -- for re-ranking: wide int8 (built-in embedder) or float32
    PRIMARY KEY (item_id, chunk)
);

INSERT OR IGNORE INTO vector_queue (item_id) SELECT id FROM items;
