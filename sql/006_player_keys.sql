-- 006: one player key, one player (docs/fairness.md §9, §13; RULES.md D36).  A key
-- registered by one player is refused to another ('key_in_use'), so no hand lists one
-- key for two seats.  A database where two players already share a key is not
-- repaired here: the migration stops and names them, and the operator decides whose
-- key it is (the other registers a key of their own).

DO $$
DECLARE
    shared text;
BEGIN
    SELECT string_agg(ids, '; ') INTO shared FROM (
        SELECT string_agg(id, ', ' ORDER BY id) AS ids
        FROM players WHERE public_key IS NOT NULL
        GROUP BY public_key HAVING count(*) > 1
    ) AS dup;
    IF shared IS NOT NULL THEN
        RAISE EXCEPTION 'players share a public key (%): each key must be one player''s; clear all but one with UPDATE players SET public_key = NULL WHERE id = ...', shared;
    END IF;
END $$;

CREATE UNIQUE INDEX players_public_key_unique ON players (public_key) WHERE public_key IS NOT NULL;
