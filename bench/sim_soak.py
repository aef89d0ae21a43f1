"""The simulator's soak (issue 17): a million simulated hands through the real table
core, with faults at every effect boundary, every invariant checked after every step.

    python -m bench.sim_soak [--hands 1000000] [--minutes M] [--workers 2] [--first-seed 1]
                             [--tables 100] [--duration 660] [--fault-rate 2.0]
                             [--clock-rate 1.0] [--away-rate 1.0] [--stall-rate 1.0] [--verify-every 25]
                             [--json FILE]

World after world (seeds from ``--first-seed`` on), each of ``--tables`` tables (two
signing players each) for ``--duration`` virtual seconds with about ``--fault-rate``
faults of its own per table and as many of the store's every 5 virtual minutes, about
``--clock-rate`` steps back of a table's clock, ``--away-rate`` players who walk away
for 5–60 s (D34: a seat away 20 s at a table too few are connected to deal at stands
up) and ``--stall-rate`` stalls of a table's node for 1.3–2.9 s (D37: too short for a
freeze; the moves that came meanwhile are read after the late wake), each on a stream
of its own; each world is split into ``--workers`` processes
(tests/sim/run.py).  It stops launching worlds once ``--hands`` hands have ended or
``--minutes`` of wall time have passed, and lets the worlds in flight finish.  Every hand is checked for the invariants
(tests/sim/world.py); every hand a fault touched and every ``--verify-every``-th other
hand has its transcript verified by the verifier (one in ten of those on the curve
alone, the rest with the signature book: tests/sim/sigbook.py); after a failure every
transcript of the failing world is verified.  A failure is shrunk and printed with
its seed and its shortest trace; the soak goes on and exits 1 at the end.  SIGTERM or Ctrl-C
stops it with its workers and prints the figures of the parts done (exit 130).  Progress
and the figures (CPU seconds, hands per CPU second, the machine's load) go to stdout
(docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.sim.run import Figures, endless


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=1_000_000)
    ap.add_argument("--minutes", type=float, default=None, help="stop launching worlds after this long")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--duration", type=int, default=660, help="virtual seconds a world")
    ap.add_argument("--fault-rate", type=float, default=2.0)
    ap.add_argument("--clock-rate", type=float, default=1.0, help="a table's clock steps back (every 5 virtual min)")
    ap.add_argument(
        "--away-rate", type=float, default=1.0, help="a table's player walks away for 5-60 s (every 5 virtual min)"
    )
    ap.add_argument(
        "--stall-rate", type=float, default=1.0, help="a table's node stalls for 0.3-2.9 s (every 5 virtual min)"
    )
    ap.add_argument(
        "--short-stall-rate",
        type=float,
        default=2.0,
        help="a table's node stalls for 11-349 ms across its next wake, not yet metered (every 5 virtual min)",
    )
    ap.add_argument(
        "--last-moment", type=float, default=0.02, help="how often a seat on turn moves in the turn's last 300 ms"
    )
    ap.add_argument("--verify-every", type=int, default=25)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    kw = {
        "tables": args.tables,
        "duration": args.duration * 1000,
        "fault_rate": args.fault_rate,
        "clock_rate": args.clock_rate,
        "away_rate": args.away_rate,
        "stall_rate": args.stall_rate,
        "short_stall_rate": args.short_stall_rate,
        "last_moment": args.last_moment,
        "verify_every": args.verify_every,
    }
    started = time.perf_counter()
    load_start = os.getloadavg()
    loads: list[float] = []
    figures = Figures()

    def enough(done: list[dict[str, Any]]) -> bool:
        if args.minutes is not None and time.perf_counter() - started > 60 * args.minutes:
            return True
        return bool(sum(r["hands"] for r in done) >= args.hands)

    stopped = False

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # SIGTERM as Ctrl-C: the pool's workers are stopped with it (left alone, a killed
    # soak's worlds ran on as orphans) and the figures so far are still printed.
    signal.signal(signal.SIGTERM, stop)
    try:
        for r in endless(args.first_seed, kw, args.workers, enough):
            _report(r, figures, started, loads)
    except KeyboardInterrupt as e:
        stopped = True
        print(
            f"stopped ({e or 'SIGINT'}): the worlds in flight are lost; the figures are those of the parts done",
            flush=True,
        )

    wall = time.perf_counter() - started
    per_cpu = figures.hands / figures.cpu_s if figures.cpu_s else 0.0
    out = {
        "hands": figures.hands,
        "hands_touched_by_a_fault": figures.touched,
        "worlds": len(figures.seeds),
        "transcripts_verified": figures.verified,
        "transcripts_verified_on_the_curve_alone": figures.on_curve,
        "core_steps": figures.steps,
        "virtual_table_hours": round(figures.virtual_s * args.tables / args.workers / 3600, 1),
        "faults": dict(sorted(figures.faults.items())),
        "seats_stood_up_for_their_time_away": figures.stood_away,
        "failures": len(figures.failures),
        "wall_s": round(wall, 1),
        "cpu_s": round(figures.cpu_s, 1),
        "ms_cpu_per_hand": round(1000 * figures.cpu_s / max(1, figures.hands), 2),
        "hands_per_cpu_s": round(per_cpu, 1),
        "hands_per_wall_s": round(figures.hands / wall, 1),
        "cpu_hours_for_a_million": round(1_000_000 / per_cpu / 3600, 2) if per_cpu else None,
        "workers": args.workers,
        "load_average_at_start": [round(x, 2) for x in load_start],
        "load_average_mean_during": round(sum(loads) / len(loads), 2) if loads else None,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "stopped_by_a_signal": stopped,
    }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 1 if figures.failures else (130 if stopped else 0)


def _report(r: dict[str, Any], figures: Figures, started: float, loads: list[float]) -> None:
    figures.add(r)
    wall = time.perf_counter() - started
    loads.append(os.getloadavg()[0])
    print(
        f"{wall:8.0f} s  world {r['seed']} part {r['part']}: {r['hands']} hands in {r['cpu_s']:.0f} s of CPU, "
        f"{r['verified']} verified, {'FAILED' if r['failure'] else 'ok'}; total {figures.hands} hands, "
        f"{figures.hands / figures.cpu_s:.0f} a CPU second, {figures.hands / wall:.0f} a second; "
        f"load {loads[-1]:.1f}",
        flush=True,
    )
    if r["failure"]:
        print(r["failure"], flush=True)


if __name__ == "__main__":
    sys.exit(main())
