"""Verifying a hand's transcript (docs/fairness.md §14): :func:`verify_transcript`.

It dispatches on the transcript's ``protocol`` (rummy-pf/v2, or v1 under the rules of
Appendix C), then runs the checks of :mod:`verifier.checks` in the order of their
table — ``format`` first, which types every field before anything else reads it —
and stops at the first discrepancy, naming the check, the log record, the expected
and the found value.  It never raises on any value it is given: whatever is not a
transcript fails ``format``.

Transcripts are written by :class:`verifier.record.HandRecorder`; the chain helpers
both sides use are in :mod:`verifier.chain`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from verifier.chain import GENESIS as GENESIS
from verifier.chain import chain_link as chain_link
from verifier.chain import start_hand as start_hand
from verifier.checks import CHECK_NAMES, CHECKS_V1, CHECKS_V2, Ctx, Fail, Skip, table_for, warnings_of
from verifier.evidence import unapplied_counts
from verifier.fairness import PROTOCOL_V1
from verifier.hand import HandState
from verifier.schema import describe
from verifier.strictjson import json_data_problem

#: Every check name, in order (rummy-pf/v2, §14).  v1 runs the same minus
#: player_signatures and time (Appendix C).
CHECKS: Final = CHECK_NAMES
CHECKS_FOR: Final = {"rummy-pf/v2": tuple(n for n, _ in CHECKS_V2), PROTOCOL_V1: tuple(n for n, _ in CHECKS_V1)}
INTERNAL: Final = "internal"
MAX_SHOWN: Final = 2000  # characters of an expected or found value kept in a report


def _shown(value: Any) -> Any:
    """An expected or found value as a report can hold it: JSON data, kept short."""
    if value is None:
        return None
    if json_data_problem(value) is not None:
        return f"<{describe(value)}>"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if len(text) > MAX_SHOWN:
        return text[: MAX_SHOWN - 1] + "…"
    return value


@dataclass
class Failure:
    check: str
    message: str
    record: int | None = None
    expected: Any = None
    found: Any = None

    def __post_init__(self) -> None:
        self.expected = _shown(self.expected)
        self.found = _shown(self.found)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "message": self.message,
            "record": self.record,
            "expected": self.expected,
            "found": self.found,
        }


@dataclass
class Report:
    ok: bool
    failure: Failure | None
    summary: dict[str, Any]
    checks_passed: list[str]
    checks_skipped: list[str] = field(default_factory=list)
    skip_reasons: dict[str, str] = field(default_factory=dict)
    warnings: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failure": None if self.failure is None else self.failure.to_json(),
            "checks_passed": self.checks_passed,
            "checks_skipped": self.checks_skipped,
            "skip_reasons": self.skip_reasons,
            "warnings": self.warnings,
            "summary": self.summary,
        }


def verify_transcript(
    t: Any,
    pinned_key: bytes | None = None,
    evidence: Any = None,
    *,
    allow_v1: bool = False,
    in_folder: bool = False,
    parsed: bool = False,
    debug: bool = False,
) -> Report:
    """Run every check of §14 in order; stop at the first discrepancy.

    ``pinned_key`` is the server's raw 32-byte public key, if the caller pins one;
    ``evidence`` the items of an evidence file (§15), if the player gives one;
    ``allow_v1`` accepts a rummy-pf/v1 transcript (with the warning
    ``v1_server_only``), which ``format`` refuses otherwise; ``in_folder``: this is one
    transcript of a directory, whose evidence need not hold an item for it;
    ``parsed``: ``t`` is what :func:`verifier.strictjson.parse` returned, unchanged, so
    it is JSON data (§2) by construction and ``format`` does not walk it again.  An
    unexpected exception inside a check (a bug of the verifier) is reported as a
    failure of that check marked ``internal``, or raised when ``debug``."""
    ctx = Ctx(t=t, pinned=pinned_key, evidence=evidence, allow_v1=allow_v1, in_folder=in_folder, parsed=parsed)
    return _run(ctx, t, debug)


def replayed(t: Any, pinned_key: bytes | None = None, evidence: Any = None) -> tuple[Report, dict[int, HandState]]:
    """:func:`verify_transcript`, and the state after each replayed record (the deal,
    record 3, and every action after it) when every check passed, else none: what a
    player's client compares with what it was shown (``seat_view`` of each state,
    ``rummy-table bots --verify``)."""
    ctx = Ctx(t=t, pinned=pinned_key, evidence=evidence)
    report = _run(ctx, t, False)
    return report, (dict(ctx.after) if report.ok else {})


def _run(ctx: Ctx, t: Any, debug: bool) -> Report:
    evidence = ctx.evidence
    passed: list[str] = []
    skipped: list[str] = []
    reasons: dict[str, str] = {}
    failure: Failure | None = None
    for name, check in table_for(t):
        try:
            outcome = check(ctx)
        except Fail as f:
            failure = Failure(name, f.message, f.record, f.expected, f.found)
            break
        except Exception as e:
            if debug:
                raise
            failure = Failure(name, f"{INTERNAL} error of the verifier in this check: {type(e).__name__}: {e}")
            break
        if isinstance(outcome, Skip):
            skipped.append(name)
            reasons[name] = outcome.reason
        else:
            passed.append(name)
    if evidence is not None and "evidence" not in ctx.summary:  # §14.14: the count, whatever the verdict
        ctx.summary["evidence"] = unapplied_counts(t, evidence)
    return Report(failure is None, failure, ctx.summary, passed, skipped, reasons, warnings_of(ctx))
