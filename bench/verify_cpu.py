"""The verifier's CPU per six-seat hand in this process, against its Ed25519 floor (issue 20, item 7).

    python -m bench.verify_cpu [--dir /tmp/i20v-bench] [--hands 600] [--rounds 3]

Verifies the hands of a folder written by :mod:`bench.verify_throughput` (generate it
with that first) exactly as ``rummy-verify DIR`` does — each file read, parsed and
verified by :func:`verifier.batch.verify_file` — and times it with
``time.process_time()`` (CPU of this process: a busy machine's other work is not
counted), best of ``--rounds``.  In the same rounds it times a bare loop of
``Ed25519PublicKey.verify`` over every signature those hands carry (collected once,
as the verifier meets them): the floor no verifier of these hands gets under, since
every signature is verified once (docs/fairness.md §9).  It prints hands per
CPU-second, ms of CPU a hand, the floor's, their ratio, the CPU the Python around the
signatures costs (the hand's CPU less its signatures at the floor's rate), and the
load average around the run.

``--instructions`` counts instead of timing: the same work run under valgrind
(``cachegrind --cache-sim=no``, ``PYTHONHASHSEED=0``), once over A hands and once over
B, so that the difference is B - A hands' verification alone (start-up and imports
cancel out); likewise the bare verify loop, once and four times over the first hands'
signatures.  Instructions do not depend on what else the machine runs, where CPU
seconds on a shared VM vary by a quarter between runs: a lever's effect is read
from them, hands per CPU-second from the timed rounds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from bench.verify_throughput import KEY
from verifier import ed25519
from verifier.batch import Settings, verify_file


def signatures(files: list[str], settings: Settings) -> list[tuple[Ed25519PublicKey, bytes, bytes]]:
    """Every (key, signature, message) the verifier checks in ``files``, in order."""
    seen: list[tuple[Ed25519PublicKey, bytes, bytes]] = []
    real = ed25519.verify

    def keep(key: Ed25519PublicKey, sig: bytes, message: bytes) -> bool:
        seen.append((key, sig, message))
        return real(key, sig, message)

    ed25519.verify = keep  # type: ignore[assignment]
    try:
        for f in files:
            if not verify_file(f, settings).ok:
                raise SystemExit(f"{f} does not verify")
    finally:
        ed25519.verify = real  # type: ignore[assignment]
    return seen


def floor_seconds(sigs: list[tuple[Ed25519PublicKey, bytes, bytes]]) -> float:
    started = time.process_time()
    for key, sig, message in sigs:
        key.verify(sig, message)
    return time.process_time() - started


def verify_seconds(files: list[str], settings: Settings) -> float:
    started = time.process_time()
    for f in files:
        if not verify_file(f, settings).ok:  # pragma: no cover - the signatures pass checked them
            raise SystemExit(f"{f} does not verify")
    return time.process_time() - started


FLOOR_HANDS = 5  # the hands whose signatures the counted bare loop verifies


def instructions(cmd: list[str]) -> int:
    """The instructions ``cmd`` executes, by valgrind's count."""
    vg = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    r = subprocess.run(vg + cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False)
    m = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
    if r.returncode != 0 or m is None:
        raise SystemExit(f"valgrind failed: {r.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def count(args: argparse.Namespace, files: list[str], settings: Settings) -> None:
    """Under valgrind (``--count``): the work whose instructions are counted."""
    what, n = args.count
    if what == "hands":
        verify_seconds(files[: int(n)], settings)
    else:
        sigs = signatures(files[:FLOOR_HANDS], settings)
        for _ in range(int(n)):
            floor_seconds(sigs)
        print(len(sigs))


def count_instructions(args: argparse.Namespace, files: list[str]) -> None:
    a, b = args.instructions
    me = [sys.executable, "-m", "bench.verify_cpu", "--dir", str(args.dir), "--hands", str(args.hands), "--count"]
    hand = (instructions([*me, "hands", str(b)]) - instructions([*me, "hands", str(a)])) / (b - a)
    settings = Settings(KEY, None, False)
    per_hand = len(signatures(files[a:b], settings)) / (b - a)
    sigs = len(signatures(files[:FLOOR_HANDS], settings))
    sig = (instructions([*me, "floor", "4"]) - instructions([*me, "floor", "1"])) / (3 * sigs)
    floor = sig * per_hand
    print(
        f"hands {a + 1}-{b} of {args.dir}: {hand / 1e6:.2f}M instructions a hand; floor {floor / 1e6:.2f}M "
        f"({per_hand:.1f} signatures x {sig / 1e3:.0f}k); ratio {hand / floor:.2f}x the floor; "
        f"the Python around the signatures {(hand - floor) / 1e6:.2f}M"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/i20v-bench"))
    ap.add_argument("--hands", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--instructions", type=int, nargs=2, metavar=("A", "B"), help="count hands A+1..B (e.g. 5 20)")
    ap.add_argument("--count", nargs=2, metavar=("WHAT", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    files = sorted(str(p) for p in args.dir.glob("*.json"))[: args.hands]
    if not files:
        raise SystemExit(f"no hands in {args.dir}: write them with python -m bench.verify_throughput --dir {args.dir}")
    settings = Settings(KEY, None, False)
    if args.count:
        count(args, files, settings)
        return 0
    if args.instructions:
        count_instructions(args, files)
        return 0
    load: list[Any] = [round(x, 1) for x in os.getloadavg()]
    sigs = signatures(files, settings)  # also warms the caches a run of rummy-verify warms in its first hands
    n = len(files)
    per_hand = len(sigs) / n
    print(f"{n} hands, {per_hand:.1f} Ed25519 signatures a hand; python {sys.version.split()[0]}", flush=True)
    best = floor = float("inf")
    for r in range(args.rounds):
        f = floor_seconds(sigs)
        v = verify_seconds(files, settings)
        floor, best = min(floor, f), min(best, v)
        print(
            f"  round {r + 1}: {n / v:.1f} hands per CPU-second ({v / n * 1000:.2f} ms a hand); "
            f"bare verify {f / len(sigs) * 1e6:.0f} us",
            flush=True,
        )
    floor_hand = floor / n
    print(
        f"best: {n / best:.1f} hands per CPU-second ({best / n * 1000:.2f} ms a hand); "
        f"floor {1 / floor_hand:.1f} hands per CPU-second ({floor_hand * 1000:.2f} ms a hand: "
        f"{per_hand:.1f} x {floor / len(sigs) * 1e6:.0f} us); ratio {best / floor:.2f}x the floor; "
        f"the Python around the signatures {(best - floor) / n * 1000:.2f} ms a hand; "
        f"load average {load} before, {[round(x, 1) for x in os.getloadavg()]} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
