"""``rummy-table serve`` as a real process: embedded PostgreSQL created on first run
and reused, the operator token printed once, keys kept, SIGTERM/SIGINT shut down."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest


def start(data_dir: Path) -> tuple[subprocess.Popen[str], str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUMMY_OPERATOR_TOKEN")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.time() + 90
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("server key fingerprint"):
            break
    found = [m.group(0) for x in lines if "serving on" in x and (m := re.search(r"http://\S+", x))]
    if not found:
        proc.kill()
        proc.communicate()
        raise AssertionError("the server did not start:\n" + "".join(lines))
    return proc, found[0], lines


def get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as r:
        data: dict[str, object] = json.loads(r.read())
        return data


def stop(proc: subprocess.Popen[str], sig: int) -> str:
    proc.send_signal(sig)
    proc.wait(timeout=60)
    # Read through the text wrapper: readline() above may hold buffered lines that
    # communicate() would skip.
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    assert proc.returncode == 0, out
    return out


def test_serve_embedded_first_run_and_reuse(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc, url, lines = start(data)
    try:
        assert get(url + "/healthz")["ok"] is True
        key = get(url + "/api/fairness/key")
        fingerprint = next(x.split(": ")[1].strip() for x in lines if x.startswith("server key fingerprint"))
        # one form on every page and by every command: 64 hex digits in groups of four
        assert fingerprint == " ".join(str(key["fingerprint"])[k : k + 4] for k in range(0, 64, 4))
    finally:
        out = stop(proc, signal.SIGTERM)
    text = "".join(lines) + out
    assert "database: embedded" in text and "operator token (shown once" in text and "shutting down" in out
    assert (data / "pgdata" / "PG_VERSION").exists()
    assert not (data / "pgdata" / "postmaster.pid").exists(), "PostgreSQL was stopped on exit"
    assert (data / "signing-ed25519.key").exists() and (data / "seed-aesgcm.key").exists()

    # Second run: the same database and keys, no new operator token.
    proc, url, lines = start(data)
    try:
        assert get(url + "/api/fairness/key")["fingerprint"] == key["fingerprint"]
    finally:
        out = stop(proc, signal.SIGINT)
    assert "operator token" not in "".join(lines) + out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(data_dir: Path, port: int, token: str) -> subprocess.Popen[bytes]:
    """``rummy-table serve`` with its output in a file (a pipe nobody reads would
    block it), returned once it serves."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["RUMMY_OPERATOR_TOKEN"] = token
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / "serve.log"
    start = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
                "--seed-seconds",
                "3",
                "--resume-grace",
                "3",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.time() + 90
    while "serving on" not in log.read_bytes()[start:].decode(errors="replace"):
        assert proc.poll() is None and time.time() < deadline, log.read_text(errors="replace")[-3000:]
        time.sleep(0.05)
    return proc


@pytest.mark.timeout(600)
async def test_sigterm_mid_hand_tells_every_client_and_a_restart_resumes_the_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM in the middle of a hand with 60 clients connected: the server tells them,
    exits 0, records nothing while it goes down; started again on the same data
    directory it resumes the hand, and the bots finish it (issue 7).  How long the exit
    takes is measured by bench/shutdown.py (docs/benchmarks.md), not here."""
    import asyncio

    import aiohttp

    from service.bots import Bot
    from tests.heldbot import no_declares
    from verifier.signing import load_public_key
    from verifier.transcript import verify_transcript

    # Until the SIGTERM the bots discard where they would declare: a declare at a first
    # turn ends the hand before the SIGTERM, and the bots (one hand each) would never
    # come back.  After it they play as ever.
    release = no_declares(monkeypatch)

    token = "op-" + os.urandom(8).hex()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}
    proc = serve(tmp_path / "data", port, token)
    try:
        async with aiohttp.ClientSession() as s:
            async with s.post(url + "/api/tables", json={"seats": 4, "turn_seconds": 20}, headers=auth) as r:
                table = (await r.json())["id"]
            bots = []
            for n in range(2):
                async with s.post(url + "/api/players", json={"name": f"b{n}", "deposit": 10_000}, headers=auth) as r:
                    p = await r.json()
                bots.append(Bot(url, p["token"], table, fast=False, keep_frames=True, max_hands=1, drops=False))
            spectators = []
            for n in range(60):
                async with s.post(url + "/api/players", json={"name": f"w{n}"}, headers=auth) as r:
                    watcher = await r.json()
                ws = await s.ws_connect(url + "/ws", headers={"Authorization": f"Bearer {watcher['token']}"})
                await ws.send_json({"id": "j", "type": "join", "table_id": table})
                spectators.append(ws)
            tasks = [asyncio.create_task(b.run()) for b in bots]

            def updates() -> list[dict[str, object]]:
                return [f for b in bots for f in b.frames if f.get("type") == "update"]

            deadline = time.time() + 120
            while not any(int(f["i"]) >= 5 for f in updates()):  # type: ignore[call-overload]
                assert time.time() < deadline, "no hand got under way"
                await asyncio.sleep(0.05)
            hand_no = updates()[-1]["hand_no"]
            assert not any(b.hands_seen for b in bots), "the hand ended before the SIGTERM"
            for b in bots:  # they thought before each move so that SIGTERM finds the hand under way;
                b.fast = True  # after the restart they finish it without thinking
            release()
            down = time.time()
            proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait, 120)  # only a hang takes this long
            assert proc.returncode == 0
            told = 0
            for ws in spectators:
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data).get("type") == "shutdown":
                        told += 1
                await ws.close()
            assert told == len(spectators), f"{told} of {len(spectators)} clients were told"
            proc = serve(tmp_path / "data", port, token)
            up = time.time()
            await asyncio.wait_for(asyncio.gather(*tasks), 180)
            assert all(b.connections >= 2 for b in bots)  # they came back by themselves
            result = next(r for r in bots[0].hands_seen if r["hand_no"] == hand_no)
            assert not result["void"]
            async with s.get(url + "/api/fairness/key") as r:
                key = load_public_key((await r.json())["public_key_hex"])
            async with s.get(url + str(result["transcript"])) as r:
                t = await r.json()
            for b in bots:  # every head and receipt the bots kept is in the published transcript
                report = verify_transcript(t, key, b.evidence)
                assert report.ok, report.failure
            assert not [rec for rec in t["log"] if down * 1000 <= rec["t"] <= up * 1000], "a record made while down"
            async with s.get(url + "/api/ledger", headers=auth) as r:
                assert (await r.json())["ok"] is True
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def s_post(session: Any, url: str, body: Any, origin: str) -> Any:
    return session.post(url, json=body, headers={"Origin": origin})


@pytest.mark.timeout(600)
async def test_workers_share_the_tables_and_a_dead_worker_is_replaced(tmp_path: Path) -> None:
    """serve --workers 2 (issue 13; one public port, issue 18): bots on the server's
    one port play at tables each worker serves a share of; a worker killed mid-hand is
    started again, its tables move to the other meanwhile, and every hand still
    verifies.  The page's session cookie opens a socket on the one port from the
    page's origin, and from no other."""
    import asyncio

    import aiohttp

    from service.bots import Bot
    from service.rundir import name_for
    from tests.workerserver import worker_server
    from verifier.signing import load_public_key
    from verifier.transcript import verify_transcript

    extra = ("--seed-seconds", "2", "--lease-seconds", "3", "--next-hand-delay", "0.3")
    async with worker_server(tmp_path / "data", extra=extra) as server, aiohttp.ClientSession() as s:
        url = server.url
        auth = {"Authorization": f"Bearer {server.token}"}
        tables = []
        for _ in range(4):
            async with s.post(url + "/api/tables", json={"seats": 4, "turn_seconds": 20}, headers=auth) as r:
                assert r.status == 201, (r.status, await r.text())
                tables.append((await r.json())["id"])
        bots = []
        for t in tables:
            for n in range(2):
                async with s.post(url + "/api/players", json={"name": f"b{n}", "deposit": 10_000}, headers=auth) as r:
                    p = await r.json()
                bots.append(Bot(url, p["token"], t, fast=True, max_hands=6, drops=False))
        tasks = [asyncio.create_task(b.run()) for b in bots]
        # Once every table has played a hand (the next ones under way), kill the
        # first worker: the supervisor starts it again.
        deadline = time.time() + 120
        while not all(b.hands_seen for b in bots):
            assert time.time() < deadline, [len(b.hands_seen) for b in bots]
            await asyncio.sleep(0.05)
        # the workers' sockets, stamps and memory-mapped metrics are in memory, not on the
        # data directory's disk, whose filling must not kill them (service/rundir.py)
        run = Path("/dev/shm") / name_for((tmp_path / "data").resolve())
        assert (run / "metrics").is_dir() and (run / "w1.sock").exists()
        assert not (tmp_path / "data" / "run").exists()
        before = await counted(s, url)
        os.kill(server.worker_pids()[1], signal.SIGKILL)
        done, pending = await asyncio.wait(tasks, timeout=200)
        if pending:
            seen = stuck(bots)
            for task in pending:
                task.cancel()
            raise AssertionError(f"bots still playing after 200 s: {seen}\n{server.text()[-6000:]}")
        for task in done:
            task.result()
        deadline = time.time() + 120
        while server.ready_count(1) < 2:
            assert time.time() < deadline, server.text()[-4000:]
            await asyncio.sleep(0.1)
        assert "worker 1 exited (-9); starting it again" in server.text()
        # what the killed worker had counted is still counted (issue 18: never backwards)
        after = await counted(s, url)
        assert all(after[k] >= before[k] for k in before) and after["rummy_hands_total"] > before["rummy_hands_total"]
        async with s.get(url + "/api/fairness/key") as r:
            key = load_public_key((await r.json())["public_key_hex"])
        seen = {(r["table_id"], r["hand_no"]): r for b in bots for r in b.hands_seen}
        assert len(seen) >= 6 * len(tables)
        for r in seen.values():
            async with s.get(url + r["transcript"]) as resp:
                assert verify_transcript(await resp.json(), key).ok
        async with s.get(url + "/api/ledger", headers=auth) as r:
            assert (await r.json())["ok"] is True
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as page:
            async with s_post(page, url + "/api/session", {"token": bots[0].token}, url) as r:
                assert r.status == 200, await r.text()
            for t in tables:  # whichever worker accepts, and whichever serves the table
                ws = await page.ws_connect(f"{url}/ws?table={t}", headers={"Origin": url}, protocols=("rummy.v2",))
                assert json.loads((await ws.receive()).data)["type"] == "hello"
                await ws.close()
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await page.ws_connect(
                        f"{url}/ws?table={t}",
                        headers={"Origin": f"http://127.0.0.1:{free_port()}"},
                        protocols=("rummy.v2",),
                    )
                assert refused.value.status == 403
    assert "shutting down" in server.text()
    assert not run.exists()  # removed on the way down


def stuck(bots: list[Any]) -> list[dict[str, Any]]:
    """What each bot had seen, for a failure message: which table stopped, where."""
    return [
        {
            "table": b.table_id,
            "seat": b.seat,
            "hands": [h.get("hand_no") for h in b.hands_seen],
            "connections": b.connections,
            "told": dict(b.told),
            "errors": [e.get("error", {}).get("code") for e in b.errors][-5:],
            "server": b.server,
        }
        for b in bots
    ]


async def counted(session: Any, url: str) -> dict[str, float]:
    """The whole server's counters of hands, requests and tables taken."""
    from tests.test_one_port import samples, total

    async with session.get(url + "/metrics") as r:
        scrape = samples(await r.text())
    names = ("rummy_hands_total", "rummy_http_requests_total", "rummy_tables_taken_total")
    return {n: total(scrape, n) for n in names}
