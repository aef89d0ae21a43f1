"""The simulator's soak (issue 17): a million simulated hands through the real table
core, with faults at every effect boundary, every invariant checked after every step.

    python -m bench.sim_soak [--hands 1000000] [--per-seed 5000] [--workers 2] [--first-seed 1]
                             [--tables 100] [--fault-rate 2.0] [--json FILE]

Each seed is one world of ``--tables`` tables (two signing players each) with about
``--fault-rate`` faults per table every 5 virtual minutes, run until ``--per-seed``
hands have ended; seeds run in ``--workers`` processes.  Every hand is checked for
the invariants (tests/sim/world.py); every hand a fault touched and every 25th other
hand has its transcript verified by the verifier.  A failure is shrunk and printed
with its seed and its shortest trace; the soak goes on and exits 1 at the end.
Progress and the figures go to stdout (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sim.run import Figures, seeds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=1_000_000)
    ap.add_argument("--per-seed", type=int, default=5_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--fault-rate", type=float, default=2.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    # about 15 virtual seconds a hand at each table: twice that, so the hands end first
    duration = max(600_000, args.per_seed * 30_000 // args.tables)
    kw = {"tables": args.tables, "duration": duration, "fault_rate": args.fault_rate}
    started = time.perf_counter()
    figures = Figures()
    for r in seeds(args.first_seed, args.hands, args.per_seed, kw, args.workers):
        figures.add(r)
        wall = time.perf_counter() - started
        print(
            f"{wall:8.0f} s  seed {r['seed']}: {r['hands']} hands, {r['verified']} verified, "
            f"{'FAILED' if r['failure'] else 'ok'}; total {figures.hands} hands "
            f"({figures.hands / wall:.0f}/s)",
            flush=True,
        )
        if r["failure"]:
            print(r["failure"], flush=True)
    wall = time.perf_counter() - started
    out = {
        "hands": figures.hands,
        "seeds": figures.seeds,
        "transcripts_verified": figures.verified,
        "core_steps": figures.steps,
        "virtual_hours": round(figures.virtual_s / 3600, 1),
        "faults": figures.faults,
        "failures": len(figures.failures),
        "wall_s": round(wall, 1),
        "cpu_s": round(figures.cpu_s, 1),
        "hands_per_s": round(figures.hands / wall, 1),
        "hands_per_cpu_s": round(figures.hands / figures.cpu_s, 1) if figures.cpu_s else None,
        "workers": args.workers,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 1 if figures.failures else 0


if __name__ == "__main__":
    sys.exit(main())
