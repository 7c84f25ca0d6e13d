-- Held notifications a briefing showed get their own state, "briefed",
-- instead of a high-water mark of ids: a notification held later than a
-- briefing but with a lower id (deferred by quiet hours, then held back
-- by the daily budget) was never shown. What the old mark covered is
-- marked briefed.
UPDATE notifications SET state = 'briefed'
WHERE state = 'held' AND level != 'silent'
  AND id <= COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'proactive.fyi_through'), 0);
DELETE FROM meta WHERE key = 'proactive.fyi_through';
