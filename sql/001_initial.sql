-- 001: players, accounts and the double-entry ledger, tables, seats, hands and
-- their hash-chained event log.  Amounts are integer HT minor units (D18).

CREATE TABLE players (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    token_hash  bytea NOT NULL UNIQUE,          -- SHA-256 of the bearer token; the token is never stored
    is_bot      boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Every account's balance; the ledger entries below explain every change to it.
-- 'external' is where deposits come from (it goes negative by what was deposited);
-- every other account is never negative.
CREATE TABLE accounts (
    id          text PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('available', 'held', 'house', 'external')),
    player_id   text REFERENCES players(id),
    balance     bigint NOT NULL DEFAULT 0,
    CHECK (kind = 'external' OR balance >= 0)
);

CREATE TABLE ledger_tx (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('deposit', 'hold', 'release', 'settle')),
    hand_id     bigint,
    memo        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ledger_entries (
    tx_id       bigint NOT NULL REFERENCES ledger_tx(id),
    account_id  text NOT NULL REFERENCES accounts(id),
    amount      bigint NOT NULL,
    PRIMARY KEY (tx_id, account_id)
);

CREATE TABLE tables (
    id                text PRIMARY KEY,
    seats             integer NOT NULL CHECK (seats IN (4, 6, 8)),
    point_value       bigint NOT NULL CHECK (point_value > 0),
    commission_bps    integer NOT NULL CHECK (commission_bps BETWEEN 0 AND 10000),
    turn_seconds      integer NOT NULL CHECK (turn_seconds > 0),
    max_missed_turns  integer NOT NULL CHECK (max_missed_turns > 0),
    min_players       integer NOT NULL CHECK (min_players >= 2),
    next_hand_no      integer NOT NULL DEFAULT 1,
    head              text NOT NULL DEFAULT repeat('0', 64),   -- the table's chain head (rummy-pf/v1)
    dealer            integer,
    created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE seats (
    table_id    text NOT NULL REFERENCES tables(id),
    seat        integer NOT NULL,
    player_id   text NOT NULL REFERENCES players(id),
    sat_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_id, seat),
    UNIQUE (table_id, player_id)
);

CREATE TABLE hands (
    id           bigserial PRIMARY KEY,
    table_id     text NOT NULL REFERENCES tables(id),
    hand_no      integer NOT NULL,
    status       text NOT NULL CHECK (status IN ('seeding', 'playing', 'ended', 'void')),
    seed_nonce   bytea NOT NULL,               -- AES-GCM nonce
    seed_sealed  bytea NOT NULL,               -- the server seed, encrypted until the reveal
    commit_s     text NOT NULL,
    deadline     timestamptz,                  -- absolute time the current clock runs out
    transcript   jsonb,                        -- the signed transcript, once the hand ends
    started_at   timestamptz NOT NULL DEFAULT now(),
    ended_at     timestamptz,
    UNIQUE (table_id, hand_no)
);

CREATE TABLE hand_players (
    hand_id     bigint NOT NULL REFERENCES hands(id),
    seat        integer NOT NULL,
    player_id   text NOT NULL REFERENCES players(id),
    hold        bigint NOT NULL CHECK (hold >= 0),
    PRIMARY KEY (hand_id, seat),
    UNIQUE (hand_id, player_id)
);

-- The hand's event log: record i with its chain link h (docs/fairness.md §9).
CREATE TABLE hand_records (
    hand_id     bigint NOT NULL REFERENCES hands(id),
    i           integer NOT NULL,
    record      jsonb NOT NULL,
    h           text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hand_id, i)
);

-- One settlement per hand, ever: a retry finds the key and changes nothing.
CREATE TABLE settlements (
    hand_id     bigint PRIMARY KEY REFERENCES hands(id),
    tx_id       bigint NOT NULL REFERENCES ledger_tx(id),
    pot         bigint NOT NULL,
    commission  bigint NOT NULL
);

CREATE TABLE server_settings (
    key         text PRIMARY KEY,
    value       text NOT NULL
);

INSERT INTO accounts (id, kind) VALUES ('house:commission', 'house'), ('external:deposits', 'external');
