-- New items enter the full-text index through UpsertItem's own statement
-- instead of a trigger. Inside a trigger the FTS5 insert runs under the
-- INSERT's statement savepoint, and FTS5 writes its pending terms to disk
-- at every savepoint: one tiny segment per mail, which doubled the cost of
-- an import. Updates and deletes keep their triggers (any path may delete
-- an item, and updates are rare).
DROP TRIGGER items_fts_insert;
