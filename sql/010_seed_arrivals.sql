-- 010: when the table judged each stored commitment and seed (ms, the table's time: the
-- `arrived` of the signed ack, docs/fairness.md §15).  Record 1 (the commitments) and
-- record 2 (the reveals) are never dated before a move they hold arrived (§15.7); a
-- table loaded in the seed phases on a clock behind the one that acknowledged them goes
-- on from the newest of these (D37), as it does from its newest record.

ALTER TABLE hand_seeds ADD COLUMN commit_arrived bigint;
ALTER TABLE hand_seeds ADD COLUMN reveal_arrived bigint;
