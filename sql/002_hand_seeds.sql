-- 002: every player commitment and reveal is stored the moment it is accepted,
-- before the player is told, so nothing accepted is lost (FAIRNESS.md steps 2-3).

CREATE TABLE hand_seeds (
    hand_id      bigint NOT NULL REFERENCES hands(id),
    seat         integer NOT NULL,
    commit       bytea NOT NULL CHECK (length(commit) = 32),
    seed         bytea CHECK (seed IS NULL OR length(seed) = 32),
    committed_at timestamptz NOT NULL DEFAULT now(),
    revealed_at  timestamptz,
    PRIMARY KEY (hand_id, seat)
);
