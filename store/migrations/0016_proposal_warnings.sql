-- What the owner should know before approving a proposal, fixed when it
-- is proposed and bound to its hash (JSON [{"code","text"}]); the event as
-- the store had it then, shown beside a calendar change (JSON, '' if none);
-- and when an approved action may run: the send delay, during which the
-- owner can undo the approval.
ALTER TABLE proposals ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]';
ALTER TABLE proposals ADD COLUMN current_event TEXT NOT NULL DEFAULT '';
ALTER TABLE proposals ADD COLUMN execute_after INTEGER NOT NULL DEFAULT 0;
