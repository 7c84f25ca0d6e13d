-- Background agent runs (#15): a run's job kind and subject are its
-- identity (one run per job and subject, never two), its attempts count
-- restarts so a run that keeps failing is dropped, and every item's
-- reasoning chain is kept stage by stage with its evidence.

ALTER TABLE agent_runs ADD COLUMN kind TEXT NOT NULL DEFAULT '';       -- draft_reply, meeting_prep, ...; '' for chat
ALTER TABLE agent_runs ADD COLUMN subject TEXT NOT NULL DEFAULT '';    -- what the job is about, e.g. item:42
ALTER TABLE agent_runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0; -- starts and resumes
ALTER TABLE agent_runs ADD COLUMN last_error TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_runs ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;   -- input + output tokens used
CREATE INDEX agent_runs_subject ON agent_runs (subject) WHERE subject != '';

CREATE TABLE item_chains (
    subject  TEXT    NOT NULL,              -- item:42, pattern:always_archives:x@example.org
    chain    TEXT    NOT NULL,              -- mail, meeting, issue, pattern
    stage    TEXT    NOT NULL,
    at       INTEGER NOT NULL,
    evidence TEXT    NOT NULL DEFAULT '[]', -- JSON: ids of the items it rests on
    detail   TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (subject, stage)
);
