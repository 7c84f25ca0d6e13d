-- Memory about the owner (package memory): the facts omnibrain keeps, the
-- suggestions waiting for the owner's word, and the owner's chat messages
-- waiting for fact extraction. Times are unix milliseconds.
CREATE TABLE memory_facts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    text          TEXT NOT NULL,
    category      TEXT NOT NULL,
    -- active; pending (a suggestion from outside text, in no prompt);
    -- superseded, forgotten, expired, dropped (kept for `memory why`;
    -- forgotten and dropped facts lose their text)
    state         TEXT NOT NULL,
    source        TEXT NOT NULL,            -- chat, owner, file, item
    source_ref    TEXT NOT NULL DEFAULT '', -- chat session, or the item as source:external_id
    source_text   TEXT NOT NULL DEFAULT '', -- the words the fact came from, bounded
    pinned        INTEGER NOT NULL DEFAULT 0,
    created       INTEGER NOT NULL,
    updated       INTEGER NOT NULL,
    expires       INTEGER NOT NULL DEFAULT 0, -- 0: never
    superseded_by INTEGER REFERENCES memory_facts(id),
    note          TEXT NOT NULL DEFAULT ''  -- why the state last changed
);
CREATE INDEX memory_facts_state ON memory_facts(state);

CREATE TABLE memory_messages (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    session   TEXT NOT NULL,
    text      TEXT NOT NULL,
    created   INTEGER NOT NULL,
    extracted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX memory_messages_pending ON memory_messages(extracted, id);
