-- 008: operator commands sent again (docs/api.md, "Sending a command again").  A
-- deposit or a withdrawal may carry an Idempotency-Key; the key, what the command
-- asked (a SHA-256 of its action, target and parameters) and the answer it got are
-- stored in the same transaction as the money's move, so a second sending with the
-- same key is answered from here and never moves the money again.  Keys are kept
-- seven days (service.once.KEEP_DAYS).

CREATE TABLE operator_requests (
    key          text PRIMARY KEY,
    fingerprint  bytea NOT NULL,
    status       integer,
    answer       jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX operator_requests_age ON operator_requests (created_at);
