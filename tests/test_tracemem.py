"""bench/tracemem: a process started with it on its PYTHONPATH writes tracemalloc
snapshots, and compare.py names the line whose memory grew between two."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_snapshots_are_written_and_the_growth_is_found(tmp_path: Path) -> None:
    grow = (
        "import glob, os, time\n"
        "kept, where = [], os.environ['RUMMY_BENCH_TRACEMALLOC_DIR']\n"
        "deadline = time.monotonic() + 60  # a bound only a hang reaches\n"
        "while len(glob.glob(where + '/*.snap')) < 2 and time.monotonic() < deadline:\n"
        "    kept.append(bytearray(64 * 1024))  # the growth: line 5\n"
        "    time.sleep(0.01)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "bench" / "tracemem"),
        "RUMMY_BENCH_TRACEMALLOC_DIR": str(tmp_path),
        "RUMMY_BENCH_TRACEMALLOC_EVERY": "0.3",
    }
    script = tmp_path / "grow.py"
    script.write_text(grow)
    subprocess.run([sys.executable, str(script)], env=env, timeout=120, check=True)
    snaps = sorted(tmp_path.glob("*.snap"))
    assert len(snaps) >= 2, snaps
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tracemem" / "compare.py"), str(tmp_path), "--top", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    first = out.split("\n")[1:3]
    assert first[0].lstrip().startswith("+"), out
    assert f'File "{script}", line 5' in first[1], out
