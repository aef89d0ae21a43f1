"""How often the simulator reaches the fault paths of D33 and D36 (tests/sim/paths.py)
in worlds of faults aimed at the deal and the void (tests/sim/dealfaults.py), over
more seeds than the suite runs: ``python -m bench.sim_paths [first] [count]``."""

from __future__ import annotations

import sys
import time
from collections import Counter

from tests.sim.paths import PATHS, counting
from tests.test_sim_paths import world


def main() -> None:
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    total: Counter[str] = Counter()
    hands, started = 0, time.perf_counter()
    for seed in range(first, first + count):
        with counting() as seen:
            w = world(seed).run()
        hands += w.hands_ended
        total.update(seen)
        print(f"seed {seed}: {w.hands_ended} hands; {dict(sorted(seen.items()))}", flush=True)
    print(f"{count} worlds, {hands} hands, {time.perf_counter() - started:.1f} s")
    for path in PATHS:
        print(f"  {path:36} {total[path]:6}")


if __name__ == "__main__":
    main()
