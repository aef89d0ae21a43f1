"""Verifying many transcripts: ``rummy-verify DIR`` (docs/fairness.md §11, §14).

Every ``*.json`` file under the folder is read and verified on its own — in this
process, or in ``jobs`` worker processes — and a file that cannot be read is a
failure named ``read`` that does not stop the others.  Then the table-level checks
run over the hands that verified, per table:

- ``chain`` — a table's history is one chain: hand n+1's ``prev_head`` is hand n's
  ``head`` (§11);
- ``gap`` — every hand number between a table's lowest and highest hand present is
  present;
- ``fork`` — no two different signed transcripts of one table and hand;
- ``downgrade`` — no rummy-pf/v1 hand numbered at or after a rummy-pf/v2 hand of the
  same table (the switch to v2 is one way), whatever ``allow_v1`` says.
- ``rules`` — every signed hand of a table has the same ``rules_id`` (a table's
  rules never change, RULES.md D38).
- ``dealer`` — the dealer of rummy-pf/v2 hand n+1 is the next seat of its header
  after hand n's dealer, wrapping, when hand n+1 chains from hand n (the button
  moves to the next seated player each hand, RULES.md D3).

An evidence file given with a directory is checked against every transcript it holds
items for; a transcript it holds none for skips ``evidence`` — but one that seats a
key the evidence's ``player`` items name fails it, as it would alone (§14) — and
evidence with no item for any transcript of the directory fails as a whole
(``evidence``).

Only small results travel back from a worker, never a transcript.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2
from verifier.hand import dealer_after
from verifier.strictjson import MAX_BYTES, InputError, parse, read_stream, unwrap_transcript
from verifier.transcript import INTERNAL, verify_transcript


def read_file(path: Path, name: str | None = None) -> bytes:
    """A file's bytes, refused unread if it is larger than the limit (§2)."""
    name = name or str(path)
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_BYTES:
                raise InputError(f"{name} is larger than {MAX_BYTES} bytes (16 MiB): {size} bytes; it was not read")
            return read_stream(f, name)
    except IsADirectoryError:
        raise InputError(f"{name} is a directory") from None
    except OSError as e:
        raise InputError(f"cannot read {name}: {e.strerror or e}") from None


def read_transcript_file(path: Path) -> dict[str, Any]:
    return unwrap_transcript(parse(read_file(path), str(path)), str(path))


@dataclass
class FileResult:
    """What one file's verification leaves for the summary and the table checks."""

    path: str
    ok: bool
    failure: dict[str, Any] | None
    report: dict[str, Any] | None = None  # the whole report, kept only for --json
    table_id: str | None = None
    hand_no: int | None = None
    prev_head: str | None = None
    head: str | None = None
    signature: str | None = None
    warnings: list[str] = field(default_factory=list)
    internal: bool = False
    # for ``downgrade``: what the file claims to be, read whether or not it verified
    claimed: tuple[str, str, int] | None = None  # (protocol, table_id, hand_no)
    signed: bool = False  # its server signatures verified (check ``signature`` passed)
    evidence: dict[str, int] | None = None  # the evidence counts of §15, when evidence was given
    # for ``rules``: the header's rules_id and the key that signed it (when ``format`` passed)
    rules_id: str | None = None
    server_key: str | None = None
    # for ``dealer``: the header's dealer and seats (when ``format`` passed)
    dealer: int | None = None
    seats: tuple[int, ...] = ()


@dataclass(frozen=True)
class Settings:
    """What every file of a directory is verified with: sent once to each worker."""

    pinned: bytes | None
    evidence: Any
    keep_report: bool
    debug: bool = False
    allow_v1: bool = False


def verify_file(path: str, job: Settings) -> FileResult:
    """Read and verify one file; never raises for bad input (only with ``debug`` for a
    verifier fault)."""
    return verify_and_read(path, job)[0]


def verify_and_read(path: str, job: Settings) -> tuple[FileResult, dict[str, Any] | None]:
    """:func:`verify_file`, and the transcript itself when every check passed (the room
    audit reads its facts from the very transcript that was verified)."""
    try:
        t = read_transcript_file(Path(path))
    except InputError as e:
        failure = {"check": "read", "message": str(e), "record": None, "expected": None, "found": None}
        kept = {"ok": False, "failure": failure} if job.keep_report else None
        return FileResult(path, False, failure, kept), None
    report = verify_transcript(
        t, job.pinned, job.evidence, allow_v1=job.allow_v1, in_folder=True, parsed=True, debug=job.debug
    )
    out = FileResult(
        path,
        report.ok,
        None if report.failure is None else report.failure.to_json(),
        report.to_json() if job.keep_report else None,
        warnings=[w["code"] for w in report.warnings],
        internal=report.failure is not None and report.failure.message.startswith(INTERNAL),
        claimed=_claimed(t),
        signed="signature" in report.checks_passed,
        evidence=report.summary.get("evidence"),
    )
    if "format" in report.checks_passed:
        header = t["log"][0]["header"]
        out.table_id, out.hand_no = str(t["table_id"]), int(t["hand_no"])
        out.prev_head, out.head, out.signature = str(header["prev_head"]), str(t["head"]), str(t["signature"])
        out.rules_id, out.server_key = str(header["rules_id"]), str(header["public_key"])
        out.dealer, out.seats = int(header["dealer"]), tuple(int(e["seat"]) for e in header["seats"])
    return out, t if report.ok else None


def _claimed(t: Any) -> tuple[str, str, int] | None:
    """(protocol, table_id, hand_no) as the file states them, if it states them."""
    if type(t) is not dict:
        return None
    p, table, n = t.get("protocol"), t.get("table_id"), t.get("hand_no")
    if type(p) is str and type(table) is str and type(n) is int:
        return p, table, n
    return None


CHUNK = 8  # hands a worker is sent at a time
_settings: Settings | None = None  # a worker's, from _start_worker


def _start_worker(settings: Settings) -> None:
    global _settings
    _settings = settings


def _verify_in_worker(path: str) -> FileResult:
    assert _settings is not None, "the pool starts each worker with _start_worker"
    return verify_file(path, _settings)


def run_jobs(paths: list[str], settings: Settings, processes: int) -> Iterator[FileResult]:
    """Results in the order of ``paths``, as they come; ``processes`` > 1 uses worker
    processes, which get ``settings`` (the evidence, say) once each, then paths in
    chunks, and send back small results."""
    if processes <= 1 or len(paths) < 2:
        for path in paths:
            yield verify_file(path, settings)
        return
    # A chunk of 8 hands is about a tenth of a second of work: the last chunks leave a
    # worker idle that long at most, and a chunk's paths and results are a few hundred
    # bytes, pickled once each way.
    chunk = max(1, min(CHUNK, len(paths) // (processes * 4)))
    from concurrent.futures import ProcessPoolExecutor  # only --jobs N needs it: not imported at start-up

    with ProcessPoolExecutor(max_workers=processes, initializer=_start_worker, initargs=(settings,)) as pool:
        yield from pool.map(_verify_in_worker, paths, chunksize=chunk)


@dataclass
class Finding:
    """A directory-level failure (chain, gap, fork, downgrade, rules, dealer, evidence) and the files
    it marks failed (none for evidence that fits no transcript)."""

    check: str
    message: str
    files: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "message": self.message, "files": self.files}


def table_findings(results: Iterable[FileResult]) -> list[Finding]:
    """The table-level checks over the files whose ``format`` passed: ``fork`` and
    ``chain`` among the hands that verified, ``gap`` among all hand numbers present."""
    present: dict[str, dict[int, list[FileResult]]] = {}
    for r in results:
        if r.table_id is not None and r.hand_no is not None:
            present.setdefault(r.table_id, {}).setdefault(r.hand_no, []).append(r)
    out: list[Finding] = downgrades(results) + changed_rules(results)
    for table in sorted(present):
        hands = present[table]
        numbers = sorted(hands)
        for n in numbers:
            good = [r for r in hands[n] if r.ok]
            if len({r.signature for r in good}) > 1:
                files = sorted(r.path for r in good)
                out.append(
                    Finding(
                        "fork",
                        f"table {table} hand {n} has {len({r.signature for r in good})} different signed transcripts: "
                        + ", ".join(files),
                        files,
                    )
                )
        for before, after in itertools.pairwise(numbers):
            if after != before + 1:
                missing = f"hand {before + 1}" if after == before + 2 else f"hands {before + 1} to {after - 1}"
                files = sorted(r.path for r in hands[after])
                out.append(
                    Finding("gap", f"table {table}: {missing} missing between hand {before} and hand {after}", files)
                )
                continue
            # Copies of one transcript (the same signature) are one hand: a second copy of
            # hand n must not switch the check of hand n + 1 off (found by an audit).
            prev = {r.signature: r for r in sorted(hands[before], key=lambda r: r.path) if r.ok}
            if len(prev) != 1:
                continue  # no verified hand n, or a fork (above)
            (first,) = prev.values()
            for r in hands[after]:
                if r.ok and first.head != r.prev_head:
                    out.append(
                        Finding(
                            "chain",
                            f"hand {after} of table {table} does not start from hand {before}'s head ({first.path})",
                            [r.path],
                        )
                    )
                elif r.ok:
                    out.extend(moved_button(first, r) + rules_across_keys(first, r))
    return out


def rules_across_keys(before: FileResult, after: FileResult) -> list[Finding]:
    """§14 ``rules`` across a change of key: hand n+1, signed by another key than hand
    n, starts from hand n's head, so its signer vouches that hand n, as published, is
    the hand before it (no other log hashes to that head), whoever signed hand n.
    Under other rules it is that signer's proof that it changed the table's rules
    (RULES.md D38); before, a house that signed one hand with a new key escaped
    ``rules``, which compares the hands of one key (the audit of 2026-12-07).  Hand
    n+1's file fails: anyone can start a hand of their own from a published head, so
    the finding is against the key of hand n+1 only."""
    if before.server_key == after.server_key or before.rules_id is None or before.rules_id == after.rules_id:
        return []
    return [
        Finding(
            "rules",
            f"hand {after.hand_no} of table {after.table_id}, signed by key {after.server_key}, starts from hand"
            f" {before.hand_no} ({before.path}, signed by key {before.server_key}) under other rules: a table's rules"
            " never change (RULES.md D38)",
            [after.path],
        )
    ]


def moved_button(before: FileResult, after: FileResult) -> list[Finding]:
    """§14 ``dealer``: hand n+1, chained from hand n, is dealt by the next seat of its
    header after hand n's dealer (RULES.md D3); the house does not choose who plays
    first.  Only between two rummy-pf/v2 hands."""
    if not _v2(before) or not _v2(after) or before.dealer is None or after.dealer is None:
        return []
    want = dealer_after(sorted(after.seats), before.dealer)
    if after.dealer == want:
        return []
    return [
        Finding(
            "dealer",
            f"hand {after.hand_no} of table {after.table_id} is dealt by seat {after.dealer}, but hand"
            f" {before.hand_no}'s dealer was seat {before.dealer} ({before.path}), so the button moves to seat {want},"
            " the next seat of the hand's header (RULES.md D3)",
            [after.path],
        )
    ]


def _v2(r: FileResult) -> bool:
    return r.claimed is not None and r.claimed[0] == PROTOCOL_V2


def changed_rules(results: Iterable[FileResult]) -> list[Finding]:
    """§14 ``rules``: a table's rules never change (RULES.md D38), so every hand of a
    table whose server signatures verify has one ``rules_id`` — among the hands
    signed by one key (a transcript under another key is no signature of this
    server's: anyone can make one)."""
    seen: dict[tuple[str, str], dict[str, list[FileResult]]] = {}
    for r in results:
        if r.signed and r.table_id is not None and r.rules_id is not None and r.server_key is not None:
            seen.setdefault((r.table_id, r.server_key), {}).setdefault(r.rules_id, []).append(r)
    out: list[Finding] = []
    for (table, _), by_rules in sorted(seen.items()):
        if len(by_rules) < 2:
            continue
        groups = sorted(by_rules.values(), key=lambda rs: min(r.hand_no or 0 for r in rs))
        hands = "; ".join(
            "hands " + ", ".join(str(n) for n in sorted({r.hand_no for r in rs if r.hand_no is not None}))
            for rs in groups
        )
        files = sorted(r.path for rs in groups for r in rs)
        out.append(
            Finding(
                "rules",
                f"table {table} was dealt under {len(groups)} different rule sets, each signed by the server ({hands});"
                " a table's rules never change (RULES.md D38)",
                files,
            )
        )
    return out


def downgrades(results: Iterable[FileResult]) -> list[Finding]:
    """§14 ``downgrade``: a rummy-pf/v1 hand numbered at or after a rummy-pf/v2 hand of
    its table (one the server signed) is a re-published v2 hand.  Judged on what each
    file claims, whether or not the v1 file was accepted (``--allow-v1``)."""
    first_v2: dict[str, tuple[int, str]] = {}
    v1: list[tuple[str, int, str]] = []
    for r in results:
        if r.claimed is None:
            continue
        protocol, table, n = r.claimed
        if protocol == PROTOCOL_V2 and r.signed and (table not in first_v2 or n < first_v2[table][0]):
            first_v2[table] = (n, r.path)
        elif protocol == PROTOCOL_V1:
            v1.append((table, n, r.path))
    out = []
    for table, n, path in sorted(v1):
        if table in first_v2 and n >= first_v2[table][0]:
            m, where = first_v2[table]
            out.append(
                Finding(
                    "downgrade",
                    f"table {table}: hand {n} is {PROTOCOL_V1}, but hand {m} of the table is already {PROTOCOL_V2} "
                    f"({where}): the switch to v2 is one way, so this is a re-published v2 hand",
                    [path],
                )
            )
    return out


def evidence_findings(results: list[FileResult], evidence: Any) -> list[Finding]:
    """Evidence given with a directory must hold an item for some transcript of it."""
    if evidence is None or any(r.evidence and r.evidence["checked"] + r.evidence["after_void"] for r in results):
        return []
    if any(r.evidence is None for r in results):
        return []  # a file failed before its evidence check: its own failure says so
    items = len(evidence) if isinstance(evidence, list) else 0
    return [Finding("evidence", f"no item of the evidence ({items} items) is for any transcript of the directory", [])]


@dataclass
class BatchOutcome:
    results: list[FileResult]
    findings: list[Finding]

    @property
    def failed_files(self) -> set[str]:
        bad = {r.path for r in self.results if not r.ok}
        for f in self.findings:
            bad.update(f.files)
        return bad

    @property
    def passed(self) -> int:
        return len(self.results) - len(self.failed_files)

    @property
    def ok(self) -> bool:
        """No file failed and no directory-level check failed."""
        return not self.failed_files and not self.findings

    def evidence_counts(self) -> dict[str, int] | None:
        """§15's counts summed over the directory (None when no evidence was given)."""
        given = [r.evidence for r in self.results if r.evidence is not None]
        if not given:
            return None
        out = {"items": given[0]["items"], "checked": 0, "after_void": 0, "transcripts": 0}
        for e in given:
            out["checked"] += e["checked"]
            out["after_void"] += e["after_void"]
            out["transcripts"] += 1 if e["checked"] + e["after_void"] else 0
        return out


def verify_folder(
    folder: Path,
    pinned: bytes | None,
    evidence: Any = None,
    *,
    processes: int = 1,
    keep_reports: bool = False,
    debug: bool = False,
    progress: Callable[[int, int], None] | None = None,
    allow_v1: bool = False,
) -> BatchOutcome:
    files = sorted(str(p) for p in folder.rglob("*.json") if p.is_file())
    if not files:
        raise InputError(f"no .json files in {folder}")
    settings = Settings(pinned, evidence, keep_reports, debug, allow_v1)
    results = []
    for n, r in enumerate(run_jobs(files, settings, processes), 1):
        results.append(r)
        if progress is not None:
            progress(n, len(files))
    return BatchOutcome(results, table_findings(results) + evidence_findings(results, evidence))
