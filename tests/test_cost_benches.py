"""bench/core_step.py and bench/pool_cost.py print figures (issue 20 item 2); here
only that they run and print what they say, and that the core's world is the same
world each time (the step count a comparison between trees relies on)."""

from __future__ import annotations

import sys

import pytest

from bench import core_step, pool_cost


def test_the_core_step_bench_runs_the_same_world_each_time_and_prints_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = core_step.timed_world(1, 2, 30)
    assert first[0] > 100 and first[1] > 0
    assert core_step.timed_world(1, 2, 30)[0] == first[0]
    monkeypatch.setattr(sys, "argv", ["core_step.py", "--seeds", "1", "--tables", "2", "--seconds", "30"])
    assert core_step.main() == 0
    out = capsys.readouterr().out
    assert f"seed 1: {first[0]} steps" in out and "µs a step: median" in out


def test_the_pool_cost_bench_prints_each_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pg_dsn: str
) -> None:
    argv = ["pool_cost.py", "--statements", "20", "--rounds", "1", "--database-url", pg_dsn]
    monkeypatch.setattr(sys, "argv", argv)
    assert pool_cost.main() == 0
    out = capsys.readouterr().out
    assert all(f"| {w} |" in out for w in ("held", "pooled", "kept")), out
