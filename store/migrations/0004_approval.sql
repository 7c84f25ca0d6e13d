-- The approval gate: proposals with their exact payload and its hash, the
-- audit log of every proposal, decision and execution, the durable queue of
-- notifications for the owner, and the Telegram bot's own state.

CREATE TABLE proposals (
    id              TEXT PRIMARY KEY,             -- short, opaque, random; also the Telegram callback id
    kind            TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    title           TEXT    NOT NULL DEFAULT '',
    reason          TEXT    NOT NULL DEFAULT '',
    origin          TEXT    NOT NULL DEFAULT '',
    payload         TEXT    NOT NULL,             -- canonical JSON, never rewritten
    payload_hash    TEXT    NOT NULL,             -- sha256 hex of payload
    item_id         INTEGER NOT NULL DEFAULT 0,
    thread          TEXT    NOT NULL DEFAULT '',
    created         INTEGER NOT NULL,
    expires         INTEGER NOT NULL,
    decided         INTEGER NOT NULL DEFAULT 0,
    decided_by      TEXT    NOT NULL DEFAULT '',
    snooze_until    INTEGER NOT NULL DEFAULT 0,
    supersedes      TEXT    NOT NULL DEFAULT '',  -- the proposal this one replaced
    superseded_by   TEXT    NOT NULL DEFAULT '',
    idempotency_key TEXT    NOT NULL DEFAULT '',  -- set when execution starts
    attempts        INTEGER NOT NULL DEFAULT 0,
    remote_id       TEXT    NOT NULL DEFAULT '',
    error           TEXT    NOT NULL DEFAULT '',
    updated         INTEGER NOT NULL
);
CREATE INDEX proposals_state  ON proposals (state, expires);
CREATE INDEX proposals_thread ON proposals (thread) WHERE thread != '';

-- Append-only: who did what to which proposal, when.
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY,
    time         INTEGER NOT NULL,
    actor        TEXT    NOT NULL,             -- telegram:<user id>, api, system, gmail, ...
    action       TEXT    NOT NULL,             -- proposed, approved, rejected, executing, executed, failed, refused, ...
    proposal_id  TEXT    NOT NULL DEFAULT '',
    payload_hash TEXT    NOT NULL DEFAULT '',
    detail       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_proposal ON audit_log (proposal_id, id);

-- Durable queue of notifications for the owner. key de-duplicates (NULL
-- when the sender gave none).
CREATE TABLE notifications (
    id          INTEGER PRIMARY KEY,
    key         TEXT UNIQUE,
    level       TEXT    NOT NULL,
    text        TEXT    NOT NULL DEFAULT '',
    proposal_id TEXT    NOT NULL DEFAULT '',
    item_id     INTEGER NOT NULL DEFAULT 0,
    state       TEXT    NOT NULL DEFAULT 'queued', -- queued, delivered, held, failed
    not_before  INTEGER NOT NULL DEFAULT 0,        -- deferred by the policy or a 429
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT    NOT NULL DEFAULT '',
    created     INTEGER NOT NULL,
    delivered   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX notifications_due ON notifications (state, not_before, id);

-- Which Telegram messages show which proposal, so a decision made anywhere
-- edits them to the outcome.
CREATE TABLE telegram_messages (
    proposal_id  TEXT    NOT NULL,
    chat_id      INTEGER NOT NULL,
    message_id   INTEGER NOT NULL,
    payload_hash TEXT    NOT NULL,
    created      INTEGER NOT NULL,
    PRIMARY KEY (chat_id, message_id)
);
CREATE INDEX telegram_messages_proposal ON telegram_messages (proposal_id);

-- One-time pairing codes, stored only as their sha256.
CREATE TABLE telegram_pairing (
    code_hash TEXT PRIMARY KEY,
    expires   INTEGER NOT NULL,
    created   INTEGER NOT NULL
);
