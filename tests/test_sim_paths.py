"""The fault paths of D33 and D36 added on 2026-12-07 (night), reached by the
simulator under random faults and faults aimed at a hand's first moments and at its
void (tests/sim/dealfaults.py), every invariant checked after every step; how often
each path fires is counted (tests/sim/paths.py) and printed, and a core that breaks
each one is caught by the seeds the suite runs.  bench/sim_paths.py counts over more
seeds."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from service.tablecore import core as core_module
from service.tablecore.commands import Commands
from service.tablecore.core import TableCore
from service.tablecore.phase import HandPhase
from service.tablecore.steps import Steps
from tests.sim.dealfaults import DealFaultWorld
from tests.sim.paths import PATHS, counting
from verifier.record import HandRecorder

SEEDS = (1, 2, 3, 4)
WORLD: dict[str, Any] = {
    "seats": 3,
    "tables": 6,
    "duration": 240_000,
    "fault_rate": 4.0,
    "store_fault_rate": 20.0,
    "stall_rate": 2.0,
    "clock_rate": 0.5,
}


def world(seed: int) -> DealFaultWorld:
    return DealFaultWorld(seed, **WORLD)


def test_every_new_fault_path_is_reached_under_faults_and_keeps_every_invariant() -> None:
    total: Counter[str] = Counter()
    for seed in SEEDS:
        with counting() as seen:
            w = world(seed).run()
        print(
            f"seed {seed}: {w.hands_ended} hands, {w.pretold_voids} voided for a leave nobody was told of; "
            f"paths {dict(sorted(seen.items()))}; aimed {dict(sorted(w.aimed.items()))}"
        )
        assert w.hands_ended > 50 and w.verified > 10, (seed, w.hands_ended, w.verified)
        total.update(seen)
    print("paths over seeds", SEEDS, {k: total[k] for k in PATHS})
    for path in PATHS:
        assert total[path] >= 5, f"the simulator reached {path} {total[path]} times: {dict(total)}"


def caught(match: str, error: type[BaseException] = AssertionError) -> int:
    """The first seed of the suite's whose world fails with ``match``."""
    for seed in SEEDS:
        try:
            world(seed).run()
        except error as e:
            assert match in str(e), e
            return seed
    raise AssertionError(f"no seed of {SEEDS} caught it")


def test_a_core_that_refuses_a_leave_while_it_reloads_after_the_deal_failed_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Path 1 broken (``_failed_deal_no`` finds nothing): the leave is refused
    ``unavailable``, sent again after the reload, and judged a leave in the seed phases."""
    monkeypatch.setattr(TableCore, "_failed_deal_no", lambda self: None)
    assert caught("whose leave came before anyone was told the hand") == 1


def test_a_core_that_stores_a_void_for_a_leave_without_its_stand_up_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Path 2 broken: the void written alone (the stand-up from memory only)."""
    keep = Steps.void

    def void(
        self: Steps,
        hand: Any,
        reason: str,
        now: int,
        cmd: Any = None,
        answer: Any = None,
        unseat: Any = None,
        **kw: Any,
    ) -> Any:
        return keep(self, hand, reason, now, cmd, answer, None, **kw)

    monkeypatch.setattr(Steps, "void", void)
    assert caught("without the seat's stand-up (D36: one write)") == 1


def test_a_new_owner_that_takes_a_leave_behind_an_untold_deal_as_one_in_the_seed_phases_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Path 3 broken: only a leave that waited behind this core's own deal write voids
    the hand (``untold_deal`` ignored)."""

    def left_before(self: Commands, cmd: Any, hand: Any) -> bool:
        return hand.phase is HandPhase.COMMIT and self.behind_deal.get(cmd.cmd_id) == hand.hand_no

    monkeypatch.setattr(Commands, "_left_before", left_before)
    assert caught("whose leave came before anyone was told the hand") == 1


def test_a_reload_that_ignores_the_void_reason_on_the_hands_row_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Path 4 broken: the reload between the records set aside and the void resumes the
    hand from its cut log."""
    keep = core_module.restore
    monkeypatch.setattr(
        core_module, "restore", lambda stored, *a, **kw: keep(dataclasses.replace(stored, void_reason=None), *a, **kw)
    )
    assert caught("after its unreplayable records were set aside (D33: it is voided)") == 1


def test_a_snapshot_of_a_hand_voided_in_its_commit_window_that_raises_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Path 5 broken (``commit_of`` as before): a join or a ``resumed`` of a hand whose
    records are [header, void] raises, which stopped the table's task."""

    def commit_of(self: HandRecorder, seat: int) -> bytes | None:
        if len(self.records) < 2:
            return None
        for c in self.records[1]["commitments"]["commits"]:
            if c["seat"] == seat and c["commit"] is not None:
                return bytes.fromhex(c["commit"])
        return None

    monkeypatch.setattr(HandRecorder, "commit_of", commit_of)
    assert caught("commitments", KeyError) == 1


def test_a_hand_to_void_is_voided_before_the_moves_queued_behind_its_quarantine() -> None:
    """Found by this world (seed 16, table 1): a stored record stopped replaying, the
    reload set it aside (io.QuarantineOp) with a seat's move queued meanwhile; the move
    was judged first, on the log cut short, the hand went on from there and, ended by
    the moves after it, could no longer be voided (RuleError: the table's task died).
    D33: the hand is voided before any command is judged (TableCore._pump)."""
    w = DealFaultWorld(16, **WORLD, only={1}).run()
    assert w.aimed["corrupt_then_crash"] >= 1 and w.quarantined
