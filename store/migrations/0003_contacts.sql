-- Mail relationships: the owner's addresses, contacts with their volumes and
-- reply times, and threads with whose turn it is. Rows change only when a
-- mail is stored for the first time (store.Tx.UpsertMail), so re-imports
-- and re-syncs never count a mail twice.

-- The owner's own addresses: mail from them is outbound.
CREATE TABLE owner_addresses (
    address TEXT PRIMARY KEY,  -- lower-cased
    source  TEXT    NOT NULL,  -- config, gmail, sent-folder, ...
    created INTEGER NOT NULL
);

CREATE TABLE contacts (
    address       TEXT PRIMARY KEY,              -- lower-cased
    name          TEXT    NOT NULL DEFAULT '',   -- the display name seen last
    names         TEXT    NOT NULL DEFAULT '[]', -- JSON: every display name seen
    inbound       INTEGER NOT NULL DEFAULT 0,    -- mails from them to the owner
    outbound      INTEGER NOT NULL DEFAULT 0,    -- mails from the owner to them
    first_seen    INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    last_inbound  INTEGER NOT NULL DEFAULT 0,
    last_outbound INTEGER NOT NULL DEFAULT 0,
    vip           INTEGER NOT NULL DEFAULT 0,    -- vip_manual or a vip_rules match
    vip_manual    INTEGER NOT NULL DEFAULT 0,
    updated       INTEGER NOT NULL
);

-- Configured VIPs: an address or a whole domain ("@example.com").
CREATE TABLE vip_rules (
    pattern TEXT PRIMARY KEY
);

-- Every mail counted into contacts and threads. The unique Message-ID
-- keeps a mail that arrives by two routes (a Takeout import and the Gmail
-- collector) from being counted twice.
CREATE TABLE mail_messages (
    item_id    INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    message_id TEXT    NOT NULL DEFAULT '',
    thread     TEXT    NOT NULL,
    time       INTEGER NOT NULL,
    outbound   INTEGER NOT NULL,
    sender     TEXT    NOT NULL,
    recipients TEXT    NOT NULL, -- to and cc, space-separated
    personal   INTEGER NOT NULL, -- inbound, addressed to the owner, not bulk
    bulk       INTEGER NOT NULL  -- a list, newsletter or automated mail
);
CREATE UNIQUE INDEX mail_messages_message_id ON mail_messages (message_id) WHERE message_id != '';
CREATE INDEX mail_messages_thread ON mail_messages (thread, time);

-- How long each reply took: a mail answering the previous mail of its
-- thread, sent the other way, by its sender to someone it addressed.
CREATE TABLE reply_times (
    item_id   INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    contact   TEXT    NOT NULL,
    direction TEXT    NOT NULL, -- owner: the owner answered the contact; contact: the contact answered the owner
    ms        INTEGER NOT NULL
);
CREATE INDEX reply_times_contact ON reply_times (contact, direction);

CREATE TABLE threads (
    thread         TEXT PRIMARY KEY, -- the items' thread key
    subject        TEXT    NOT NULL DEFAULT '', -- of the earliest mail
    messages       INTEGER NOT NULL DEFAULT 0,
    inbound        INTEGER NOT NULL DEFAULT 0,
    outbound       INTEGER NOT NULL DEFAULT 0,
    first_time     INTEGER NOT NULL,
    last_time      INTEGER NOT NULL,
    last_inbound   INTEGER NOT NULL DEFAULT 0,
    last_outbound  INTEGER NOT NULL DEFAULT 0,
    last_item_id   INTEGER NOT NULL,
    last_sender    TEXT    NOT NULL DEFAULT '',
    awaiting_reply INTEGER NOT NULL DEFAULT 0, -- the latest mail is the owner's
    owes_reply     INTEGER NOT NULL DEFAULT 0, -- the latest mail is a personal one to the owner
    updated        INTEGER NOT NULL
);
CREATE INDEX threads_awaiting ON threads (awaiting_reply, last_time);
CREATE INDEX threads_owes ON threads (owes_reply, last_time);

CREATE TABLE thread_participants (
    thread  TEXT NOT NULL,
    address TEXT NOT NULL,
    PRIMARY KEY (thread, address)
) WITHOUT ROWID;
