"""Shrinking a failing simulation: the same seed, fewer faults, one table, a shorter
run, until nothing more can go and the run still fails the same way.  Delta debugging
(Zeller's ddmin) over the fault schedule; each table draws from its own random
stream, so it replays alone."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.sim.world import SECOND, Fault, Violation, World


@dataclass
class Failure:
    seed: int
    faults: list[Fault]
    only: set[int] | None
    duration: int
    violation: Violation
    trace: list[str]
    runs: int = 0
    # every transcript of the failing run, verified after the failure: how many, and which failed
    transcripts: tuple[int, list[str]] = (0, [])

    def report(self) -> str:
        lines = [
            f"simulation failed: seed {self.seed}: {self.violation}",
            f"shortest reproduction ({self.runs} runs to shrink): World({self.seed}, only={self.only}, "
            f"duration={self.duration}, faults=[...]) with {len(self.faults)} fault(s):",
            *(f"  {f!r}" for f in self.faults),
            "the failing table's last inputs:",
            *(f"  {line}" for line in self.trace),
            f"every transcript of the failing run verified: {self.transcripts[0]}, "
            f"of which {len(self.transcripts[1])} do not verify",
            *(f"  {line}" for line in self.transcripts[1][:20]),
        ]
        return "\n".join(lines)


def _kind(v: Violation) -> str:
    """A violation's kind, without its numbers: shrinking keeps the same kind."""
    return re.sub(r"[-\d.]+", "#", v.what)


def run_once(seed: int, faults: list[Fault], only: set[int] | None, duration: int, **kw: Any) -> World:
    return World(seed, faults=faults, only=only, duration=duration, **kw).run()


def shrink(seed: int, first: Violation, world: World, **kw: Any) -> Failure:
    """The smallest fault list (and one table, and the run cut just after the
    violation) that still fails with the same kind of violation."""
    kind = _kind(first)
    index = int(first.table[1:])
    duration = first.at + SECOND
    runs = 0
    best: Violation = first
    best_trace = next(t for t in world.tables if t.tid == first.table).lines()

    def fails(faults: list[Fault], only: set[int] | None) -> bool:
        nonlocal runs, best, best_trace
        runs += 1
        w = World(seed, faults=faults, only=only, duration=duration, **kw)
        try:
            w.run()
        except Violation as v:
            if _kind(v) == kind:
                best = v
                best_trace = next(t for t in w.tables if t.tid == v.table).lines()
                return True
        return False

    faults = [f for f in world.faults if f.at <= first.at]
    only: set[int] | None = {index}
    if not fails(faults, only):
        only = None  # it needs the other tables (it should not: each replays alone)
    faults = ddmin(faults, lambda fs: fails(fs, only))
    fails(faults, only)  # the trace of the final list
    return Failure(seed, faults, only, duration, best, best_trace, runs)


def ddmin(items: list[Fault], fails: Callable[[list[Fault]], bool]) -> list[Fault]:
    """A 1-minimal sublist of ``items`` for which ``fails`` still holds."""
    n = 2
    while len(items) >= 2:
        chunk = max(1, len(items) // n)
        parts = [items[i : i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for i in range(len(parts)):
            rest = [f for j, p in enumerate(parts) if j != i for f in p]
            if fails(rest):
                items, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    if len(items) == 1 and fails([]):
        return []
    return items


def simulate(seed: int, **kw: Any) -> tuple[World, Failure | None]:
    """Run one seed; on a violation, shrink it."""
    w = World(seed, **kw)
    try:
        w.run()
    except Violation as v:
        transcripts = w.verify_all()
        kw.pop("duration", None)
        kw.pop("faults", None)
        kw.pop("only", None)
        kw.pop("fault_rate", None)
        kw.pop("store_fault_rate", None)
        kw.pop("clock_rate", None)
        kw.pop("away_rate", None)
        failure = shrink(seed, v, w, **kw)
        failure.transcripts = transcripts
        return w, failure
    return w, None
