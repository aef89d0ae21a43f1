"""Many seeds over several processes: the CI-sized run (tests/test_sim.py) and the
soak (bench/sim_soak.py).  A failure is shrunk in the process that found it and
reported with its seed and its shortest trace."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.sim.shrink import simulate


@dataclass
class Figures:
    seeds: int = 0
    hands: int = 0
    verified: int = 0
    steps: int = 0
    virtual_s: float = 0.0
    cpu_s: float = 0.0
    faults: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def add(self, r: dict[str, Any]) -> None:
        self.seeds += 1
        self.hands += r["hands"]
        self.verified += r["verified"]
        self.steps += r["steps"]
        self.virtual_s += r["virtual_s"]
        self.cpu_s += r["cpu_s"]
        for k, n in r["faults"].items():
            self.faults[k] = self.faults.get(k, 0) + n
        if r["failure"]:
            self.failures.append(r["failure"])


def one(args: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    seed, kw = args
    started = time.process_time()
    w, failure = simulate(seed, **kw)
    return {
        "seed": seed,
        "hands": w.hands_ended,
        "verified": w.verified,
        "steps": w.steps,
        "virtual_s": w.now / 1000,
        "cpu_s": time.process_time() - started,
        "faults": w.injected,
        "failure": None if failure is None else failure.report(),
    }


def seeds(first: int, hands: int, per_seed: int, kw: dict[str, Any], workers: int) -> Iterator[dict[str, Any]]:
    """Run seed after seed (``per_seed`` hands each) until ``hands`` hands have ended."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        n = max(1, -(-hands // per_seed))
        args = [(first + i, {**kw, "stop_after_hands": per_seed}) for i in range(n)]
        yield from pool.imap_unordered(one, args)
