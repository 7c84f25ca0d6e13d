-- Every model call attempt the router makes: what it was for, who answered,
-- what it cost. `day` is the owner's local date when the call started, so
-- the daily budget and `omnibrain usage` group by the owner's days even
-- across DST changes.
CREATE TABLE llm_calls (
    id            INTEGER PRIMARY KEY,
    time          INTEGER NOT NULL,            -- start, unix ms
    day           TEXT    NOT NULL,            -- YYYY-MM-DD in the owner's timezone
    task          TEXT    NOT NULL,            -- triage, draft, planning, analysis, reflection, briefing, chat, ...
    provider      TEXT    NOT NULL,            -- the configured provider name
    model         TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL    NOT NULL DEFAULT 0,
    latency_ms    INTEGER NOT NULL DEFAULT 0,
    interactive   INTEGER NOT NULL DEFAULT 0,  -- 1: the owner was waiting (chat)
    stream        INTEGER NOT NULL DEFAULT 0,
    attempt       INTEGER NOT NULL DEFAULT 1,  -- 1 for the first try at this provider
    status        INTEGER NOT NULL DEFAULT 0,  -- HTTP status of a failed attempt, 0 otherwise
    error         TEXT    NOT NULL DEFAULT ''  -- empty when the attempt succeeded
);
CREATE INDEX llm_calls_day ON llm_calls (day);
