-- Agent runs (checkpoints, so a run resumes after a restart) and chat
-- sessions with their messages.

CREATE TABLE agent_runs (
    id          TEXT PRIMARY KEY,
    session     TEXT    NOT NULL DEFAULT '',
    route       TEXT    NOT NULL DEFAULT '',   -- router task: chat, analysis, briefing, ...
    objective   TEXT    NOT NULL DEFAULT '',
    status      TEXT    NOT NULL,              -- running, done, abandoned
    interactive INTEGER NOT NULL DEFAULT 0,
    iteration   INTEGER NOT NULL DEFAULT 0,
    state       TEXT    NOT NULL,              -- JSON: messages, plan, graph, counters
    answer      TEXT,                          -- JSON, once done
    created     INTEGER NOT NULL,
    updated     INTEGER NOT NULL
);
CREATE INDEX agent_runs_status ON agent_runs (status, updated);

CREATE TABLE chat_sessions (
    id      TEXT PRIMARY KEY,
    title   TEXT    NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);

CREATE TABLE chat_messages (
    id        INTEGER PRIMARY KEY,
    session   TEXT    NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    role      TEXT    NOT NULL,               -- user, assistant
    content   TEXT    NOT NULL,
    run_id    TEXT    NOT NULL DEFAULT '',
    citations TEXT    NOT NULL DEFAULT '[]',  -- JSON: the answer's cited items
    created   INTEGER NOT NULL
);
CREATE INDEX chat_messages_session ON chat_messages (session, id);
