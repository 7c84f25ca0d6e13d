-- One item per message: the Message-ID of a mail (lower-cased, without
-- angle brackets) finds it whatever source brings another copy, and the
-- other sources' ids become aliases of the item. Existing duplicates are
-- merged once, by the store, after this migration (Open).
ALTER TABLE items ADD COLUMN message_id TEXT NOT NULL DEFAULT '';
UPDATE items SET message_id = lower(trim(json_extract(meta, '$.message_id'), '<> '))
    WHERE json_type(meta, '$.message_id') = 'text';
CREATE INDEX items_message_id ON items (message_id) WHERE message_id != '';

CREATE TABLE item_aliases (
    source      TEXT    NOT NULL,
    external_id TEXT    NOT NULL,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    PRIMARY KEY (source, external_id)
);
CREATE INDEX item_aliases_item ON item_aliases (item_id);
