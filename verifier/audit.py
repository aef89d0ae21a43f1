"""The room audit: ``rummy-verify audit DIR`` (docs/fairness.md §17, docs/audit.md).

A server that sees every seed could claim that some seats' reveals never arrived
(``withheld``), or void a hand, to choose among the decks it could deal (grinding,
§16).  No single transcript shows that; a card room's hands together can.  The
audit verifies every transcript under a folder (hands that fail are listed apart
and not counted), reduces each to its facts (:mod:`verifier.handfacts`), counts
them per table and per player, and runs the tests of docs/audit.md:

- per player: ``deal_advantage`` (in hands where another seat was left out, the
  player was dealt better hands than the seats dealt with them more than a fair
  deck allows), ``win_advantage`` (wins in those hands against the player's other
  hands with as many seats in play), ``void_deal`` (dealt worse hands than the
  others in hands voided after the reveals more than a fair deck allows);
- per table, when the folder holds several: ``left_out_rate``, ``void_rate`` and
  ``clock_rate`` against the rest of the room.

Each p-value is exact (:mod:`verifier.exact`); a test is flagged when its p-value
is at most ``alpha / K``, K being the number of tests that could reach that level
at all (Tarone's refinement of Bonferroni).  Nothing here is a proof of honesty.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Final

from verifier.batch import CHUNK, FileResult, Finding, Settings, table_findings, verify_and_read
from verifier.exact import Stratum, Tail, hypergeometric_tail, rank_sum_tail, tarone
from verifier.handfacts import NO_COMMIT, WITHHELD, HandFacts, SeatFacts, hand_facts
from verifier.strictjson import InputError

DEFAULT_ALPHA: Final = "0.001"
PLAYER_TESTS: Final = ("deal_advantage", "win_advantage", "void_deal")
TABLE_TESTS: Final = ("left_out_rate", "void_rate", "clock_rate")
GROUPS: Final = ("others_left_out", "none_left_out")


# --------------------------------------------------------------------------- reading
def audit_file(path: str, settings: Settings) -> tuple[FileResult, HandFacts | None]:
    """Read, verify and reduce one file, as ``rummy-verify DIR`` verifies it; never
    raises for bad input.  The facts are None unless every check passed."""
    result, t = verify_and_read(path, settings)
    return result, None if t is None else hand_facts(t, path)


def _run(paths: list[str], settings: Settings, processes: int) -> Iterator[tuple[FileResult, HandFacts | None]]:
    audit = functools.partial(audit_file, settings=settings)  # no evidence: a few bytes a chunk
    if processes <= 1 or len(paths) < 2:
        yield from map(audit, paths)
        return
    chunk = max(1, min(CHUNK, len(paths) // (processes * 4)))
    with ProcessPoolExecutor(max_workers=processes) as pool:
        yield from pool.map(audit, paths, chunksize=chunk)


@dataclass
class Folder:
    """A folder's files: each file's verification, the table checks (``chain``,
    ``gap``, ``fork``, as ``rummy-verify DIR`` runs them) and the facts of the hands
    that count (verified, and marked by no table check)."""

    results: list[FileResult]
    findings: list[Finding]
    hands: list[HandFacts]
    copies: int = 0  # files that held a copy of a hand counted already (the same signed transcript)


def read_folder(
    folder: Path,
    pinned: bytes | None = None,
    *,
    processes: int = 1,
    allow_v1: bool = False,
    debug: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Folder:
    if not folder.is_dir():
        raise InputError(f"{folder} is not a directory (rummy-verify audit reads a folder of transcripts)")
    files = sorted(str(p) for p in folder.rglob("*.json") if p.is_file())
    if not files:
        raise InputError(f"no .json files in {folder}")
    results: list[FileResult] = []
    facts: dict[str, HandFacts] = {}
    settings = Settings(pinned, None, False, debug, allow_v1)
    for n, (r, f) in enumerate(_run(files, settings, processes), 1):
        results.append(r)
        if f is not None:
            facts[r.path] = f
        if progress is not None:
            progress(n, len(files))
    findings = table_findings(results)
    marked = {p for finding in findings for p in finding.files}
    signature = {r.path: r.signature for r in results}
    hands: list[HandFacts] = []
    seen: set[str | None] = set()
    copies = 0
    for p in sorted(facts):
        if p in marked:
            continue
        if signature[p] in seen:  # a copy of a hand counted once: copies would dilute every test
            copies += 1
            continue
        seen.add(signature[p])
        hands.append(facts[p])
    return Folder(results, findings, hands, copies)


# --------------------------------------------------------------------------- tests
@dataclass
class Verdict:
    """One test on one subject: the sample, the count observed and its expectation
    under the honest-room hypothesis, the exact p-value and the smallest it could
    have been; ``counted`` when it could reach the threshold (Tarone), ``flagged``
    when it did."""

    test: str
    subject: str  # a player_id or a table_id
    n: int  # hands (or seat-hands, or turns) in the sample
    observed: int
    expected: float
    tail: Tail
    counted: bool = False
    flagged: bool = False

    def to_json(self) -> dict[str, Any]:
        kind = "table" if self.test in TABLE_TESTS else "player"
        return {
            "test": self.test,
            kind: self.subject,
            "n": self.n,
            "observed": self.observed,
            "expected": round(self.expected, 3),
            "p_value": self.tail.value,
            "log10_p": round(self.tail.log10, 3),
            "min_p_value": self.tail.min_value,
            "counted": self.counted,
            "flagged": self.flagged,
        }


def _beaten(me: SeatFacts, hand: HandFacts, worst: bool = False) -> int | None:
    """How many of the hand's other dealt seats ``me`` was dealt a strictly better
    hand (lower count) than — strictly worse with ``worst`` — or None when a count
    is unknown."""
    others = [s.deal_points for s in hand.dealt if s.seat != me.seat]
    mine = me.deal_points
    if mine is None or any(p is None for p in others):
        return None
    return sum(1 for p in others if p is not None and (mine > p if worst else mine < p))


@dataclass
class _Sample:
    ns: list[int] = field(default_factory=list)  # dealt seats of each hand
    beaten: int = 0

    def add(self, n: int, beaten: int) -> None:
        self.ns.append(n)
        self.beaten += beaten


def player_tests(hands: Iterable[HandFacts]) -> list[Verdict]:
    deal: dict[str, _Sample] = {}
    void: dict[str, _Sample] = {}
    strata: dict[str, dict[int, list[int]]] = {}  # player -> in-play seats -> [hands, wins, left-out hands, wins]
    for h in hands:
        n_dealt = len(h.dealt)
        for s in h.seats:
            if not s.dealt or n_dealt < 2:
                continue
            if h.void is None and h.others_left_out(s.seat):
                beaten = _beaten(s, h)
                if beaten is not None:
                    deal.setdefault(s.player_id, _Sample()).add(n_dealt, beaten)
            if h.void_after_reveals:
                beaten = _beaten(s, h, worst=True)
                if beaten is not None:
                    void.setdefault(s.player_id, _Sample()).add(n_dealt, beaten)
            if h.winner is not None and s.in_play and h.in_play >= 2:
                cell = strata.setdefault(s.player_id, {}).setdefault(h.in_play, [0, 0, 0, 0])
                out = h.others_left_out(s.seat)
                cell[0] += 1
                cell[1] += s.won
                cell[2] += out
                cell[3] += s.won and out
    tests = []
    for name, samples in (("deal_advantage", deal), ("void_deal", void)):
        for player, sample in sorted(samples.items()):
            tests.append(
                Verdict(
                    name,
                    player,
                    len(sample.ns),
                    sample.beaten,
                    sum((n - 1) / 2 for n in sample.ns),
                    rank_sum_tail(sample.ns, sample.beaten),
                )
            )
    for player, by_n in sorted(strata.items()):
        # [hands, wins, left-out hands, wins in them] per number of seats in play
        useful = [(Stratum(c[0], c[1], c[2]), c[3]) for _, c in sorted(by_n.items())]
        useful = [(s, wins) for s, wins in useful if s.informative]
        if not useful:
            continue
        observed = sum(wins for _, wins in useful)
        tests.append(
            Verdict(
                "win_advantage",
                player,
                sum(s.drawn for s, _ in useful),
                observed,
                sum(s.drawn * s.marked / s.total for s, _ in useful),
                hypergeometric_tail([s for s, _ in useful], observed),
            )
        )
    return tests


def _table_counts(hands: Iterable[HandFacts]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for h in hands:
        c = out.setdefault(
            h.table_id,
            {"hands": 0, "revealed_hands": 0, "void": 0, "void_after_reveals": 0, "seat_hands": 0}
            | {"window_hands": 0, "void_from_window": 0}
            | {"withheld": 0, "no_commit": 0, "left_out": 0, "turns": 0, "timeouts": 0, "clock_drops": 0},
        )
        c["hands"] += 1
        c["void"] += h.void is not None
        c["void_after_reveals"] += h.void_after_reveals
        c["window_hands"] += h.reached_window
        c["void_from_window"] += h.void_from_window
        if h.reached_reveals:
            c["revealed_hands"] += 1
            c["seat_hands"] += len(h.seats)
            c["withheld"] += sum(s.status == WITHHELD for s in h.seats)
            c["no_commit"] += sum(s.status == NO_COMMIT for s in h.seats)
            c["left_out"] += sum(s.left_out for s in h.seats)
        c["turns"] += sum(s.turns for s in h.seats)
        c["timeouts"] += sum(s.timeouts for s in h.seats)
        c["clock_drops"] += sum(s.clock_drop for s in h.seats)
    return out


def table_tests(counts: dict[str, dict[str, int]]) -> list[Verdict]:
    """Each table's rate against the rest of the room (Fisher's exact test, one-sided);
    none with fewer than two tables."""
    if len(counts) < 2:
        return []
    tests = []
    for name, trials, events in (
        ("left_out_rate", "seat_hands", "left_out"),
        ("void_rate", "window_hands", "void_from_window"),
        ("clock_rate", "turns", "timeouts"),
    ):
        room_n = sum(c[trials] for c in counts.values())
        room_k = sum(c[events] for c in counts.values())
        for table, c in sorted(counts.items()):
            stratum = Stratum(room_n, room_k, c[trials])
            if not stratum.informative:
                continue
            expected = c[trials] * room_k / room_n
            tests.append(
                Verdict(name, table, c[trials], c[events], expected, hypergeometric_tail([stratum], c[events]))
            )
    return tests


# --------------------------------------------------------------------------- the report
def _players(hands: Sequence[HandFacts], *, groups: bool = True) -> list[dict[str, Any]]:
    """One row per player; with ``groups``, its results in the hands it was dealt
    into with another seat left out, and in those with none left out."""
    rows: dict[str, dict[str, Any]] = {}
    for h in hands:
        for s in h.seats:
            r = rows.setdefault(
                s.player_id,
                {"player": s.player_id, "player_keys": set(), "tables": set(), "hands": 0, "dealt": 0}
                | {"withheld": 0, "no_commit": 0, "turns": 0, "timeouts": 0, "clock_drops": 0, "wins": 0}
                | {"points": 0, "ht": 0}
                | {k: {"hands": 0, "wins": 0, "points": 0, "ht": 0, "dealt_seats": 0} for k in GROUPS},
            )
            r["player_keys"].add(s.player_key)
            r["tables"].add(h.table_id)
            r["hands"] += 1
            r["dealt"] += s.dealt
            r["withheld"] += s.status == WITHHELD
            r["no_commit"] += s.status == NO_COMMIT
            r["turns"] += s.turns
            r["timeouts"] += s.timeouts
            r["clock_drops"] += s.clock_drop
            r["wins"] += s.won
            r["points"] += s.points or 0
            r["ht"] += s.delta or 0
            if s.dealt and h.winner is not None:
                g = r[GROUPS[0] if h.others_left_out(s.seat) else GROUPS[1]]
                g["hands"] += 1
                g["wins"] += s.won
                g["points"] += s.points or 0
                g["ht"] += s.delta or 0
                g["dealt_seats"] += len(h.dealt)
    out = []
    for _, r in sorted(rows.items()):
        r["player_keys"] = sorted(r["player_keys"])
        r["tables"] = sorted(r["tables"])
        for k in GROUPS:
            g = r.pop(k) if not groups else r[k]
            seats = g.pop("dealt_seats")
            g["mean_dealt_seats"] = round(seats / g["hands"], 3) if g["hands"] else None
        if not groups:
            del r["tables"]
        out.append(r)
    return out


def _voids(hands: Sequence[HandFacts]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for h in hands:
        if h.void is not None:
            by = out.setdefault(h.table_id, {})
            by[h.void] = by.get(h.void, 0) + 1
    return out


def audit(hands: Sequence[HandFacts], alpha: Fraction = Fraction(DEFAULT_ALPHA)) -> dict[str, Any]:
    """The audit of a room's verified hands: counts per table and per player, every
    test run, and which are flagged (docs/audit.md gives the JSON's shape)."""
    if not 0 < alpha < 1:
        raise ValueError("alpha is a probability strictly between 0 and 1")
    counts = _table_counts(hands)
    tests = player_tests(hands) + table_tests(counts)
    k = tarone([Fraction(t.tail.min_num, t.tail.den) for t in tests], alpha)
    threshold = alpha / k
    for t in tests:
        t.counted = t.tail.min_at_most(threshold)
        t.flagged = t.counted and t.tail.at_most(threshold)
    tests.sort(key=lambda t: (not t.flagged, t.tail.log10, t.test, t.subject))
    voids = _voids(hands)
    by_table: dict[str, list[HandFacts]] = {}
    for h in hands:
        by_table.setdefault(h.table_id, []).append(h)
    return {
        "alpha": float(alpha),
        "tests_run": len(tests),
        "tests_counted": sum(t.counted for t in tests),
        "tarone_k": k,
        "threshold": float(threshold),
        "flagged": sum(t.flagged for t in tests),
        "tables": [
            {"table": table, **c, "voids": voids.get(table, {}), "players": _players(by_table[table], groups=False)}
            for table, c in sorted(counts.items())
        ],
        "players": _players(hands),
        "tests": [t.to_json() for t in tests],
    }


# --------------------------------------------------------------------------- the command
def folder_report(folder: Folder, alpha: Fraction, name: str) -> dict[str, Any]:
    failed = [
        {"transcript": r.path, **{k: r.failure[k] for k in ("check", "message", "record")}}
        for r in folder.results
        if r.failure is not None
    ]
    body = audit(folder.hands, alpha)
    return {
        "folder": name,
        "files": len(folder.results),
        "counted": len(folder.hands),
        "copies": folder.copies,
        "failed": failed,
        "table_checks": [f.to_json() for f in folder.findings],
        **body,
        "ok": not failed and not folder.findings and body["flagged"] == 0,
    }


def _pct(k: int, n: int) -> str:
    return f"{k:,} / {n:,} ({100 * k / n:.1f}%)" if n else f"{k:,} / 0"


def _p(test: dict[str, Any]) -> str:
    return f"{test['p_value']:.2g}" if test["p_value"] > 0 else f"10^{test['log10_p']:.1f}"


def _columns(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]


TEST_WORDS: Final = {
    "deal_advantage": "seats dealt a worse hand than this player's, in hands where another seat was left out",
    "win_advantage": "won, in hands where another seat was left out (against their other hands)",
    "void_deal": "seats dealt a better hand than this player's, in hands voided after the reveals",
    "left_out_rate": "seat-hands left out (withheld or no_commit), against the rest of the room",
    "void_rate": "hands voided after the reveals, against the rest of the room",
    "clock_rate": "turns ended by the clock, against the rest of the room",
}


def render(report: dict[str, Any]) -> str:
    """The report as a person reads it on a terminal."""
    lines = [
        f"room audit of {report['folder']}: {report['files']:,} files, {report['counted']:,} hands counted"
        + (f" ({report['copies']:,} files held copies of a counted hand: counted once)" if report["copies"] else "")
        + f", {len(report['failed']):,} failed verification"
    ]
    for f in report["failed"]:
        where = "" if f.get("record") is None else f" at log record {f['record']}"
        lines.append(f"  FAIL {f['transcript']}: check '{f['check']}' failed{where}: {f['message']}")
    for f in report["table_checks"]:
        lines.append(f"  FAIL {', '.join(f['files'])}: check '{f['check']}' failed: {f['message']}")
    if report["tables"]:
        rows = [["table", "hands", "void (from the reveal window)", "left out / seat-hands", "withheld", "no_commit"]]
        rows[0] += ["clock moves / turns", "clock drops"]
        for t in report["tables"]:
            rows.append(
                [t["table"], f"{t['hands']:,}", f"{t['void']:,} ({t['void_from_window']:,})"]
                + [_pct(t["left_out"], t["seat_hands"]), f"{t['withheld']:,}", f"{t['no_commit']:,}"]
                + [_pct(t["timeouts"], t["turns"]), f"{t['clock_drops']:,}"]
            )
        lines += ["", "tables", *_columns(rows)]
        for t in report["tables"]:
            for reason, n in sorted(t["voids"].items()):
                lines.append(f"  {t['table']}: {n:,} void: {reason}")
    if report["players"]:
        rows = [["player", "hands", "dealt", "withheld", "no_commit", "clock moves / turns", "wins"]]
        rows[0] += ["| others left out: hands", "wins", "HT", "| none left out: hands", "wins", "HT"]
        for p in report["players"]:
            a, b = p["others_left_out"], p["none_left_out"]
            rows.append(
                [p["player"], f"{p['hands']:,}", f"{p['dealt']:,}", f"{p['withheld']:,}", f"{p['no_commit']:,}"]
                + [_pct(p["timeouts"], p["turns"]), f"{p['wins']:,}"]
                + [f"{a['hands']:,}", _pct(a["wins"], a["hands"]), f"{a['ht']:+,}"]
                + [f"{b['hands']:,}", _pct(b["wins"], b["hands"]), f"{b['ht']:+,}"]
            )
        lines += ["", "players", *_columns(rows)]
    lines += [
        "",
        f"tests: {report['tests_run']} run, {report['tests_counted']} could reach the threshold; each flagged at "
        f"p <= {report['alpha']:g} / {report['tarone_k']} = {report['threshold']:.3g} (Bonferroni over the tests "
        "that could reach it, Tarone)",
    ]
    if report["tests"]:
        rows = [["", "test", "subject", "observed", "expected", "n", "p", "min p"]]
        for t in report["tests"]:
            subject = f"table {t['table']}" if "table" in t else f"player {t['player']}"
            mark = "FLAGGED" if t["flagged"] else ("" if t["counted"] else "(cannot reach)")
            rows.append(
                [mark, t["test"], subject, f"{t['observed']:,}", f"{t['expected']:,.1f}", f"{t['n']:,}", _p(t)]
                + [f"{t['min_p_value']:.2g}"]
            )
        lines += _columns(rows)
        lines += [f"  {k}: {v}" for k, v in TEST_WORDS.items() if any(t["test"] == k for t in report["tests"])]
    if report["flagged"]:
        lines.append(
            f"\nFLAGGED: {report['flagged']} test(s) found what an honest room would not produce (docs/audit.md)"
        )
    else:
        lines.append(
            "\nnothing flagged: these hands show none of the traces the audit looks for (which is not a proof of "
            "honesty, docs/audit.md)"
        )
    return "\n".join(lines)


def _alpha(text: str) -> Fraction:
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"--alpha takes a probability, e.g. 0.001, not {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"--alpha is a probability strictly between 0 and 1, not {text}")
    return value


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a number of processes, 1 or more, not {text!r}")
    return int(text)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("folder", metavar="DIR", help="a folder of transcripts (every *.json under it)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON (shape: docs/audit.md)")
    ap.add_argument(
        "--alpha", type=_alpha, default=Fraction(DEFAULT_ALPHA), help=f"the family-wise level (default {DEFAULT_ALPHA})"
    )
    ap.add_argument("--jobs", type=_jobs, default=1, metavar="N", help="verify with N processes")
    ap.add_argument("--key", help="pin the server's public key (as rummy-verify --key)")
    ap.add_argument("--allow-v1", action="store_true", help="count rummy-pf/v1 hands too (as rummy-verify --allow-v1)")
    ap.add_argument("--debug", action="store_true", help="show tracebacks of faults of the verifier")


def run(args: argparse.Namespace, pinned: bytes | None, progress: Callable[[int, int], None] | None = None) -> int:
    """``rummy-verify audit``: 0 nothing flagged and every hand verified, 1 a test
    flagged or a hand failed, 70 a fault of the verifier (2 and 3 are raised)."""
    folder = read_folder(
        Path(args.folder), pinned, processes=args.jobs, allow_v1=args.allow_v1, debug=args.debug, progress=progress
    )
    report = folder_report(folder, args.alpha, args.folder)
    if args.json:
        print(json.dumps(report, sort_keys=True, ensure_ascii=False))
    else:
        print(render(report))
    sys.stdout.flush()
    if any(r.internal for r in folder.results):
        return 70
    return 0 if report["ok"] else 1
