"""Past one machine (issue 12): three real nodes on one PostgreSQL with bot tables.
One is killed mid-hand (SIGKILL) and its table moves to another node; one is frozen
(SIGSTOP) past its lease and thawed: its writes are refused and it lets go; one is
given SIGTERM and hands over at once (it releases its leases), without a missed turn.
Afterwards every hand ended or was voided by rule, every transcript and every bot's
evidence verifies, each table's chain has no gap and no fork, and the ledger balances.
The takeover times are figures (bench/cluster.py, docs/benchmarks.md), not asserted."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from bench.cluster import Harness, prove


@pytest.mark.drill
@pytest.mark.timeout(300)
async def test_three_nodes_lose_nothing_when_one_dies_freezes_or_leaves() -> None:
    h = Harness(Path(tempfile.mkdtemp(prefix="rummy-cluster-test-")), lease_seconds=3.0)
    try:
        report = await prove(h)
    finally:
        h.close()
    try:
        assert report["problems"] == [], report
        assert report["hands"] >= 3, report  # a hand at least on each table
        # After each takeover the bots followed their table to its new node and played
        # on (their own moves, not the clock's).  How many hands a run plays is no
        # measure: two bots at a four-seat table play one hand for the whole drill
        # or drop a dozen, by the cards.
        assert report["moves_after"]["kill"], report
        for fault, tables in report["moves_after"].items():
            assert all(n > 0 for n in tables.values()), (fault, report)
        # A killed and a frozen node's tables were taken over (prove waits for that, up to
        # four lease times: only a takeover that never comes fails there).  How long
        # they took is a figure for docs/benchmarks.md, not a test: it moves with the load.
        assert report["kill_takeover_s"] >= 0 and report["freeze_takeover_s"] >= 0, report
        # The thawed node noticed its lease was gone and let its table go.
        assert report["frozen_node_let_go"], report
        # SIGTERM hands over by releasing its leases (not by letting them run out), and
        # nobody missed a turn for it.
        assert report["sigterm_released"], report
        assert report["sigterm_missed_turns"] == 0, report
    finally:
        shutil.rmtree(h.workdir, ignore_errors=True)
