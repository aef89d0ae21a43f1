-- 005: several server nodes on one database (docs/deploy.md).  Each table is owned by
-- exactly one node through its lease; the epoch rises on every takeover, and every
-- write a table makes checks it (fencing), so a node that lost its lease can never
-- write for that table again.

CREATE TABLE nodes (
    node_id     text PRIMARY KEY,
    public_url  text NOT NULL,                 -- where its clients connect
    seen_at     timestamptz NOT NULL DEFAULT now(),
    started_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE table_leases (
    table_id    text PRIMARY KEY REFERENCES tables(id),
    owner       text,                          -- a node_id, or NULL when released
    epoch       bigint NOT NULL DEFAULT 0,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity'
);

INSERT INTO table_leases (table_id) SELECT id FROM tables;
