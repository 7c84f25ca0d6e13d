-- Scripts written without spaces (Chinese, Japanese, Thai, ...): the
-- porter index holds a whole run of such text as one token, so a word
-- inside it was never found. A trigram index finds any substring; it holds
-- only the items that have such letters (UpsertItem adds new ones; the
-- GLOB names the ranges of tokenize.IsUnspaced), so mail in spaced scripts
-- costs nothing. Search uses it for query words in these scripts.
CREATE VIRTUAL TABLE items_unspaced USING fts5 (title, body, people, tokenize = 'trigram');

INSERT INTO items_unspaced (rowid, title, body, people)
    SELECT id, title, body, people FROM items
    WHERE title || ' ' || body GLOB '*[' || char(0xE00, 45, 0xEFF, 0x1000, 45, 0x109F, 0x1780, 45, 0x17FF, 0x3040, 45, 0x30FF, 0x3400, 45, 0x4DBF, 0x4E00, 45, 0x9FFF, 0xAC00, 45, 0xD7AF, 0xF900, 45, 0xFAFF, 0xFF66, 45, 0xFF9F, 0x20000, 45, 0x2FFFF) || ']*';

CREATE TRIGGER items_unspaced_delete AFTER DELETE ON items BEGIN
    DELETE FROM items_unspaced WHERE rowid = old.id;
END;
CREATE TRIGGER items_unspaced_update AFTER UPDATE OF title, body, people ON items BEGIN
    DELETE FROM items_unspaced WHERE rowid = old.id;
    INSERT INTO items_unspaced (rowid, title, body, people)
        SELECT new.id, new.title, new.body, new.people
        WHERE new.title || ' ' || new.body GLOB '*[' || char(0xE00, 45, 0xEFF, 0x1000, 45, 0x109F, 0x1780, 45, 0x17FF, 0x3040, 45, 0x30FF, 0x3400, 45, 0x4DBF, 0x4E00, 45, 0x9FFF, 0xAC00, 45, 0xD7AF, 0xF900, 45, 0xFAFF, 0xFF66, 45, 0xFF9F, 0x20000, 45, 0x2FFFF) || ']*';
END;
