"""What publishing a hand's transcript costs the server, two ways (issue 20 item 4).
Prints figures; not a test.

    python bench/publish.py [--hands 40] [--rounds 5]

A table forgets its stored action records while the hand is played and reads them
back when it ends (``service.tablecore.steps``).  Published *as dicts* (the way of
``cf3814e``): the stored texts decoded, checked and held again
(``HandRecorder.fill``), the transcript built as one dict of the whole log
(``HandRecorder.transcript``), signed over its canonical JSON and encoded again for
the database.  Published *as text* (today's): ``HandRecorder.transcript_text``, each
stored text decoded, checked and encoded once, the log's text joined, signed, stored.

Hands: six-seat hands played by ``verifier.vectors`` (the greedy policy), every
action record forgotten but the newest eight.  For each way: CPU time a hand (the
median of ``--rounds`` rounds over every hand, ``time.process_time``), and by
tracemalloc the peak of memory allocated while one hand is published (what the
interpreter must find room for at once, beside what it already holds).  The two
ways are checked to give the same bytes first.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service import fastjson
from service.tablecore.steps import RECENT_KEPT
from verifier import vectors
from verifier.hand import TableRules
from verifier.record import HandRecorder


def _played(n: int) -> tuple[HandRecorder, list[bytes]]:
    rec = vectors.play_hand("publish", n, TableRules(seats=6), list(range(6)), n % 6, vectors.greedy).rec
    rec.encode = fastjson.canonical
    texts = [fastjson.canonical(r) for r in rec.records]
    return rec, texts


def _ready(rec: HandRecorder, texts: list[bytes]) -> list[bytes]:
    """The hand as the server has it when it ends (every action record forgotten but
    the newest few, whatever a way before did); the stored texts of those forgotten."""
    gone = rec.records.forgotten
    if gone:
        rec.records.fill([fastjson.loads(texts[i]) for i in gone])
    rec.forget_stored(len(texts), RECENT_KEPT)
    return [texts[i] for i in rec.records.forgotten]


def as_dicts(rec: HandRecorder, stored: list[bytes]) -> bytes:
    rec.fill([fastjson.loads(t) for t in stored])
    return fastjson.canonical(rec.transcript())


def as_text(rec: HandRecorder, stored: list[bytes]) -> bytes:
    return rec.transcript_text(stored, decode=fastjson.loads)


WAYS: dict[str, Callable[[HandRecorder, list[bytes]], bytes]] = {"as dicts": as_dicts, "as text": as_text}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hands", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    hands = [_played(n) for n in range(args.hands)]
    records = sum(len(t) for _, t in hands)
    print(f"{platform.python_implementation()} {platform.python_version()}, load {os.getloadavg()[0]:.2f}")
    print(f"{len(hands)} six-seat hands, {records / len(hands):.1f} records a hand")

    for rec, texts in hands:  # the same bytes both ways
        made = {name: way(rec, _ready(rec, texts)) for name, way in WAYS.items()}
        assert made["as dicts"] == made["as text"], "the two ways disagree"

    cpu: dict[str, list[float]] = {name: [] for name in WAYS}
    for _ in range(args.rounds):
        for name, way in WAYS.items():
            spent = 0.0
            for rec, texts in hands:
                stored = _ready(rec, texts)
                t0 = time.process_time()
                way(rec, stored)
                spent += time.process_time() - t0
            cpu[name].append(spent / len(hands))

    peak: dict[str, list[int]] = {name: [] for name in WAYS}
    tracemalloc.start()
    for name, way in WAYS.items():
        for rec, texts in hands:
            stored = _ready(rec, texts)
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            way(rec, stored)
            peak[name].append(tracemalloc.get_traced_memory()[1] - base)
    tracemalloc.stop()

    print("| way | CPU µs a hand (median of rounds) | peak KB allocated at once a hand (median of hands) |")
    print("|---|---|---|")
    for name in WAYS:
        print(f"| {name} | {statistics.median(cpu[name]) * 1e6:,.0f} | {statistics.median(peak[name]) / 1024:,.1f} |")
    cpu_ratio = statistics.median(cpu["as text"]) / statistics.median(cpu["as dicts"])
    peak_ratio = statistics.median(peak["as text"]) / statistics.median(peak["as dicts"])
    print(f"as text / as dicts: CPU {cpu_ratio:.2f}, peak {peak_ratio:.2f}")


if __name__ == "__main__":
    main()
