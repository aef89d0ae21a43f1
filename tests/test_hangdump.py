"""tests/hangdump.py: a test that hangs on the event loop has its tasks' await chains
written out before pytest-timeout stops it, and a test that ends in time has nothing
written.  Run as a pytest of its own on a two-test file, without the project's
conftest (its PostgreSQL is not needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CASES = """
import asyncio

import pytest


async def deepest() -> None:
    await asyncio.Event().wait()


async def middle() -> None:
    await deepest()


@pytest.mark.timeout(2)
async def test_hangs() -> None:
    await asyncio.create_task(middle(), name="the-waiter")


@pytest.mark.timeout(2)
async def test_ends() -> None:
    await asyncio.sleep(0)
"""


def test_a_hung_test_has_its_tasks_await_chains_written_and_one_in_time_nothing(tmp_path: Path) -> None:
    (tmp_path / "test_cases.py").write_text(CASES, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n", encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.hangdump", "-p", "no:cacheprovider", "-p", "no:randomly"]
        + ["-p", "no:xdist", "-rA", "test_cases.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    hung, _, ended = out.partition("test_ends")
    assert "Timeout (>2.0s)" in hung, out
    # the waiting task's chain, outermost first, down to the event it waits for
    assert "the test's task the-waiter" in hung, out
    chain = hung[hung.index("the test's task the-waiter") :]
    assert chain.index("in middle") < chain.index("in deepest") < chain.index("locks.py"), out
    assert "hangdump" not in ended, out
