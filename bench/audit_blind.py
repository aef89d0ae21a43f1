"""The room audit against cheating card rooms: what it flags, and what the friend gained.
Prints figures; not a test.

    python -m bench.audit_blind [--tables 6] [--hands 100 350] [--configs ...] [--seeds 1] [--workers 2]

A room is ``--tables`` 4-seat tables of a pool of players, each at two tables;
the house's friend ``F`` sits (always present) at every other table, or at every
table with ``--everywhere``; each other player is absent from a hand at 15 %.
Honest faults per table: ``no_commit`` and ``withheld`` at 1 % each per seat-hand
and a turn to the clock at 1 % (``honest``), or, for a room of flaky
networks (``flaky``), each table's three rates drawn from 0.5 %–3 %.  The cheating
configurations (tests/audit_sim.py, tests/audit_cheats.py), the house cheating for
``F`` at each of F's tables:

- ``grind/r``: claims one honest seat's reveal never arrived when that deals ``F``
  a better hand, in a share r of ``F``'s hands (at most one seat left out);
- ``playout/r``: the same, choosing the deck by a won play-out;
- ``walkover/r``: when ``F`` would not win the honest deck, claims every other
  seat's reveal never arrived, so ``F`` is the one seat dealt in and wins (D29);
- ``clock/r``: stays silent on an opponent's winning declare and lets the clock move.

The room is played to its largest size once and audited on each table's first N
hands for each N of ``--hands`` (alpha = 0.001).  Printed per configuration and size:
hands in the room, whether the room was flagged and by which tests, and ``F``'s win
rate and HT per hand (``F``'s edge: against the honest room of the same seed).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.audit_cheats import Cheat, TableSpec, friend_edge, play_table
from tests.audit_sim import Grinder
from verifier.audit import audit
from verifier.handfacts import HandFacts

FRIEND = "F"


def room_specs(config: str, tables: int, seed: int, everywhere: bool = False) -> list[TableSpec]:
    pool = [f"p{i}" for i in range(2 * tables)]
    rng = random.Random(f"room/{seed}")
    kind, _, rate_text = config.partition("/")
    rate = float(rate_text) if rate_text else 0.0
    specs = []
    for t in range(tables):
        seated = [pool[(2 * t + i) % len(pool)] for i in range(4)]  # each pool player at two tables
        if everywhere or t % 2 == 0:
            seated[0] = FRIEND
        rates = (0.01, 0.01, 0.01)
        if kind == "flaky":
            rates = (rng.uniform(0.005, 0.03), rng.uniform(0.005, 0.03), rng.uniform(0.005, 0.03))
        cheat = Cheat(FRIEND, kind, rate) if kind in ("walkover", "clock") else None  # type: ignore[arg-type]
        grinder = None
        if kind in ("grind", "playout"):
            grinder = Grinder(FRIEND, rate=rate, criterion="deal" if kind == "grind" else "playout")
        specs.append(
            TableSpec(
                f"t{t}",
                tuple(seated),
                no_commit_rate=rates[0],
                withhold_rate=rates[1],
                clock_rate=rates[2],
                cheat=cheat,
                grinder=grinder,
            )
        )
    return specs


def run_room(config: str, tables: int, hands: tuple[int, ...], seed: int, everywhere: bool) -> list[str]:
    t0 = time.process_time()
    per_table: list[list[HandFacts]] = []
    cheats = 0
    for i, spec in enumerate(room_specs(config, tables, seed, everywhere)):
        played = play_table(spec, seed * 100 + i, max(hands), verify=False)
        per_table.append(played.facts)
        cheats += played.cheats + played.ground
    lines = []
    for n in hands:
        facts = [h for table in per_table for h in table[:n]]
        report = audit(facts)
        flagged = [f"{t['test']}:{t.get('player') or t.get('table')}" for t in report["tests"] if t["flagged"]]
        top = report["tests"][0] if report["tests"] else None
        edge = friend_edge(facts, FRIEND)
        lines.append(
            f"| {config} | {seed} | {len(facts)} | {', '.join(flagged) or '-'} | "
            + (f"{top['test']}:{top.get('player') or top.get('table')} p={top['p_value']:.2g}" if top else "-")
            + f" (K={report['tarone_k']}) | {edge['win_rate']:.3f} | {edge['ht_per_hand']:.1f} |"
        )
    lines.append(f"  ({config} seed {seed}: {cheats} cheated hands, {time.process_time() - t0:.0f} s CPU)")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--tables", type=int, default=6)
    ap.add_argument("--hands", type=int, nargs="+", default=[100, 350], help="hands per table")
    ap.add_argument(
        "--configs",
        nargs="+",
        default=["honest", "flaky", "grind/0.1", "grind/0.25", "walkover/0.1", "walkover/1", "clock/1"],
    )
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--everywhere", action="store_true", help="F (and the cheating) at every table")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    hands = tuple(sorted(args.hands))
    jobs = [(c, args.tables, hands, s, args.everywhere) for c in args.configs for s in range(1, args.seeds + 1)]
    print("| config | seed | room hands | flagged | smallest p | F win rate | F HT/hand |")
    print("|---|---|---|---|---|---|---|")
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for lines in pool.map(run_room, *zip(*jobs, strict=True)):
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
