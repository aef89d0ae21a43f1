"""The database-outage drill's quick mode (issue 17): under ``serve --workers 2`` with
bot tables, its PostgreSQL killed and kept down, frozen, stalled again and again; then
the server's embedded PostgreSQL's postmaster killed, which serve starts again by
itself.  No seat is charged by the clock inside a fault window, no table stops, every
hand ends or is voided by rule, every transcript verifies and the ledger balances."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.drill
@pytest.mark.timeout(1200)
def test_the_quick_outage_drill() -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "outage_drill.py"), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=1150,
        check=False,
    )
    assert r.stdout.strip(), r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    for part in ("external", "embedded"):
        p = report[part]
        assert p["problems"] == [], p["problems"]
        assert p["charges_inside_fault_windows"] == 0, p["charges_inside"]
        assert p["tables_stopped"] == 0, p["faults"]
        assert p["ledger_ok"] and p["transcripts_verified"] == p["hands"] > 0
        assert all(f["recovered_s"] is not None for f in p["faults"])
    assert len(report["external"]["faults"]) == 3 and len(report["embedded"]["faults"]) == 1
    assert report["ok"] and r.returncode == 0
