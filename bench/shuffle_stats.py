"""Shuffle statistics for rummy-pf/v1 (issue 3).  Prints figures; not a test.

    python bench/shuffle_stats.py [--decks 1000000] [--workers 2]

Derives decks through the real derivation (a fresh random server seed from
``secrets`` for each, then K, then the "deal" shuffle) for 106-card (two decks) and
159-card (three decks) packs, and reports chi-square p-values for card × position
and for the number of printed jokers in the first player's 13 cards (dealt
round-robin to 4 or 8 players) against the hypergeometric law.  Every p-value must
be at least 0.01 (the 99% level).
"""

from __future__ import annotations

import argparse
import multiprocessing
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import card_position_chi2, goodness_of_fit, hypergeometric
from verifier.fairness import deal_deck, derive_key, transcript_input

PACKS = {106: (2, 4), 159: (3, 8)}  # pack size -> (jokers, players dealt round-robin)


def count(args: tuple[int, int, bytes | None]) -> tuple[list[list[int]], list[int]]:
    """Counts for ``decks`` decks; seeds from ``secrets`` unless a base is given (tests)."""
    pack, decks, base = args
    jokers, players = PACKS[pack]
    table = [[0] * pack for _ in range(pack)]
    joker_hist = [0] * (jokers + 1)
    first_hand = range(0, 13 * players, players)
    t = transcript_input("stats", 1, "stats", [(0, "a", b""), (1, "b", b"")])
    for i in range(decks):
        seed = secrets.token_bytes(32) if base is None else base + i.to_bytes(8, "big")
        deck = deal_deck(derive_key(seed, t), pack)
        for pos, card in enumerate(deck):
            table[card][pos] += 1
        joker_hist[sum(1 for p in first_hand if deck[p] >= pack - jokers)] += 1
    return table, joker_hist


def run(pack: int, decks: int, workers: int, base: bytes | None = None) -> dict[str, float]:
    chunks = [decks // workers + (1 if w < decks % workers else 0) for w in range(workers)]
    jobs = [(pack, c, None if base is None else base + w.to_bytes(4, "big")) for w, c in enumerate(chunks)]
    if workers == 1:
        parts = [count(jobs[0])]
    else:
        with multiprocessing.Pool(workers) as pool:
            parts = pool.map(count, jobs)
    table = [[sum(p[0][c][q] for p in parts) for q in range(pack)] for c in range(pack)]
    hist = [sum(p[1][k] for p in parts) for k in range(len(parts[0][1]))]
    jokers, _ = PACKS[pack]
    chi_cp, df_cp, p_cp = card_position_chi2(table, decks)
    chi_j, df_j, p_j = goodness_of_fit(hist, hypergeometric(pack, jokers, 13))
    return {
        "decks": decks,
        "chi2_card_position": chi_cp,
        "df_card_position": df_cp,
        "p_card_position": p_cp,
        "chi2_jokers": chi_j,
        "df_jokers": df_j,
        "p_jokers": p_j,
        "joker_hist": hist,
    }  # type: ignore[dict-item]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decks", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    ok = True
    for pack in PACKS:
        t0 = time.time()
        r = run(pack, args.decks, args.workers)
        ok &= r["p_card_position"] >= 0.01 and r["p_jokers"] >= 0.01
        print(
            f"{pack}-card pack, {args.decks} decks ({time.time() - t0:.0f} s): "
            f"card x position chi2 {r['chi2_card_position']:.1f} df {r['df_card_position']} "
            f"p = {r['p_card_position']:.4f}; jokers in 13 cards {r['joker_hist']} "
            f"chi2 {r['chi2_jokers']:.2f} df {r['df_jokers']} p = {r['p_jokers']:.4f}"
        )
    print("all p-values >= 0.01 (pass at the 99% level)" if ok else "FAIL: a p-value is below 0.01")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
