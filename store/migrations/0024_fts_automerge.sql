-- FTS5 merges a level's segments once automerge of them exist (default 4).
-- At 8 an import rewrites its postings fewer times: importing the 100k
-- bench mails took 11% less CPU (16.1 against 19.0 s, 16.1/18.1, 19.5/21.1,
-- each pair run side by side), and 16 took more again (its crisis merges).
-- A term is looked up in up to 7 segments a level instead of 3: search
-- p95 through the binary stayed at 15-22 ms at 100k.
INSERT INTO items_fts (items_fts, rank) VALUES ('automerge', 8);
