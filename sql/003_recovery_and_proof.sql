-- 003: what recovery (D32-D34) and rummy-pf/v2 need.
--  * players register an Ed25519 public key; they sign their moves with its private key;
--  * seed commitments and reveals keep the player's signature;
--  * while a hand is live its records are stored as a public projection (what a
--    spectator may see) plus the whole record sealed with AES-GCM (key outside the
--    database), so a copy of the database shows no hidden card;
--  * seats count the hands their player sat out (D34); tables say after how many the
--    seat is stood up;
--  * a voided hand keeps its reason; records that failed to replay are moved aside.

ALTER TABLE players ADD COLUMN public_key bytea CHECK (public_key IS NULL OR length(public_key) = 32);

ALTER TABLE hand_seeds ADD COLUMN commit_psig text;
ALTER TABLE hand_seeds ADD COLUMN reveal_psig text;

ALTER TABLE hand_records ADD COLUMN sealed bytea;

ALTER TABLE seats ADD COLUMN away_hands integer NOT NULL DEFAULT 0 CHECK (away_hands >= 0);
ALTER TABLE tables ADD COLUMN max_away_hands integer NOT NULL DEFAULT 3 CHECK (max_away_hands BETWEEN 1 AND 100);

ALTER TABLE hands ADD COLUMN void_reason text;

CREATE TABLE hand_records_quarantine (
    hand_id     bigint NOT NULL REFERENCES hands(id),
    i           integer NOT NULL,
    record      jsonb NOT NULL,
    sealed      bytea,
    h           text NOT NULL,
    moved_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX hands_in_progress ON hands (table_id) WHERE status IN ('seeding', 'playing');
