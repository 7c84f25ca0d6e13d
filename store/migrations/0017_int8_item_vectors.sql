-- The in-memory vector index holds int8 vectors (a float32 scale, then
-- one byte per dimension), read straight from item_vectors, which held
-- float32 ones; chunk vectors are int8 for every embedder (they were
-- float32 for remote ones). The old vectors are dropped and every item is
-- queued to be embedded again; until it is, search finds it by keywords.
DELETE FROM item_vectors;
DELETE FROM chunk_vectors;
INSERT OR IGNORE INTO vector_queue (item_id) SELECT id FROM items;
