"""What the table core costs a step, with no IO at all (issue 20 item 2).  Prints
figures; not a test.

    python bench/core_step.py [--seeds 1 2 3] [--tables 20] [--seconds 400]
    PYTHONPATH=/tmp/old-tree python /tmp/old-tree/bench/core_step.py   # another tree

The deterministic simulator (``tests/sim``: the real ``TableCore`` of every table,
its IO simulated, no faults) runs one world a seed, ``--tables`` tables (two players
each) for ``--seconds`` virtual seconds, and the time spent inside
``TableCore.step`` is summed (``time.perf_counter_ns`` around each call: the core
alone, not the simulator's own invariant checks).  A world is the same steps in the
same order in any tree whose core behaves the same, so the step counts printed must
agree between two trees compared, and the microseconds a step are then a measure of
the core's CPU that the in-process server bench (``bench/action_profile.py``, ±5 %
between windows) cannot resolve.  Run trees alternated; print the load with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service.tablecore.core import TableCore
from tests.sim.world import World


def timed_world(seed: int, tables: int, seconds: int) -> tuple[int, int]:
    """(steps, ns inside TableCore.step) of one fault-free world."""
    spent = [0, 0]
    plain = TableCore.step

    def step(self: TableCore, inp: Any, now: int, stalled: int = 0) -> Any:
        t = time.perf_counter_ns()
        try:
            return plain(self, inp, now, stalled)
        finally:
            spent[0] += time.perf_counter_ns() - t
            spent[1] += 1

    TableCore.step = step  # type: ignore[method-assign]
    try:
        World(seed, tables=tables, duration=seconds * 1000, fault_rate=0.0).run()
    finally:
        TableCore.step = plain  # type: ignore[method-assign]
    return spent[1], spent[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--seconds", type=int, default=400, help="virtual seconds a world")
    args = ap.parse_args()
    print(f"core: {Path(sys.modules[TableCore.__module__].__file__ or '').parent}; load {os.getloadavg()[0]:.1f}")
    per_step = []
    for seed in args.seeds:
        steps, ns = timed_world(seed, args.tables, args.seconds)
        per_step.append(ns / steps / 1000)
        print(f"seed {seed}: {steps} steps, {ns / 1e6:.1f} ms inside TableCore.step, {per_step[-1]:.2f} µs a step")
    print(f"µs a step: median {statistics.median(per_step):.2f}; load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
