"""Many worlds over several processes: the CI-sized run (tests/test_sim.py) and the
soak (bench/sim_soak.py).

A world's tables each draw from their own random stream and meet the same schedule
of the store's faults, so a world splits into parts that run alone: part k of
``parts`` holds the tables whose index is k modulo ``parts`` (``World(only=...)``),
and the two processes of a 2-core machine each run one half of the same world.  A
failure is shrunk in the process that found it and reported with its seed and its
shortest trace."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.sim.shrink import simulate
from tests.sim.world import STORE_WIDE


@dataclass
class Figures:
    parts: int = 0
    seeds: set[int] = field(default_factory=set)
    hands: int = 0
    touched: int = 0  # hands a fault touched (every one verified)
    verified: int = 0
    on_curve: int = 0  # of those, verified on the curve alone (without the signature book)
    steps: int = 0
    virtual_s: float = 0.0  # summed over the parts' tables: table-seconds / tables per part
    cpu_s: float = 0.0
    faults: dict[str, int] = field(default_factory=dict)
    stood_away: int = 0  # seats stood up for their time away (D34)
    failures: list[str] = field(default_factory=list)

    def add(self, r: dict[str, Any]) -> None:
        self.parts += 1
        self.seeds.add(r["seed"])
        self.hands += r["hands"]
        self.touched += r["touched"]
        self.verified += r["verified"]
        self.on_curve += r["on_curve"]
        self.steps += r["steps"]
        self.virtual_s += r["virtual_s"]
        self.cpu_s += r["cpu_s"]
        for k, n in r["faults"].items():
            self.faults[k] = self.faults.get(k, 0) + n
        self.stood_away += r.get("stood_away", 0)
        if r["failure"]:
            self.failures.append(r["failure"])

    def line(self) -> str:
        return (
            f"{self.hands} hands ({self.touched} touched by a fault; {self.verified} transcripts verified, "
            f"{self.on_curve} of them on the curve alone) "
            f"in {len(self.seeds)} worlds, {self.cpu_s:.1f} s of CPU "
            f"({1000 * self.cpu_s / max(1, self.hands):.2f} ms a hand); faults {dict(sorted(self.faults.items()))}; "
            f"{self.stood_away} seats stood up for their time away"
        )


def one(args: tuple[int, int, int, dict[str, Any]]) -> dict[str, Any]:
    """Part ``k`` of ``parts`` of world ``seed``."""
    seed, k, parts, kw = args
    tables = kw.get("tables", 20)
    started = time.process_time()
    w, failure = simulate(seed, only=set(range(k, tables, parts)), **kw)
    return {
        "seed": seed,
        "part": k,
        "hands": w.hands_ended,
        "touched": w.touched_ended,
        "verified": w.verified,
        "on_curve": w.on_curve,
        "steps": w.steps,
        "virtual_s": w.now / 1000,
        "cpu_s": time.process_time() - started,
        # a store fault is counted once per world (in part 0); a table's in the part that has the table
        "faults": {f: n for f, n in w.injected.items() if k == 0 or f not in STORE_WIDE},
        "stood_away": w.stood_away,
        "failure": None if failure is None else failure.report(),
    }


def worlds(first: int, count: int, kw: dict[str, Any], parts: int) -> Iterator[dict[str, Any]]:
    """Worlds ``first`` … ``first + count - 1``, each split into ``parts`` processes."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(parts) as pool:
        args = [(seed, k, parts, kw) for seed in range(first, first + count) for k in range(parts)]
        yield from pool.imap_unordered(one, args)


def endless(first: int, kw: dict[str, Any], parts: int, enough: Any) -> Iterator[dict[str, Any]]:
    """World after world from ``first`` on, each split into ``parts`` processes, until
    ``enough(results so far)`` says stop; the parts of at most two worlds are in flight."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(parts) as pool:
        seed = first
        flying: list[Any] = []
        done: list[dict[str, Any]] = []
        while True:
            while len(flying) < 2 * parts and not enough(done):
                flying += [pool.apply_async(one, ((seed, k, parts, kw),)) for k in range(parts)]
                seed += 1
            if not flying:
                return
            ready = next((f for f in flying if f.ready()), None)
            if ready is None:
                flying[0].wait(1.0)
                continue
            flying.remove(ready)
            r = ready.get()
            done.append(r)
            yield r
