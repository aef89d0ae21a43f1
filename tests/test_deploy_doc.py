"""docs/deploy.md's cluster commands, run as written against the test PostgreSQL: the
three nodes start (on a host of any number of cores: a node is one worker), share the
card room's keys, and serve; what the doc says a node refuses, it refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from service.cli import EXIT_OK, EXIT_USAGE
from tests.deploydoc import DEPLOY_MD, Site, blocks, free_port, libpq_env, tool_path

DOC_URL = "postgresql://rummy@db.example:5432/rummy"


def get(url: str, token: str | None = None) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        data: dict[str, object] = json.loads(r.read())
        return data


async def drop_rummy(pg_dsn: str) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute("DROP DATABASE IF EXISTS rummy WITH (FORCE)")
    finally:
        await conn.close()


async def test_the_cluster_commands_run_as_written(pg_dsn: str, tmp_path: Path) -> None:
    ports = [free_port("0.0.0.0") for _ in range(3)]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUMMY_OPERATOR_TOKEN")}
    env |= libpq_env(pg_dsn) | {"PATH": tool_path()}
    replace = {DOC_URL: urlunsplit(urlsplit(pg_dsn)._replace(path="/rummy"))}
    for n, port in enumerate(ports, start=1):
        replace[f"http://10.0.0.{n}:808{n}"] = f"http://127.0.0.1:{port}"
        replace[f"--port 808{n}"] = f"--port {port}"
    site = Site(tmp_path / "site", replace, env)
    await drop_rummy(pg_dsn)  # `createdb rummy` as written: no database of that name yet
    try:
        site.run(blocks("cluster"))
        token = site.env["RUMMY_OPERATOR_TOKEN"]
        for port in ports:
            assert get(f"http://127.0.0.1:{port}/healthz")["ok"] is True
        conn = await asyncpg.connect(site.env["DATABASE_URL"])
        try:
            live = await conn.fetch(
                "SELECT node_id, public_url FROM nodes WHERE seen_at > now() - interval '1 minute' ORDER BY node_id"
            )
        finally:
            await conn.close()
        assert [(r["node_id"], r["public_url"]) for r in live] == [
            (f"n{n}", f"http://127.0.0.1:{port}") for n, port in enumerate(ports, start=1)
        ]
        # one card room: the same key on every node, and the operator token the doc exported
        keys = {get(f"http://127.0.0.1:{port}/api/fairness/key")["fingerprint"] for port in ports}
        assert len(keys) == 1
        assert get(f"http://127.0.0.1:{ports[2]}/api/ledger", token)["ok"] is True
    finally:
        codes = site.stop()
        await drop_rummy(pg_dsn)
    assert codes == [EXIT_OK] * 3, [log.read_text()[-2000:] for _, log in site.servers]


def serve(*flags: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUMMY_OPERATOR_TOKEN")}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--data-dir", str(tmp_path / "d"), "--port", "0", *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_what_the_doc_says_a_node_refuses(tmp_path: Path) -> None:
    doc = " ".join(DEPLOY_MD.read_text(encoding="utf-8").split())
    embedded = serve("--node-id", "n9", "--public-url", "http://127.0.0.1:1", tmp_path=tmp_path)
    assert embedded.returncode == EXIT_USAGE
    line = embedded.stderr.strip().removeprefix("rummy-table: ")
    assert line in doc, line
    assert "`--node-id` refuses the embedded PostgreSQL" in doc
    many = serve(
        "--node-id", "n9", "--workers", "2", "--database-url", "postgresql://x@127.0.0.1:1/x", tmp_path=tmp_path
    )
    assert many.returncode == EXIT_USAGE and "give --node-id without --workers" in many.stderr
    assert "`--node-id` with `--workers 2` or more is refused" in doc
