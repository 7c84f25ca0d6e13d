-- The proactive engine: triage decisions with their factors, briefings (one
-- per kind per local day), meeting preps and follow-ups said once,
-- observed patterns with their evidence, and learned preferences.

-- One triage decision per item, with everything needed to explain it.
CREATE TABLE triage (
    item_id     INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    decision    TEXT    NOT NULL,            -- ignore, notify, respond
    category    TEXT    NOT NULL,            -- personal, bulk, spam, automated, outbound
    score       INTEGER NOT NULL,            -- priority 0..100
    level       TEXT    NOT NULL,            -- silent, fyi, important, critical
    deadline    INTEGER NOT NULL DEFAULT 0,  -- a deadline read from the text
    factors     TEXT    NOT NULL DEFAULT '[]', -- JSON [{name, points, detail}]
    reason      TEXT    NOT NULL DEFAULT '', -- one line: why
    model       TEXT    NOT NULL DEFAULT '', -- the model consulted for the uncertain middle, if any
    tokens      INTEGER NOT NULL DEFAULT 0,  -- tokens that consultation used
    proposal_id TEXT    NOT NULL DEFAULT '', -- the reply proposal made for it
    item_time   INTEGER NOT NULL,            -- the item's time, for briefings by period
    created     INTEGER NOT NULL,
    updated     INTEGER NOT NULL
);
CREATE INDEX triage_time ON triage (item_time);
CREATE INDEX triage_proposal ON triage (proposal_id) WHERE proposal_id != '';

-- Briefings: the unique (kind, day) makes "one per kind per local day" a
-- fact of the database, whoever triggers it and however often.
CREATE TABLE briefings (
    id           INTEGER PRIMARY KEY,
    kind         TEXT    NOT NULL,           -- morning, evening, weekly
    day          TEXT    NOT NULL,           -- local date YYYY-MM-DD (weekly: its Monday)
    period_start INTEGER NOT NULL,
    period_end   INTEGER NOT NULL,
    data         TEXT    NOT NULL,           -- JSON: the sections, from data
    text         TEXT    NOT NULL,           -- rendered from data, no model
    narrative    TEXT    NOT NULL DEFAULT '', -- a model's summary on top, if one was available
    late         INTEGER NOT NULL DEFAULT 0, -- caught up after a missed slot
    manual       INTEGER NOT NULL DEFAULT 0, -- asked for by the owner
    created      INTEGER NOT NULL,
    UNIQUE (kind, day)
);

-- Meeting preps: one per event instance and start time.
CREATE TABLE meeting_preps (
    event_id TEXT    NOT NULL,  -- calendar external id (instance id of a recurring event)
    start    INTEGER NOT NULL,
    item_id  INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    text     TEXT    NOT NULL,
    context  TEXT    NOT NULL DEFAULT '{}', -- JSON: the item ids the prep drew on
    created  INTEGER NOT NULL,
    PRIMARY KEY (event_id, start)
);

-- Follow-ups found by the detector; open until their condition ends.
CREATE TABLE followups (
    kind        TEXT    NOT NULL,  -- awaiting_reply, owes_reply, gone_quiet
    key         TEXT    NOT NULL,  -- thread key or contact address
    thread      TEXT    NOT NULL DEFAULT '',
    contact     TEXT    NOT NULL DEFAULT '',
    subject     TEXT    NOT NULL DEFAULT '',
    item_id     INTEGER NOT NULL DEFAULT 0, -- the mail waiting
    since       INTEGER NOT NULL,           -- when the wait began
    state       TEXT    NOT NULL DEFAULT 'open', -- open, closed
    detail      TEXT    NOT NULL DEFAULT '',
    proposal_id TEXT    NOT NULL DEFAULT '', -- a nudge proposal, if one was made
    detected    INTEGER NOT NULL,
    updated     INTEGER NOT NULL,
    PRIMARY KEY (kind, key, since)
);
CREATE INDEX followups_open ON followups (state, kind);

-- Patterns that passed their evidence threshold.
CREATE TABLE observations (
    id          INTEGER PRIMARY KEY,
    kind        TEXT    NOT NULL,  -- recurring_sender, recurring_subject, weekday_habit, hour_habit, always_archives, answers_fast
    key         TEXT    NOT NULL,  -- identity within the kind (an address, a subject)
    summary     TEXT    NOT NULL,
    confidence  REAL    NOT NULL,  -- 0..1
    evidence    TEXT    NOT NULL DEFAULT '[]', -- JSON: item ids
    state       TEXT    NOT NULL DEFAULT 'active', -- active, dismissed
    suggestion  TEXT    NOT NULL DEFAULT '',   -- what omnibrain could do about it
    first_seen  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    UNIQUE (kind, key)
);

-- Learned preferences: score adjustments triage applies, with their basis.
CREATE TABLE preferences (
    key      TEXT PRIMARY KEY,  -- sender:<address>, domain:<domain>
    weight   REAL    NOT NULL,  -- points added to a triage score (negative: less important)
    source   TEXT    NOT NULL,  -- learned, owner
    evidence INTEGER NOT NULL DEFAULT 0,
    detail   TEXT    NOT NULL DEFAULT '',
    updated  INTEGER NOT NULL
);
