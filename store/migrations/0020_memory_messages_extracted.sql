-- memory_messages.extracted was never set: an extraction pass deletes the
-- messages it read (the chat session keeps them), so every row waits.
-- The column and its index go; the primary key orders the rows.
DROP INDEX memory_messages_pending;
ALTER TABLE memory_messages DROP COLUMN extracted;
