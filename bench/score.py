"""Best-arrangement scoring benchmark (issue 2).  Prints figures; not a test.

    python bench/score.py [--hands 10000] [--seed 1] [--rev REV]

Two sets of 13-card hands from a two-deck table (D1): uniformly random hands, and
near-complete hands built from runs and sets and then perturbed.  Reports the
median, p99 and maximum wall time per hand of ``best_arrangement`` on one core;
``--rev`` times ``verifier/arrange.py`` as it was at that git revision instead (the
figures before a change).  bench/score_worst.py hunts for the slowest hands.
The hands come from a seeded ``random.Random`` here in the benchmark only: no game
code uses it.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.score_worst import load_arrange
from verifier.cards import Card, card_of_id, wild_rank_of

DECKS = 2
PACK = list(range(DECKS * 53))


def random_hand(rng: random.Random) -> tuple[list[Card], int | None]:
    ids = rng.sample(PACK, 14)
    return [card_of_id(i, DECKS) for i in ids[:13]], wild_rank_of(card_of_id(ids[13], DECKS))


def near_complete_hand(rng: random.Random) -> tuple[list[Card], int | None]:
    """Runs and sets summing to 13 cards (sometimes with jokers or wild-rank cards
    standing in), then 0–3 cards replaced by random ones."""
    wild = wild_rank_of(card_of_id(rng.choice(PACK), DECKS))
    cards: list[Card] = []
    while len(cards) < 13:
        room = 13 - len(cards)
        if room < 3:
            cards += [card_of_id(rng.choice(PACK), DECKS) for _ in range(room)]
            break
        if rng.random() < 0.6:
            length = rng.randint(3, min(room, 6))
            suit = rng.randrange(4)
            start = rng.randint(1, 15 - length)  # positions 1..14
            run = [Card(suit, (p - 1) % 13) for p in range(start, start + length)]
            if cards and rng.random() < 0.4:
                run[rng.randrange(length)] = Card(-1, -1)
            cards += run
        else:
            size = min(room, rng.choice((3, 4)))
            rank = rng.randrange(13)
            suits = rng.sample(range(4), size)
            group = [Card(s, rank) for s in suits]
            if rng.random() < 0.3:
                group[0] = Card(-1, -1)
            cards += group
    for _ in range(rng.randint(0, 3)):
        cards[rng.randrange(13)] = card_of_id(rng.choice(PACK), DECKS)
    rng.shuffle(cards)
    return cards, wild


def measure(
    hands: list[tuple[list[Card], int | None]], repeat: int, best_arrangement: Callable[..., Any]
) -> dict[str, float]:
    """Per-hand time: the best of ``repeat`` runs (as timeit does), so a stray
    interruption by the machine does not count as the hand's cost; the slowest 2 %
    are timed again, best of 20, since on a busy machine a few runs in a row can all
    be interrupted, and the tail is what p99 and max are about."""

    def best_of(cards: list[Card], wild: int | None, runs: int) -> int:
        fastest = 1 << 62
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            best_arrangement(cards, wild)
            fastest = min(fastest, time.perf_counter_ns() - t0)
        return fastest

    timed = sorted(((best_of(cards, wild, repeat), i) for i, (cards, wild) in enumerate(hands)), reverse=True)
    for k in range(max(1, len(timed) // 50)):
        t, i = timed[k]
        timed[k] = (min(t, best_of(*hands[i], 20)), i)
    times = sorted(t for t, _ in timed)
    return {
        "median_ms": statistics.median(times) / 1e6,
        "p99_ms": times[int(len(times) * 0.99) - 1] / 1e6,
        "max_ms": times[-1] / 1e6,
    }


def calibration_us() -> float:
    """How fast the machine is right now: µs for ``sum(range(1000))``, best of 5
    (this VM's speed drifts by up to 1.6x over minutes; the figure lets runs be
    compared)."""
    import timeit

    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=5)) / 2000 * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hands", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs per hand; the fastest counts")
    ap.add_argument("--rev", help="time verifier/arrange.py as it was at this git revision")
    args = ap.parse_args()
    best_arrangement = load_arrange(args.rev).best_arrangement
    rng = random.Random(args.seed)
    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
        f"{platform.processor() or 'cpu'}; {args.hands} hands per set, seed {args.seed}, "
        f"best of {args.repeat} runs per hand; arrange {'at ' + args.rev if args.rev else 'of the work tree'}"
    )
    print(f"calibration: sum(range(1000)) takes {calibration_us():.1f} µs now")
    for name, make in (("random", random_hand), ("near-complete", near_complete_hand)):
        hands = [make(rng) for _ in range(args.hands)]
        valid = sum(best_arrangement(c, w).valid_declare for c, w in hands)
        r = measure(hands, args.repeat, best_arrangement)
        print(
            f"{name:14s} median {r['median_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms  "
            f"max {r['max_ms']:.3f} ms  (valid declares: {valid})"
        )

    print(f"calibration: sum(range(1000)) takes {calibration_us():.1f} µs now")


if __name__ == "__main__":
    main()
