"""``rummy-verify DIR`` throughput (issue 13, item 7): hands verified per second, per core.

    python -m bench.verify_throughput [--hands 10000] [--tables 100] [--dir DIR] [--jobs 1 2] [--profile 200]

Generates a folder of honest six-seat hands once (reused while its manifest matches):
``--tables`` tables, each one chain of consecutive hands (hand n+1 starts from hand
n's head), recorded with :class:`verifier.record.HandRecorder` as the server records
them — every move signed by its player's key, record times from a clock that keeps
every window — with the players playing :mod:`verifier.strategy`.  Then it times
``rummy-verify DIR --jobs N --key KEY`` for each N and prints hands/s of wall time,
hands per CPU-second (the command's and its workers' user + system time, which a
machine shared with other work disturbs far less) and the load average around the
run.  ``--profile K`` also profiles the verification of K of the hands in this
process (cProfile) and prints where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from verifier import vectors
from verifier.hand import TableRules
from verifier.strictjson import parse, unwrap_transcript
from verifier.transcript import verify_transcript

KEY = vectors.TEST_SIGNER.public_bytes
MANIFEST = "MANIFEST.txt"
RULES = TableRules(seats=6, point_value=2, commission_bps=500)


def _table(args: tuple[str, int, int]) -> tuple[int, int]:
    """Record one table's chain of hands into ``folder``; returns (hands, records)."""
    folder, table, hands = args
    prev: str | None = None
    records = 0
    for n in range(hands):
        hand = vectors.VectorHand(f"bench{table:04d}", n, RULES, list(range(6)), n % 6, prev_head=prev)
        hand.seed_phases()
        hand.play(vectors.greedy)
        if not hand.rec.ended:  # an honest server voids a hand that cannot go on (D33)
            hand.rec.void("the bench stopped a hand that would not end", hand.now + 1)
        t = hand.rec.transcript()
        prev = str(t["head"])
        records += len(t["log"])
        Path(folder, f"table{table:04d}-hand{n + 1:05d}.json").write_text(json.dumps(t), encoding="utf-8")
    return hands, records


def generate(folder: Path, hands: int, tables: int, processes: int) -> None:
    manifest = folder / MANIFEST
    want = f"hands={hands} tables={tables} seats=6 generator=bench/verify_throughput.py v1\n"
    if manifest.is_file() and manifest.read_text() == want:
        print(f"reusing {hands} hands in {folder}")
        return
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    per = [hands // tables + (1 if t < hands % tables else 0) for t in range(tables)]
    started = time.perf_counter()
    print(f"recording {hands} six-seat hands at {tables} tables with {processes} processes …", flush=True)
    total_records = 0
    with ProcessPoolExecutor(max_workers=processes) as pool:
        for done, (_, records) in enumerate(pool.map(_table, [(str(folder), t, n) for t, n in enumerate(per)]), 1):
            total_records += records
            if done % max(1, tables // 10) == 0:
                print(f"  {done}/{tables} tables ({time.perf_counter() - started:.0f} s)", flush=True)
    manifest.write_text(want)
    print(f"recorded in {time.perf_counter() - started:.0f} s; {total_records / hands:.1f} records per hand")


def time_cli(folder: Path, jobs: int, hands: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its worker processes)."""
    cmd = [sys.executable, "-m", "verifier.cli", str(folder), "--key", KEY.hex(), "--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = re.search(r"(\d+) passed, (\d+) failed", r.stdout)
    if r.returncode != 0 or m is None or int(m.group(1)) != hands:
        raise SystemExit(f"rummy-verify did not pass every hand: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return elapsed, cpu


def profile(folder: Path, k: int) -> None:
    files = sorted(folder.glob("*.json"))[:k]
    transcripts = [unwrap_transcript(parse(p.read_bytes(), str(p))) for p in files]
    prof = cProfile.Profile(time.process_time)  # CPU time: the neighbours' work is not counted
    started = time.process_time()
    prof.enable()
    for t in transcripts:
        assert verify_transcript(t, KEY, in_folder=True, parsed=True).ok  # as rummy-verify DIR does
    prof.disable()
    elapsed = time.process_time() - started
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(18)
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in table.values())
    ed = [v for (_, _, fn), v in table.items() if "Ed25519PublicKey" in fn and "verify" in fn]
    per_hand = elapsed / len(transcripts) * 1000
    print(f"\nprofile of {len(transcripts)} hands ({per_hand:.1f} ms of CPU a hand under cProfile):")
    print("  (cProfile slows every Python call, not the C inside them: Python's share is overstated)")
    print(
        f"  Ed25519 verifications: {sum(v[1] for v in ed) / len(transcripts):.1f} a hand, "
        f"{sum(v[2] for v in ed) / total:.0%} of the time"
    )
    print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--hands", type=int, default=10_000)
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "rummy-verify-bench")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--gen-jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--profile", type=int, default=0, metavar="K", help="profile K hands in this process")
    args = ap.parse_args(argv)
    generate(args.dir, args.hands, args.tables, args.gen_jobs)
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    for jobs in args.jobs:
        load = os.getloadavg()[0]
        elapsed, cpu = time_cli(args.dir, jobs, args.hands)
        rate = args.hands / elapsed
        print(
            f"rummy-verify DIR --jobs {jobs}: {args.hands} hands in {elapsed:.1f} s = {rate:.0f} hands/s "
            f"({rate / jobs:.0f} per process); {cpu:.1f} CPU-s = {args.hands / cpu:.0f} hands per CPU-second; "
            f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after",
            flush=True,
        )
    if args.profile:
        profile(args.dir, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
