"""How often the simulator reaches the fault paths of D33 and D36 added on
2026-12-07 (night): each counted where the core takes it, by wrapping the core's own
functions for the length of a run (:func:`counting`).  The test and the bench print
the counts (tests/test_sim_paths.py, bench/sim_paths.py).

- ``leave_while_reloading``: a leave that came while the table waits to reload, or
  reloads, after the deal's write failed, kept for the reload
  (``TableCore._failed_deal_no``); ``..._void`` / ``..._plain``: judged after the
  reload as a void (the deal was stored) or a plain leave (it was not);
- ``void_with_unseat``: the void for a leave behind the deal written with the seat's
  stand-up (``Steps.void(unseat=...)``, io.UnseatOp), and ``void_with_unseat_stored``:
  such a write stored;
- ``untold_deal_leave``: a leave judged behind the deal by a core whose first load
  found the hand in its commit window with no commitment (``TableCore.untold_deal``);
- ``quarantine`` / ``quarantine_stored``: the write that sets a hand's unreplayable
  records aside with the void's reason (io.QuarantineOp), and ``reload_voids_by_row``:
  a load that found the reason on the hand's row (``handrun.restore``);
- ``snapshot_of_void_in_commit_window``: a snapshot (a join, a ``resumed``) of a hand
  whose records are [header, void] (``HandRecorder.commit_of``)."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

from service import handrun
from service.tablecore import commands as commands_module
from service.tablecore import core as core_module
from service.tablecore import io
from service.tablecore import steps as steps_module

PATHS = (
    "leave_while_reloading",
    "leave_while_reloading_void",
    "leave_while_reloading_plain",
    "void_with_unseat",
    "void_with_unseat_stored",
    "untold_deal_leave",
    "quarantine",
    "quarantine_stored",
    "reload_voids_by_row",
    "snapshot_of_void_in_commit_window",
)


@contextlib.contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count the paths while the block runs (in this process)."""
    seen: Counter[str] = Counter()
    kept: dict[int, int] = {}  # id of a leave kept while reloading -> its deal's hand_no
    TableCore, Commands = core_module.TableCore, commands_module.Commands
    keep = {
        "failed": TableCore._failed_deal_no,
        "left_before": Commands._left_before,
        "void": steps_module.Steps.void,
        "write": TableCore.write,
        "outcome": TableCore._outcome,
        "restore": core_module.restore,
        "snapshot_for": Commands.snapshot_for,
        "handle": Commands.handle,
    }

    def failed(self: Any) -> int | None:
        got = keep["failed"](self)
        if got is not None:
            seen["leave_while_reloading"] += 1
        return got

    def left_before(self: Any, cmd: io.Command, hand: Any) -> bool:
        untold = self.behind_deal.get(cmd.cmd_id) != hand.hand_no
        got = keep["left_before"](self, cmd, hand)
        if got and untold:
            seen["untold_deal_leave"] += 1
        return got

    def handle(self: Any, cmd: io.Command, now: int) -> Any:
        # a kept leave (one that came while the table reloaded after the deal failed)
        # judged now: a void if its deal was stored, a plain leave if not
        deal_no = kept.pop(id(cmd), None) if cmd.kind == "leave" else None
        if deal_no is not None:
            hand = self.hand
            stored = hand is not None and hand.hand_no == deal_no
            seen["leave_while_reloading_void" if stored else "leave_while_reloading_plain"] += 1
        return keep["handle"](self, cmd, now)

    def command(self: Any, cmd: io.Command, now: int) -> None:
        before = self.behind_deal.get(cmd.cmd_id)
        keep_command(self, cmd, now)
        if cmd.kind == "leave" and before is None and cmd.cmd_id in self.behind_deal and self.unsettled is not None:
            kept[id(cmd)] = self.behind_deal[cmd.cmd_id]

    def void(self: Any, hand: Any, reason: str, now: int, *a: Any, unseat: str | None = None, **kw: Any) -> Any:
        if unseat is not None:
            seen["void_with_unseat"] += 1
        return keep["void"](self, hand, reason, now, *a, unseat=unseat, **kw)

    def write(self: Any, op: io.Op, now: int, **kw: Any) -> io.Pending:
        if isinstance(op, io.QuarantineOp):
            seen["quarantine"] += 1
        return keep["write"](self, op, now, **kw)  # type: ignore[no-any-return]

    def outcome(self: Any, out: io.Outcome, now: int) -> None:
        p = self.pending
        if p is not None and out.op_id == p.op_id and out.result is io.Result.COMMITTED:
            if isinstance(p.op, io.QuarantineOp):
                seen["quarantine_stored"] += 1
            elif isinstance(p.op, io.UnseatOp) and any(r.get("type") == "void" for r in p.op.records):
                seen["void_with_unseat_stored"] += 1
        keep["outcome"](self, out, now)

    def restore(stored: Any, *a: Any, **kw: Any) -> handrun.Restored:
        if stored.void_reason is not None:
            seen["reload_voids_by_row"] += 1
        return keep["restore"](stored, *a, **kw)  # type: ignore[no-any-return]

    def snapshot_for(self: Any, player_id: str, *a: Any, **kw: Any) -> dict[str, Any]:
        hand = self.hand
        records = None if hand is None else hand.recorder.records
        if records is not None and len(records) == 2 and records[1].get("type") == "void":
            seen["snapshot_of_void_in_commit_window"] += 1
        return keep["snapshot_for"](self, player_id, *a, **kw)  # type: ignore[no-any-return]

    keep_command = TableCore._command
    patches: list[tuple[Any, str, Any]] = [
        (TableCore, "_failed_deal_no", failed),
        (Commands, "_left_before", left_before),
        (steps_module.Steps, "void", void),
        (TableCore, "write", write),
        (TableCore, "_outcome", outcome),
        (core_module, "restore", restore),
        (Commands, "snapshot_for", snapshot_for),
        (TableCore, "_command", command),
        (Commands, "handle", handle),
    ]
    saved = [(obj, name, obj.__dict__[name]) for obj, name, _ in patches]
    try:
        for obj, name, fn in patches:
            setattr(obj, name, fn)
        yield seen
    finally:
        for obj, name, fn in saved:
            setattr(obj, name, fn)
