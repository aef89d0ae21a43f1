"""bench/load.py --quick --json as a real process: both scenarios, against the table
server and the floor, give positive throughput and ordered percentiles, and the chart
is a PNG (issue 13, items 5 and 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.drill
@pytest.mark.timeout(150)
def test_load_quick_json(tmp_path: Path) -> None:
    chart = tmp_path / "load.png"
    out = tmp_path / "load.out"
    err = tmp_path / "load.err"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "load.py"), "--quick", "--json", "--chart", str(chart)],
            cwd=ROOT,
            stdout=o,
            stderr=e,
            stdin=subprocess.DEVNULL,
            timeout=140,
            check=False,
        )
    assert proc.returncode == 0, err.read_text(errors="replace")[-4000:]
    report = json.loads(out.read_text())
    for scenario in ("saturation", "human"):
        rows = report[scenario]
        assert rows, f"no {scenario} rows"
        for row in rows:
            for kind in ("project", "floor"):
                p = row[kind]
                assert p["actions_per_s"] > 0, (scenario, kind, p)
                assert p["samples"] > 0, (scenario, kind, p)
                assert p["p99_ms"] >= p["p50_ms"] > 0, (scenario, kind, p)
                assert p["max_ms"] >= p["p99_ms"], (scenario, kind, p)
                assert p["seats_reached"] == row["seats"], (scenario, kind, p)
                assert p["server_cpu_pct"] > 0 and p["pg_cpu_pct"] >= 0, (scenario, kind, p)
            assert row["ratio"]["actions_per_s"] is not None
            assert row["project"]["key_mismatch"] == 0
    assert report["human"][0]["project"]["rss_per_seat_kb"] is not None
    assert report["saturation"][0]["project"]["action_kinds"].get("draw_closed", 0) > 0
    assert "saturation" in report["targets"] and "human" in report["targets"]
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
