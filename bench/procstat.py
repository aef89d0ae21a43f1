"""What the load bench reads from /proc and the machine: CPU ticks of process trees,
resident memory, the machine's busy and stolen time, the load average, the CPU model,
and which code was measured.  Also the straight-line fit the memory scenario reports.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Snapshot:
    """Every process's CPU ticks (utime + stime), name and parent, and the machine's."""

    at: float
    procs: dict[int, tuple[int, str, int]]  # pid -> (ticks, comm, ppid)
    machine: tuple[int, int, int]

    @classmethod
    def take(cls) -> Snapshot:
        procs = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                text = (d / "stat").read_text()
            except OSError:
                continue
            f = text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on
            procs[int(d.name)] = (int(f[11]) + int(f[12]), text[text.index("(") + 1 : text.rindex(")")], int(f[1]))
        return cls(time.time(), procs, machine_ticks())

    def tree(self, pid: int) -> set[int]:
        """``pid`` and every process below it."""
        children: dict[int, list[int]] = {}
        for p, (_t, _c, ppid) in self.procs.items():
            children.setdefault(ppid, []).append(p)
        out, todo = set(), [pid]
        while todo:
            p = todo.pop()
            if p in self.procs and p not in out:
                out.add(p)
                todo.extend(children.get(p, ()))
        return out


def cpu_seconds(s0: Snapshot, s1: Snapshot, pids: set[int]) -> float:
    """CPU seconds of ``pids`` between two snapshots (a process born in between counts
    from its birth; one that died in between is not counted)."""
    t = sum(s1.procs[p][0] - (s0.procs[p][0] if p in s0.procs else 0) for p in pids if p in s1.procs)
    return t / CLK_TCK


def cpu_pct(s0: Snapshot, s1: Snapshot, pids: set[int]) -> float:
    """CPU of ``pids`` between two snapshots, in % of one core."""
    return round(100 * cpu_seconds(s0, s1, pids) / max(1e-6, s1.at - s0.at), 1)


def descendants(pid: int) -> list[int]:
    return sorted(Snapshot.take().tree(pid))


def rss_kb(pids: Sequence[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def machine_ticks() -> tuple[int, int, int]:
    """(busy, stolen, total) clock ticks of the whole machine, from /proc/stat: busy
    is user + nice + system + irq + softirq; stolen is the hypervisor's steal time."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = parts[:8]
    return user + nice + system + irq + softirq, steal, sum(parts[:8])


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def machine() -> dict[str, Any]:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def git_commit() -> str:
    """HEAD, and whether service/ differs from it (the server measured is the work tree)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "service"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" + uncommitted changes in service/" if dirty.stdout.strip() else "")


def slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The least-squares slope of ys on xs; None for fewer than two distinct xs."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
