"""What grew between two tracemalloc snapshots of one process (bench/tracemem).

    python bench/tracemem/compare.py DIR [--pid PID] [--first N] [--last M] [--top 25] [--by traceback]

Takes the process's snapshot number N (default: its first) and M (default: its last)
and prints the allocation sites whose live bytes grew most, with the count of blocks,
filtered to the server's own code and the libraries it calls (tracemalloc's own and
the import system's allocations left out).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tracemalloc
from pathlib import Path


def snapshots(where: Path) -> dict[int, list[Path]]:
    out: dict[int, list[Path]] = collections.defaultdict(list)
    for p in sorted(where.glob("*.snap")):
        m = re.fullmatch(r"(\d+)-(\d+)\.snap", p.name)
        if m:
            out[int(m.group(1))].append(p)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--pid", type=int, default=None, help="default: every process with at least two snapshots")
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--last", type=int, default=-1)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--by", choices=("lineno", "traceback", "filename"), default="lineno")
    args = ap.parse_args()
    found = snapshots(args.dir)
    pids = [args.pid] if args.pid else [p for p, s in found.items() if len(s) >= 2]
    keep = [
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
        tracemalloc.Filter(False, "*/bench/tracemem/*"),
    ]
    for pid in pids:
        files = found[pid]
        a, b = files[args.first], files[args.last]
        old = tracemalloc.Snapshot.load(str(a)).filter_traces(keep)
        new = tracemalloc.Snapshot.load(str(b)).filter_traces(keep)
        tot_old = sum(s.size for s in old.statistics("filename"))
        tot_new = sum(s.size for s in new.statistics("filename"))
        print(f"== pid {pid}: {a.name} -> {b.name}: traced {tot_old / 1e6:.1f} MB -> {tot_new / 1e6:.1f} MB")
        for stat in new.compare_to(old, args.by)[: args.top]:
            print(f"{stat.size_diff / 1024:+10.1f} KB {stat.count_diff:+8d} blocks  (now {stat.size / 1024:.0f} KB)")
            frames = stat.traceback.format(limit=8 if args.by == "traceback" else 1)
            for line in frames:
                print("      " + line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
