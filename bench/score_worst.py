"""Hunt for the slowest hands of the best-arrangement search (issue 20).  Prints
figures; not a test.

    python bench/score_worst.py [--seed 1] [--restarts 48] [--steps 300] [--top 30]
                                [--write tests/score_worst.json] [--corpus-out FILE]
    python bench/score_worst.py --time FILE [--rev c0282bc]

The search climbs on :func:`verifier.arrange.search_work` (calls and groups tried:
deterministic, unlike a time).  Each climb starts from a structured shape (a long
run of one suit with copies, many wild cards, near-sets over a few ranks, two
crowded suits, a random or a near-complete hand, or the slowest hand of issue 20) in
a two- or three-deck pack (D1), with a wild rank or a printed-joker indicator (D5),
and takes the mutations that do not lower the work: a card replaced by any face, a
neighbour of its suit, a copy of another card, a joker or a wild-rank card; a card
moved to another suit; a new indicator.  Every hand stays one a pack could deal: no
face (the indicator included) more often than there are decks.

A hand of 13 cards is counted as it is (a count at the hand's end, a declare's kept
cards); a hand of 14 is a declare check over every card that could be thrown, as
``verifier.strategy.best_discard`` does: its work is the sum over the distinct
discards.

It prints the worst hands of each size with their work and time (best of
``--repeat`` runs: a stray interruption does not count), then figures over every
distinct 13-card hand it met (the 13-card climbs' hands and every discard of the
14-card ones).  ``--write`` keeps the worst as regression data with their
provenance (tests/test_score_worst.py checks them); ``--corpus-out`` writes every
hand met; ``--time FILE`` times the hands of such a file, ``--rev REV`` with
``verifier/arrange.py`` as it was at git revision REV (the figures before a change).
The random generator is seeded here in the benchmark only: no game code uses one.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verifier import arrange  # noqa: E402
from verifier.cards import FACES, JOKER, Card, wild_rank_of  # noqa: E402

SUITED = FACES[:52]
ISSUE_20 = "JH 5H TH 3H 4H 7H 7H 9H 6H 5H 8H 6H TD"  # the slowest hand the issue names, 7 wild

# A hand to search: its cards (13 or 14), the wild indicator, the decks in the pack.
Hand = tuple[tuple[Card, ...], Card, int]


def wild_of(h: Hand) -> int | None:
    return wild_rank_of(h[1])


def dealable(cards: list[Card], indicator: Card, decks: int) -> bool:
    """Could a pack of ``decks`` decks (D1) deal these cards and this indicator?"""
    return all(n <= decks for n in Counter([*cards, indicator]).values())


def thirteens(h: Hand) -> list[list[Card]]:
    """The 13-card hands a hand stands for: itself, or (14 cards) each distinct discard."""
    cards = list(h[0])
    if len(cards) == 13:
        return [cards]
    out = []
    for face in sorted(set(cards)):
        kept = list(cards)
        kept.remove(face)
        out.append(kept)
    return out


def work(h: Hand) -> int:
    wild = wild_of(h)
    return sum(arrange.search_work(c, wild) for c in thirteens(h))


# -- seeds: structured shapes -----------------------------------------------------
def fill(rng: random.Random, cards: list[Card], size: int, pool: list[Card]) -> list[Card]:
    while len(cards) < size:
        cards.append(rng.choice(pool))
    return cards[:size]


def seed_long_run(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    """A long run of one suit with duplicates, the wild rank inside it."""
    s = rng.randrange(4)
    length = rng.randint(7, 12)
    start = rng.randint(0, 13 - length)
    run = [Card(s, start + j) for j in range(length)]
    cards = fill(rng, list(run), size - rng.randint(0, 2), run)
    indicator = Card(rng.randrange(4), rng.choice(run).rank)
    return fill(rng, cards, size, list(SUITED)), indicator


def seed_many_wilds(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    """Printed jokers and wild-rank cards, the rest clustered in a few faces."""
    indicator = rng.choice(SUITED)
    cards = [JOKER] * rng.randint(0, 3) + [Card(rng.randrange(4), indicator.rank) for _ in range(rng.randint(1, 5))]
    s, r0 = rng.randrange(4), rng.randrange(9)
    near = [Card(s, r0 + j) for j in range(5)] + [Card(rng.randrange(4), r0 + 2) for _ in range(3)]
    return fill(rng, cards, size, near), indicator


def seed_near_sets(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    """Three or four consecutive ranks in three or four suits: sets and runs compete."""
    r0 = rng.randrange(10)
    ranks = range(r0, r0 + rng.randint(3, 4))
    suits = rng.sample(range(4), rng.randint(3, 4))
    pool = [Card(s, r) for s in suits for r in ranks]
    indicator = rng.choice([*SUITED, JOKER])
    return fill(rng, [], size, pool), indicator


def seed_two_suits(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    """Two crowded suits over the same ranks, with duplicates."""
    s1, s2 = rng.sample(range(4), 2)
    r0 = rng.randrange(7)
    pool = [Card(s, r) for s in (s1, s2) for r in range(r0, r0 + 6)]
    indicator = Card(rng.randrange(4), rng.randrange(r0, r0 + 6))
    return fill(rng, [], size, pool), indicator


def seed_random(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    return [rng.choice(FACES) for _ in range(size)], rng.choice(FACES)


def seed_near_complete(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    """Runs and sets summing to the hand, then a card or two replaced."""
    cards: list[Card] = []
    while len(cards) < size:
        if rng.random() < 0.6:
            length, s, start = rng.randint(3, 6), rng.randrange(4), rng.randrange(11)
            cards += [Card(s, min(start + j, 12)) for j in range(length)]
        else:
            r = rng.randrange(13)
            cards += [Card(s, r) for s in rng.sample(range(4), rng.randint(3, 4))]
    cards = cards[:size]
    for _ in range(rng.randint(0, 2)):
        cards[rng.randrange(size)] = rng.choice(FACES)
    return cards, rng.choice(FACES)


def seed_issue_20(rng: random.Random, size: int) -> tuple[list[Card], Card]:
    cards = [Card.parse(t) for t in ISSUE_20.split()]
    return fill(rng, cards, size, list(SUITED)), Card.parse("7S")


SEEDS: list[Callable[[random.Random, int], tuple[list[Card], Card]]] = [
    seed_long_run,
    seed_many_wilds,
    seed_near_sets,
    seed_two_suits,
    seed_random,
    seed_near_complete,
    seed_issue_20,
]


def seeded(rng: random.Random, size: int) -> Hand:
    decks = rng.choice((2, 3))
    make = rng.choice(SEEDS)
    while True:
        cards, indicator = make(rng, size)
        if rng.random() < 0.15:
            indicator = JOKER  # D5: only the printed jokers are wild
        if dealable(cards, indicator, decks):
            return tuple(cards), indicator, decks


# -- mutations -------------------------------------------------------------------
def mutate(rng: random.Random, h: Hand) -> Hand:
    cards, indicator, decks = list(h[0]), h[1], h[2]
    for _ in range(rng.choice((1, 1, 2))):
        i = rng.randrange(len(cards))
        c = cards[i]
        op = rng.randrange(8)
        if op == 0:
            cards[i] = rng.choice(FACES)
        elif op in (1, 2) and not c.is_joker:
            cards[i] = Card(c.suit, (c.rank + rng.choice((-2, -1, 1, 2))) % 13)
        elif op == 3:
            cards[i] = rng.choice(cards)
        elif op == 4:
            cards[i] = JOKER
        elif op == 5 and not indicator.is_joker:
            cards[i] = Card(rng.randrange(4), indicator.rank)
        elif op == 6 and not c.is_joker:
            cards[i] = Card(rng.randrange(4), c.rank)
        elif op == 7:
            indicator = rng.choice([*FACES, rng.choice(cards)])
    return tuple(cards), indicator, decks


def key_of(h: Hand) -> tuple[tuple[Card, ...], int | None]:
    """Hands that count alike: the same faces and the same wild rank."""
    return tuple(sorted(h[0])), wild_of(h)


def climb(
    rng: random.Random, size: int, restarts: int, steps: int
) -> dict[tuple[tuple[Card, ...], int | None], tuple[int, Hand]]:
    """Every distinct hand met, with its work."""
    seen: dict[tuple[tuple[Card, ...], int | None], tuple[int, Hand]] = {}

    def cost(h: Hand) -> int:
        k = key_of(h)
        if k not in seen:
            seen[k] = (work(h), h)
        return seen[k][0]

    for _ in range(restarts):
        cur = seeded(rng, size)
        cur_w = cost(cur)
        for _ in range(steps):
            nxt = mutate(rng, cur)
            if not dealable(list(nxt[0]), nxt[1], nxt[2]):
                continue
            w = cost(nxt)
            if w >= cur_w:
                cur, cur_w = nxt, w
    return seen


# -- timing ----------------------------------------------------------------------
def time_ms(best: Callable[..., object], cards: list[Card], wild: int | None, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        best(cards, wild)
        runs.append(time.perf_counter_ns() - t0)
    return min(runs) / 1e6


def calibration_us() -> float:
    """µs for ``sum(range(1000))``, best of 5, as bench/score.py prints it."""
    import timeit

    return min(timeit.repeat("sum(range(1000))", number=2000, repeat=5)) / 2000 * 1e6


def load_arrange(rev: str | None) -> ModuleType:
    """verifier.arrange, or the file as it was at git revision ``rev``."""
    if rev is None:
        return arrange
    text = subprocess.run(
        ["git", "show", f"{rev}:verifier/arrange.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / f"arrange_{rev.replace('~', '_').replace('^', '_')}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def figures(times: list[float]) -> str:
    times = sorted(times)
    p99 = times[max(0, int(len(times) * 0.99) - 1)]
    return f"median {statistics.median(times):.3f} ms  p99 {p99:.3f} ms  max {times[-1]:.3f} ms  ({len(times)} hands)"


def parse_hand(entry: dict[str, object]) -> Hand:
    cards = tuple(Card.parse(t) for t in str(entry["hand"]).split())
    return cards, Card.parse(str(entry["wild"])), int(str(entry["decks"]))


def text_of(h: Hand) -> str:
    return " ".join(str(c) for c in h[0])


def time_corpus(hands: list[Hand], module: ModuleType, repeat: int) -> list[tuple[float, Hand, list[Card]]]:
    """(ms, hand, the 13 cards) for every 13-card hand the corpus stands for.  The
    slowest 2 % are timed again, best of 20: on a busy machine a few runs in a row
    can all be interrupted, and the tail is what the figures are about."""
    out = []
    for h in hands:
        for cards in thirteens(h):
            out.append((time_ms(module.best_arrangement, cards, wild_of(h), repeat), h, cards))
    out.sort(key=lambda x: -x[0])
    for i in range(max(1, len(out) // 50)):
        t, h, cards = out[i]
        out[i] = (min(t, time_ms(module.best_arrangement, cards, wild_of(h), 20)), h, cards)
    return out


def entry(cards: tuple[Card, ...] | list[Card], h: Hand, work: int, origin: str) -> dict[str, object]:
    return {
        "hand": " ".join(str(c) for c in cards),
        "wild": str(h[1]),
        "decks": h[2],
        "work": work,
        "from": origin,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--restarts", type=int, default=48, help="climbs per hand size")
    ap.add_argument("--steps", type=int, default=300, help="mutations per climb (a quarter of it for 14 cards)")
    ap.add_argument("--top", type=int, default=30, help="worst hands printed (and kept) per hand size")
    ap.add_argument("--repeat", type=int, default=5, help="runs per timed hand; the fastest counts")
    ap.add_argument("--write", type=Path, help="keep the worst hands here as regression data (JSON)")
    ap.add_argument("--corpus-out", type=Path, help="write every distinct 13-card hand met here (JSON)")
    ap.add_argument("--time", type=Path, help="only time the hands of this file (JSON, as written above)")
    ap.add_argument("--rev", help="time with verifier/arrange.py as it was at this git revision")
    args = ap.parse_args()
    module = load_arrange(args.rev)
    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}; "
        f"arrange {'at ' + args.rev if args.rev else 'of the work tree'}; best of {args.repeat} runs per hand"
    )
    print(f"calibration: sum(range(1000)) takes {calibration_us():.1f} µs now")
    if args.time:
        data = json.loads(args.time.read_text(encoding="utf-8"))
        timed = time_corpus([parse_hand(e) for e in data["hands"]], module, args.repeat)
        print(f"{args.time}, every 13-card hand: {figures([t for t, _, _ in timed])}")
        checks: dict[Hand, float] = {}
        for t, h, _ in timed:
            if len(h[0]) == 14:
                checks[h] = checks.get(h, 0.0) + t
        if checks:
            print(f"  the 14-card declare checks, each whole: {figures(list(checks.values()))}")
        for t, h, cards in sorted(timed, key=lambda x: -x[0])[:10]:
            print(f"  {t:7.3f} ms  {' '.join(map(str, cards))}  wild {h[1]}")
        print(f"calibration: sum(range(1000)) takes {calibration_us():.1f} µs now")
        return

    rng = random.Random(args.seed)
    issue: Hand = (tuple(Card.parse(t) for t in ISSUE_20.split()), Card.parse("7S"), 2)
    kept = [entry(issue[0], issue, work(issue), "issue 20: the slowest hand found before")]
    corpus: dict[tuple[tuple[Card, ...], int | None], Hand] = {}
    for size in (13, 14):
        t0 = time.monotonic()
        steps = args.steps if size == 13 else max(1, args.steps // 4)
        seen = climb(rng, size, args.restarts, steps)
        for _, h in seen.values():
            for cards in thirteens(h):
                corpus.setdefault((tuple(sorted(cards)), wild_of(h)), (tuple(cards), h[1], h[2]))
        ranked = sorted(seen.values(), key=lambda x: -x[0])
        print(
            f"\n{size} cards: {len(seen)} distinct hands met in {args.restarts} climbs of {steps} steps "
            f"({time.monotonic() - t0:.0f} s); the worst {args.top} by work"
            + ("" if size == 13 else " (summed over every discard; ms: the whole check, and its slowest discard)")
        )
        for w, h in ranked[: args.top]:
            ms = [time_ms(module.best_arrangement, c, wild_of(h), args.repeat) for c in thirteens(h)]
            shown = f"{sum(ms):7.3f} ms" if size == 13 else f"{sum(ms):7.3f} ms (max {max(ms):.3f})"
            print(f"  work {w:6d}  {shown}  {text_of(h)}  wild {h[1]}  decks {h[2]}")
            kept.append(entry(h[0], h, w, f"the climb on {size} cards"))
            if size == 14:
                # its slowest discard, kept as a 13-card hand too (checked against the reference)
                cards = max(thirteens(h), key=lambda c: arrange.search_work(c, wild_of(h)))
                origin = f"the slowest discard of {text_of(h)}"
                kept.append(entry(cards, h, arrange.search_work(cards, wild_of(h)), origin))
    hands13 = list(corpus.values())
    timed = time_corpus(hands13, module, 3)
    print(f"\nevery distinct 13-card hand met (best of 3): {figures([t for t, _, _ in timed])}")
    for t, h, cards in sorted(timed, key=lambda x: -x[0])[:5]:
        print(f"  {t:7.3f} ms  {' '.join(map(str, cards))}  wild {h[1]}  work {arrange.search_work(cards, wild_of(h))}")
    print(f"calibration: sum(range(1000)) takes {calibration_us():.1f} µs now")
    if args.corpus_out:
        rows = [entry(h[0], h, arrange.search_work(list(h[0]), wild_of(h)), "met") for h in hands13]
        args.corpus_out.write_text(json.dumps({"hands": rows}) + "\n", encoding="utf-8")
        print(f"wrote {len(rows)} hands to {args.corpus_out}")
    if args.write:
        unique: dict[tuple[str, str], dict[str, object]] = {}
        for e in kept:
            unique.setdefault((str(e["hand"]), str(e["wild"])), e)
        out = {
            "about": (
                "The slowest hands bench/score_worst.py found for verifier.arrange (issue 20): the worst 13-card "
                "hands, the worst 14-card declare checks (every distinct discard scored, as "
                "verifier.strategy.best_discard does) and the slowest discard of each. tests/test_score_worst.py "
                "checks every 13-card hand against the exhaustive reference and every hand's search work against "
                "a bound. 'work' is verifier.arrange.search_work (summed over the discards for 14 cards) when the "
                "file was written."
            ),
            "generator": (
                f"python bench/score_worst.py --seed {args.seed} --restarts {args.restarts} "
                f"--steps {args.steps} --top {args.top} --write {args.write}"
            ),
            "commit": subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
            ).stdout.strip(),
            "date": datetime.date.today().isoformat(),
            "hands": list(unique.values()),
        }
        args.write.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"kept {len(unique)} hands in {args.write}")


if __name__ == "__main__":
    main()
