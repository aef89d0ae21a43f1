"""A node id is one live process's (issue 18, item 4).  Two processes that named
themselves the same node fought over every lease (105 'lost the lease' warnings on
each side in 55 s, epochs 5 to 111).  The second is now refused at start, exit 5, one
line; a node that died frees its id at once (PostgreSQL lets a dead connection's
locks go), so a restart is never refused."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.cluster import NodeSettings
from service.db import ServerLocked
from service.errors import EXIT_LOCKED
from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE
from service.startup import start_server
from tests.conftest import OPERATOR, fresh_database
from tests.test_cli_errors import ROOT, clean_env, free_port, one_line, rummy


async def node(dsn: str, data_dir: Path, node_id: str):  # type: ignore[no-untyped-def]
    port = free_port()
    return await start_server(
        host="127.0.0.1",
        port=port,
        data_dir=data_dir,
        database_url=dsn,
        operator_token=OPERATOR,
        node=NodeSettings(node_id=node_id, public_url=f"http://127.0.0.1:{port}", cluster=True),
    )


def copy_keys(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for f in (SIGNING_KEY_FILE, SEED_KEY_FILE):
        shutil.copy2(src / f, dst / f)


async def test_a_second_live_process_with_a_node_id_is_refused(pg_dsn: str, tmp_path: Path) -> None:
    async with fresh_database(pg_dsn, "nid") as dsn:
        first = await node(dsn, tmp_path / "a", "n1")
        try:
            copy_keys(tmp_path / "a", tmp_path / "b")
            with pytest.raises(ServerLocked, match="node id n1 is taken") as refused:
                await node(dsn, tmp_path / "b", "n1")
            assert refused.value.exit_code == EXIT_LOCKED
            other = await node(dsn, tmp_path / "b", "n2")  # another id joins beside it
            await other.stop()
        finally:
            await first.stop()
        again = await node(dsn, tmp_path / "b", "n1")  # stopped, its id is free
        await again.stop()


def serve_node(data_dir: Path, dsn: str, node_id: str, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--workers",
            "1",
            "--node-id",
            node_id,
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            "--database-url",
            dsn,
        ],
        cwd=ROOT,
        env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_serving(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    deadline = time.time() + 120
    lines = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "serving on" in line:
            return
        assert line, "".join(lines)
    raise AssertionError("".join(lines))


async def test_the_command_refuses_a_taken_node_id_in_one_line_and_a_killed_nodes_id_is_free(
    pg_dsn: str, tmp_path: Path
) -> None:
    async with fresh_database(pg_dsn, "nidcli") as dsn:
        first = serve_node(tmp_path / "a", dsn, "n1", free_port())
        try:
            await asyncio.to_thread(wait_serving, first)
            copy_keys(tmp_path / "a", tmp_path / "b")
            args = ["serve", "--workers", "1", "--node-id", "n1", "--port", str(free_port())]
            r = await asyncio.to_thread(
                rummy,
                *args,
                "--data-dir",
                str(tmp_path / "b"),
                "--database-url",
                dsn,
                cwd=ROOT,
                env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR),
            )
            one_line(r, EXIT_LOCKED, "node id n1 is taken", "--node-id")
            # Killed without a word, its id is free again at once: the restart is served.
            os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
            again = serve_node(tmp_path / "b", dsn, "n1", free_port())
            try:
                await asyncio.to_thread(wait_serving, again)
            finally:
                again.send_signal(signal.SIGTERM)
                again.communicate(timeout=60)
            assert again.returncode == 0
        finally:
            if first.poll() is None:
                first.kill()
            first.communicate(timeout=60)
