"""The database-outage drill's quick mode (issue 17): under ``serve --workers 2`` with
bot tables, its PostgreSQL's disk full (a tmpfs filled to the last byte: writes
refused with SQLSTATE 53100), full again with a WAL switch forced (it PANICs and stays
down until the space is back), killed and kept down, frozen, stalled again and again;
then the server's embedded PostgreSQL's postmaster killed, which serve starts again by
itself.  No seat is charged by the clock inside a fault window, no table stops, every
hand ends or is voided by rule, every transcript verifies and the ledger balances;
while the disk is full /healthz says degraded, the clients are told ``paused``, the
tables back off (no reload storm) and a REST write is never answered 500.  An
operator deposits 1 HT again and again through every fault, each deposit sent with
its Idempotency-Key until answered: the balance moves by exactly the deposits
answered."""

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
        assert p["charges_inside_fault_windows"] == 0, (p["charges_inside"], p["faults"], p.get("bots_left_at"))
        assert p["tables_stopped"] == 0, p["faults"]
        assert p["ledger_ok"] and p["transcripts_verified"] == p["hands"] > 0
        assert all(f["recovered_s"] is not None for f in p["faults"])
        cash = p["cashier"]  # keyed deposits all through the faults: each answered one moved once
        assert cash["deposits_answered"] > 0 and cash["balance_moved"] == cash["deposits_answered"], cash
    disks = [f for part in ("external", "embedded") for f in report[part]["faults"] if f["kind"].startswith("disk")]
    assert len(disks) == 3, report
    for f in disks:
        assert f["problem"] is None, f
        assert f["healthz_samples"] > 0 and f["healthz_ok_while_full"] == 0, f
        assert f["tables_not_told_paused"] == 0 and f["paused_told"] > 0, f
        assert f["reloads_per_table_per_s"] < 1.0, f
        assert all(int(status) in (201, 503) for status in f["rest_writes"]), f
    assert disks[0]["disk_full_errors_logged"] > 0  # the server met SQLSTATE 53100 itself
    assert "started again" in disks[1]["postgres"]  # the PANIC stopped it; back once the space was
    assert "serve started it again" in disks[2]["postgres"]  # the embedded one: serve's supervisor did
    assert len(report["external"]["faults"]) == 5 and len(report["embedded"]["faults"]) == 2
    assert report["ok"] and r.returncode == 0
