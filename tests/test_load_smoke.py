"""bench/load.py as a real process, and the like-for-like floor it measures against.

* ``--quick --json``: both scenarios, against the table server and both floors, give
  positive throughput, ordered percentiles, CPU per action, ratios to each floor, and
  the chart is a PNG (issues 13 and 20);
* ``--quick --scenarios rss,starved``: the memory scenario samples the server's RSS and
  reports its slope; the starved one runs the server pinned to one core beside a CPU
  hog and counts lost leases, reloads and failed handshakes (issue 20, items 1 and 5);
* ``bench/floor.py --like`` does the protocol's work: it refuses a bad signature and a
  stale head, signs the head it chains, stores the record, and pushes a slim frame to
  the table's other sockets only.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from bench.common import free_port
from tests.conftest import fresh_database
from verifier.chain import head_body, move_body
from verifier.record import PROTOCOL
from verifier.signing import Signer

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("project", "floor", "floor_like")


def run_load(tmp_path: Path, *args: str, timeout: float) -> dict[str, Any]:
    out = tmp_path / "load.out"
    err = tmp_path / "load.err"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "load.py"), "--quick", "--json", *args],
            cwd=ROOT,
            stdout=o,
            stderr=e,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    assert proc.returncode == 0, err.read_text(errors="replace")[-4000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


@pytest.mark.drill
@pytest.mark.timeout(210)
def test_load_quick_json(tmp_path: Path) -> None:
    chart = tmp_path / "load.png"
    report = run_load(tmp_path, "--chart", str(chart), timeout=200)
    for scenario in ("saturation", "human"):
        rows = report[scenario]
        assert rows, f"no {scenario} rows"
        for row in rows:
            for kind in KINDS:
                p = row[kind]
                assert p["actions_per_s"] > 0, (scenario, kind, p)
                assert p["samples"] > 0, (scenario, kind, p)
                assert p["p99_ms"] >= p["p50_ms"] > 0, (scenario, kind, p)
                assert p["max_ms"] >= p["p99_ms"], (scenario, kind, p)
                assert p["seats_reached"] == row["seats"], (scenario, kind, p)
                assert p["server_cpu_pct"] >= 0 and p["pg_cpu_pct"] >= 0, (scenario, kind, p)
                assert p["handshakes"] >= row["seats"], (scenario, kind, p)
            assert row["ratio"]["actions_per_s"] is not None
            assert set(row["ratios"]) == {"floor", "floor_like"}
            assert row["project"]["key_mismatch"] == 0
            # the bare floor answers once; the like-for-like one also pushes to the 5 other seats
            assert row["floor"]["frames_in_per_action"] == 1.0
            like = row["floor_like"]
            assert like["frames_in_per_action"] > 1.0, like
            assert 150 <= like["bytes_in_per_action"] / like["frames_in_per_action"] <= 1000, like
            assert like["errors"] == {}, like["errors"]
            for kind in KINDS:  # the text by kind adds up; the wire adds a header to each frame
                p = row[kind]
                assert abs(sum(p["bytes_in_per_action_by_kind"].values()) - p["bytes_in_per_action"]) <= 10, p
                assert p["wire_bytes_in_per_action"] >= 0.95 * p["bytes_in_per_action"] > 0, p
                assert p["sockets_deflated"] == 0, p
    sat = report["saturation"][0]
    for kind in KINDS:
        p = sat[kind]
        assert p["server_cpu_pct"] > 0 and p["server_cpu_ms_per_action"] > 0, (kind, p)
    # hundreds of actions in the window: a reply and five pushes each, give or take the edges
    assert 5.8 <= sat["floor_like"]["frames_in_per_action"] <= 6.2, sat["floor_like"]
    assert sat["ratios"]["floor_like"]["server_cpu_ms_per_action"] is not None
    assert report["human"][0]["project"]["rss_per_seat_kb"] is not None
    assert report["saturation"][0]["project"]["action_kinds"].get("draw_closed", 0) > 0
    assert "saturation" in report["targets"] and "human" in report["targets"]
    assert report["summary"]["saturation"][0]["project.actions_per_s"] is not None
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.drill
@pytest.mark.timeout(210)
def test_load_quick_rss_and_starved(tmp_path: Path) -> None:
    # the clients offer permessage-deflate, as browsers do: no server takes it up
    report = run_load(tmp_path, "--scenarios", "rss,starved", "--chart", "", "--compress", timeout=200)
    assert not report["saturation"] and not report["human"]
    (p,) = report["rss"]
    trend = p["rss"]
    assert len(trend["samples"]) >= 3
    assert trend["start_kb"] > 0 and trend["end_kb"] > 0 and trend["acks"] > 0
    assert trend["slope_kb_per_min"] is not None and trend["slope_kb_per_action"] is not None
    assert [s[0] for s in trend["samples"]] == sorted(s[0] for s in trend["samples"])
    (row,) = report["starved"]
    core = report["settings"]["starved"]["core"]
    for kind in KINDS:
        q = row[kind]
        assert q["starved"]["server_cpus"] == str(core), q["starved"]  # taskset held the server to the core
        assert q["starved"]["hog_cpu_pct"] > 0, q["starved"]  # and the hog ran beside it
        assert q["handshakes"] >= row["seats"] and q["handshakes_failed"] >= 0
        assert q["samples"] > 0
        assert q["sockets_deflated"] == 0 and q["wire_bytes_in_per_action"] > 0, q
        assert {"lost_leases", "reloads", "reload_timeouts", "load_retries", "tracebacks"} <= set(q["server_log"])
        if kind != "project":
            assert q["server_log"]["lost_leases"] == q["server_log"]["reloads"] == 0, q["server_log"]


def test_log_marks_are_the_servers_words(tmp_path: Path) -> None:
    """What the bench counts in a server's log is what the server writes: each mark
    is in service/'s source, and a reload after a timeout counts as one."""
    from bench.load import LOG_MARKS, count_log

    source = "\n".join(f.read_text() for f in sorted((ROOT / "service").rglob("*.py")))
    for name, mark in LOG_MARKS.items():
        if name != "tracebacks":
            assert mark in source, f"{name}: {mark!r} is not in service/"
    log = tmp_path / "server.log"
    log.write_text(
        "W rummy.cluster: node n1: lost the lease of table t1; letting it go\n"
        "W rummy.table: table t1: RecordsOp failed: TimeoutError: \n"
        "W rummy.table: table t1: a write came back failed; reloading\n"
        "W rummy.table: table t2: a write came back conflict; reloading\n"
        "W rummy.cluster: node n1: lost the lease of table t3; letting it go\n"
        "W rummy.cluster: node n1/w2: the heartbeat ran 3.2 s late (the lease is 5.0 s): this process is starved\n"
        "W rummy.cluster: node n1/w1: the heartbeat ran 12.5 s late (the lease is 5.0 s): this process is starved\n"
    )
    counts = count_log(log, log.stat().st_size)
    assert counts["lost_leases"] == 2 and counts["reloads"] == 2 and counts["reload_timeouts"] == 1, counts
    assert counts["late_heartbeats"] == 2 and counts["late_heartbeat_max_ms"] == 12_500, counts
    through_the_reloads = len("".join(log.read_text().splitlines(keepends=True)[:3]))
    assert count_log(log, through_the_reloads)["lost_leases"] == 1


async def test_like_floor_verifies_signs_stores_and_pushes(pg_dsn: str, tmp_path: Path) -> None:
    async with fresh_database(pg_dsn, "floor") as dsn:
        port = free_port()
        log = open(tmp_path / "floor.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "floor.py"), "--port", str(port), "--database-url", dsn, "--like"],
            cwd=ROOT,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        try:
            await like_floor_session(f"http://127.0.0.1:{port}", dsn, proc)
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()


async def like_floor_session(url: str, dsn: str, proc: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession() as session:
        end = time.monotonic() + 60
        while True:  # until the floor listens
            assert proc.poll() is None, "the floor exited"
            try:
                async with session.get(url + "/healthz") as r:
                    if r.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            assert time.monotonic() < end, "the floor did not start"
            await asyncio.sleep(0.1)
        keys = [Signer.generate() for _ in range(3)]

        async def connect(table: str, seat: int, key: Signer) -> aiohttp.ClientWebSocketResponse:
            return await session.ws_connect(f"{url}/ws?table={table}&seat={seat}&key={key.public_bytes.hex()}")

        a = [await connect("A", s, keys[s]) for s in range(3)]
        b = await connect("B", 0, keys[0])

        async def act(
            ws: aiohttp.ClientWebSocketResponse,
            table: str,
            seat: int,
            key: Signer,
            prev: str,
            action: dict[str, Any],
            msg_id: str,
            sign_as: Signer | None = None,
        ) -> dict[str, Any]:
            sig = (sign_as or key).sign("move", move_body(table, 1, prev, {**action, "seat": seat}), PROTOCOL)
            await ws.send_json(
                {
                    "id": msg_id,
                    "type": "action",
                    "table_id": table,
                    "hand_no": 1,
                    "action": action,
                    "prev": prev,
                    "sig": sig,
                }
            )
            return json.loads(await asyncio.wait_for(ws.receive_str(), 30))

        genesis = "0" * 64
        draw = {"kind": "draw_closed"}
        # a move signed by another key: refused, nothing stored, nothing pushed
        bad = await act(a[0], "A", 0, keys[0], genesis, draw, "m1", sign_as=keys[1])
        assert bad["type"] == "error" and bad["error"]["code"] == "bad_signature", bad
        ok = await act(a[0], "A", 0, keys[0], genesis, draw, "m2")
        assert ok["type"] == "reply" and ok["id"] == "m2", ok
        h1 = ok["result"]["h"]
        head = ok["result"]["head"]
        assert head["body"] == head_body("A", 1, 1, h1) and len(head["sig"]) == 128
        for ws in a[1:]:  # the other seats of table A get one slim push
            push = json.loads(await asyncio.wait_for(ws.receive_str(), 30))
            assert push["type"] == "update" and push["i"] == 1 and push["h"] == h1, push
            assert push["events"] == [{"kind": "draw_closed", "seat": 0}]
            assert 150 <= len(json.dumps(push, separators=(",", ":"))) <= 1000
        # signed over an old head: refused with the head to sign over
        stale = await act(a[0], "A", 0, keys[0], genesis, {"kind": "discard", "card": 7}, "m3")
        assert stale["type"] == "error" and stale["error"] == {"code": "stale_head", "h": h1}, stale
        ok2 = await act(a[1], "A", 1, keys[1], h1, draw, "m4")
        assert ok2["type"] == "reply" and ok2["result"]["i"] == 2
        # the actor got no push of its own move: its next frame is the push of seat 1's
        nxt = json.loads(await asyncio.wait_for(a[0].receive_str(), 30))
        assert nxt["type"] == "update" and nxt["i"] == 2, nxt
        # table B heard nothing of table A: its first frame is the reply to its own move
        own = await act(b, "B", 0, keys[0], genesis, draw, "m5")
        assert own["type"] == "reply" and own["result"]["i"] == 1, own
        for ws in [*a, b]:
            await ws.close()
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT n, body::text AS body FROM floor_records ORDER BY id")
    finally:
        await conn.close()
    assert [r["n"] for r in rows] == [1, 2, 1]  # the three accepted moves, each committed
    assert json.loads(rows[0]["body"])["h"] == h1
