-- 009: one-time tickets for a WebSocket to another node of the card room (docs/api.md,
-- "WebSocket /ws").  A browser's session cookie goes only to the host that set it, so a
-- page whose table is served by a node on another host name asks its own node for a
-- ticket (POST /api/session/ticket) and offers it to that node in the handshake.  A
-- ticket opens one socket within a minute; only its SHA-256 is kept, as for tokens.

CREATE TABLE ws_tickets (
    id_hash     bytea PRIMARY KEY,
    player_id   text NOT NULL REFERENCES players(id),
    expires_at  timestamptz NOT NULL
);

CREATE INDEX ws_tickets_expiry ON ws_tickets (expires_at);
