-- 004: operating the card room (docs/api.md, "Operating the card room"):
--  * withdrawals are ledger transactions like deposits;
--  * a table can be closing (no new hand; the hand in progress finishes) or closed;
--  * an operator can stand a seat up as its hand ends;
--  * operator tokens are kept with their history, so a rotated token is refused by name;
--  * every operator action is written to the audit log.

ALTER TABLE ledger_tx DROP CONSTRAINT ledger_tx_kind_check;
ALTER TABLE ledger_tx ADD CONSTRAINT ledger_tx_kind_check
    CHECK (kind IN ('deposit', 'withdraw', 'hold', 'release', 'settle'));

ALTER TABLE tables ADD COLUMN status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closing', 'closed'));
ALTER TABLE seats ADD COLUMN stand_after_hand boolean NOT NULL DEFAULT false;

CREATE TABLE operator_tokens (
    token_hash  bytea PRIMARY KEY,               -- SHA-256 of the token; the token is never stored
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz                      -- set when the token was rotated away
);
CREATE UNIQUE INDEX operator_tokens_one_active ON operator_tokens ((true)) WHERE retired_at IS NULL;
INSERT INTO operator_tokens (token_hash)
    SELECT decode(value, 'hex') FROM server_settings WHERE key = 'operator_token_hash';
DELETE FROM server_settings WHERE key = 'operator_token_hash';

CREATE TABLE audit_log (
    id       bigserial PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    action   text NOT NULL,
    target   text,
    params   jsonb NOT NULL DEFAULT '{}',
    outcome  text NOT NULL
);
