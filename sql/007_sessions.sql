-- 007: browser sessions (docs/api.md, "Sessions").  The page signs in once with the
-- player token and is then known by an HttpOnly cookie, so that no script on the page
-- can read a credential.  Only the SHA-256 of a session id is kept, as for tokens.

CREATE TABLE sessions (
    id_hash     bytea PRIMARY KEY,
    player_id   text NOT NULL REFERENCES players(id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

CREATE INDEX sessions_player ON sessions (player_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
