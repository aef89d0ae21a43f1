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
"""

from __future__ import annotations

import argparse
import os
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/i20v-bench"))
    ap.add_argument("--hands", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    files = sorted(str(p) for p in args.dir.glob("*.json"))[: args.hands]
    if not files:
        raise SystemExit(f"no hands in {args.dir}: write them with python -m bench.verify_throughput --dir {args.dir}")
    settings = Settings(KEY, None, False)
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
