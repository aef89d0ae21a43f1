"""The room audit's power and false-flag rate (issue 16, item 9).  Prints figures; not a test.

    python -m bench.audit_power [--honest 100] [--grinding 20] [--hands 50 100 200 300]
                                [--configs honest deal/1 deal/0.5 deal/0.25 playout/1 playout/0.25]
                                [--workers 2]

Each table is a 4-seat table of four players simulated by tests/audit_sim.py: the
bots' strategy, every move signed, genuine ``no_commit`` and ``withheld`` seats at
1 % each per seat-hand, a turn to the clock at 1 %, each player but the first
absent from a hand at 15 %.  ``honest`` tables have an honest dealer; ``deal/r``
and ``playout/r`` a dealer that grinds a share r of its colluder's hands, keeping
of the decks it could deal by claiming one honest seat's reveal never arrived the
one that gives its colluder the best dealt hand (``deal``) or a won play-out
(``playout``).  Every hand is verified (``verify_transcript``) and reduced to its
facts as ``rummy-verify audit`` does; the audit then runs on each table's first N
hands for each N of ``--hands``, at alpha = 0.001.  Printed: per configuration and
N, how many tables were flagged (any test), and for grinding tables how many were
flagged on the colluder and how many on an honest player; the seconds per hand.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.audit_sim import Grinder, TableSim
from verifier.audit import audit
from verifier.handfacts import hand_facts
from verifier.transcript import verify_transcript

PLAYERS = ["p0", "p1", "p2", "p3"]
COLLUDER = "p0"


@dataclass(frozen=True)
class Outcome:
    config: str
    seed: int
    flags: tuple[tuple[int, bool, bool, bool], ...]  # (hands, any flag, colluder flagged, other flagged)
    details: tuple[str, ...]  # each flag: hands, test, subject, p
    play_s: float
    audit_s: float
    hands: int


def grinder(config: str) -> Grinder | None:
    if config == "honest":
        return None
    criterion, rate = config.split("/")
    assert criterion in ("deal", "playout")
    return Grinder(COLLUDER, rate=float(rate), criterion="deal" if criterion == "deal" else "playout")


def run_table(config: str, seed: int, checkpoints: tuple[int, ...]) -> Outcome:
    sim = TableSim(f"{config.replace('/', '-')}-{seed}", PLAYERS, seed=seed, grinder=grinder(config))
    t0 = time.process_time()
    transcripts = list(sim.hands(max(checkpoints)))
    t1 = time.process_time()
    facts = []
    for t in transcripts:
        report = verify_transcript(t)
        assert report.ok, report.failure
        facts.append(hand_facts(t))
    flags = []
    details = []
    for n in checkpoints:
        tests = [t for t in audit(facts[:n])["tests"] if t["flagged"]]
        mine = any(t.get("player") == COLLUDER for t in tests)
        others = any(t.get("player") not in (None, COLLUDER) for t in tests)
        flags.append((n, bool(tests), mine, others))
        details += [f"{n} hands: {t['test']} {t.get('player') or t.get('table')} p = {t['p_value']:.2g}" for t in tests]
    t2 = time.process_time()
    return Outcome(config, seed, tuple(flags), tuple(details), t1 - t0, t2 - t1, len(transcripts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--honest", type=int, default=100, help="honest tables")
    ap.add_argument("--grinding", type=int, default=20, help="tables per grinding configuration")
    ap.add_argument("--hands", type=int, nargs="+", default=[50, 100, 200, 300])
    ap.add_argument(
        "--configs", nargs="+", default=["honest", "deal/1", "deal/0.5", "deal/0.25", "playout/1", "playout/0.25"]
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5000, help="the first table's seed (5000: the drill's honest tables)")
    args = ap.parse_args(argv)
    checkpoints = tuple(sorted(args.hands))
    jobs = [
        (config, args.seed + i)
        for config in args.configs
        for i in range(args.honest if config == "honest" else args.grinding)
    ]
    print(f"{len(jobs)} tables of {checkpoints[-1]} hands, {args.workers} workers", flush=True)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(run_table, c, s, checkpoints) for c, s in jobs]
        for n, f in enumerate(as_completed(futures), 1):
            outcomes.append(f.result())
            if n % 10 == 0 or n == len(jobs):
                print(f"  {n}/{len(jobs)} tables, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    print(f"wall time {time.monotonic() - started:.0f} s\n")
    header = "| configuration | tables | " + " | ".join(f"flagged at {n} hands" for n in checkpoints) + " |"
    print(header)
    print("|" + "---|" * (2 + len(checkpoints)))
    for config in args.configs:
        mine = [o for o in outcomes if o.config == config]
        if not mine:
            continue
        cells = []
        for i in range(len(checkpoints)):
            any_flag = sum(o.flags[i][1] for o in mine)
            if config == "honest":
                cells.append(f"{any_flag} of {len(mine)}")
            else:
                colluder = sum(o.flags[i][2] for o in mine)
                other = sum(o.flags[i][3] for o in mine)
                cells.append(f"{colluder} of {len(mine)} (an honest player: {other})")
        print(f"| {config} | {len(mine)} | " + " | ".join(cells) + " |")
    print()
    for o in sorted(outcomes, key=lambda o: (o.config, o.seed)):
        if o.config == "honest" and o.details:
            print(f"honest table, seed {o.seed}: flagged at " + "; ".join(o.details))
    for config in args.configs:
        mine = [o for o in outcomes if o.config == config]
        if mine:
            hands = sum(o.hands for o in mine)
            print(
                f"{config}: {sum(o.play_s for o in mine) / hands * 1000:.0f} ms CPU a hand to play and sign, "
                f"{sum(o.audit_s for o in mine) / hands * 1000:.0f} ms to verify and audit (all checkpoints)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
