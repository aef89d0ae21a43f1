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
        if line.startswith("fairness key fingerprint"):
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


@pytest.mark.timeout(240)
def test_serve_embedded_first_run_and_reuse(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc, url, lines = start(data)
    try:
        assert get(url + "/healthz")["ok"] is True
        key = get(url + "/api/fairness/key")
        fingerprint = next(x.split(": ")[1].strip() for x in lines if x.startswith("fairness key fingerprint"))
        assert key["fingerprint"] == fingerprint
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
