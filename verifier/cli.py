"""``rummy-verify``: verify hand transcripts (rummy-pf/v2, and v1) and score hands.

    rummy-verify TRANSCRIPT [--key KEY] [--receipts FILE] [--allow-v1] [--json] [--debug]
        TRANSCRIPT: a file, - for standard input, an http(s) URL
    rummy-verify DIR [--key KEY] [--receipts FILE] [--allow-v1] [--json] [--jobs N]
        every *.json under DIR, then each table's chain, gaps, forks, downgrades, rules and dealers
    rummy-verify score [--json] --wild 7H AS 2S 3S …     one hand of 13 cards
    rummy-verify score [--json] < hands.jsonl             {"wild": "7H", "hand": [...]} per line
    rummy-verify audit DIR [--json] [--alpha A] [--jobs N] [--key KEY] [--allow-v1]   the room audit
    rummy-verify --version

Exit codes: 0 every check passed; 1 a check failed; 2 unreadable input (docs/fairness.md
§2: a file, URL or evidence that cannot be read as a transcript); 3 wrong usage (a bad
option, a key that is not a key); 70 a fault of the verifier itself; 130 interrupted;
141 the output was closed (``| head``).  Every expected failure is one line on
standard error; ``--debug`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TextIO

from cryptography.exceptions import UnsupportedAlgorithm

from verifier import __version__
from verifier.arrange import best_arrangement
from verifier.batch import BatchOutcome, read_file, verify_folder
from verifier.cards import Card, card_value, wild_rank_of
from verifier.errors import RuleError
from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2
from verifier.groups import GroupKind, classify
from verifier.signing import fingerprint_text, load_public_key
from verifier.strictjson import MAX_BYTES, InputError, parse, read_stream, unwrap_transcript
from verifier.transcript import CHECKS, INTERNAL, Report, verify_transcript

if TYPE_CHECKING:
    import urllib.error

# Start-up: an auditor runs this command once a file, and a test suite some hundred
# times.  What only one kind of run needs is imported by that run: urllib for a URL,
# the room audit (and its exact tests) for ``audit``, a process pool for ``--jobs``
# (verifier/batch.py).  Verifying one file took 0.26 CPU-s before, about 0.2 after
# (docs/benchmarks.md).

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_USAGE = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141
KEY_HELP = "GET /api/fairness/key on the server gives the key (public_key_hex, public_key_base64, public_key_pem)"
VERSION = f"rummy-verify {__version__} ({PROTOCOL_V2}; {PROTOCOL_V1} with --allow-v1)"


class UsageError(Exception):
    """The command was used wrongly: exit 3 with the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


# --------------------------------------------------------------------------- score
def score_hand(wild: str, hand: Sequence[str]) -> dict[str, Any]:
    """The ``score`` answer for one hand: points, valid declare, the spared groups
    and exactly the loose cards that count (their values sum to the points)."""
    indicator, cards = _parse_hand(wild, hand)
    arr = best_arrangement(cards, wild_rank_of(indicator))
    groups, loose = arr.faces(cards)
    return {"points": arr.points, "valid_declare": arr.valid_declare, "groups": groups, "loose": loose}


def _parse_hand(wild: str, hand: Sequence[Any]) -> tuple[Card, list[Card]]:
    try:
        indicator = Card.parse(wild)
    except RuleError as e:
        raise InputError(f"bad wild card {wild!r}: {e.message}") from None
    cards = []
    for i, text in enumerate(hand):
        if not isinstance(text, str):
            raise InputError(f"card {i + 1} is not a string: {str(text)[:40]!r}")
        try:
            cards.append(Card.parse(text))
        except RuleError:
            raise InputError(f"card {i + 1} is not a card: {text[:40]!r}") from None
    if len(cards) != 13:
        raise InputError(f"a hand has 13 cards, got {len(cards)}: {' '.join(map(str, hand))[:200]}")
    return indicator, cards


RANK_NAMES = ("aces", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s", "tens", "jacks", "queens", "kings")
KIND_NAMES = {GroupKind.PURE: "pure sequence", GroupKind.IMPURE: "impure sequence", GroupKind.SET: "set"}


def score_table(wild: str, answer: dict[str, Any]) -> str:
    """The ``score`` answer as a person reads it on a terminal."""
    indicator = Card.parse(wild)
    rank = wild_rank_of(indicator)
    wild_text = "only printed jokers are wild" if rank is None else f"{RANK_NAMES[rank]} and printed jokers are wild"
    verdict = "a valid declare" if answer["valid_declare"] else "not a valid declare"
    lines = [f"wild card {indicator}: {wild_text}", f"points: {answer['points']} ({verdict})"]
    rows = []
    for g in answer["groups"]:
        kind = classify([Card.parse(c) for c in g], rank)
        rows.append((KIND_NAMES.get(kind, "group") if kind else "group", " ".join(g)))
    if answer["loose"]:
        values = ", ".join(f"{c} {card_value(Card.parse(c), rank)}" for c in answer["loose"])
        rows.append(("loose (counted)", f"{' '.join(answer['loose'])}   [{values}]"))
    width = max((len(k) for k, _ in rows), default=0)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join(lines)


def _score_line(wild: str, answer: dict[str, Any], as_json: bool, out: TextIO) -> None:
    out.write((json.dumps(answer) if as_json else score_table(wild, answer) + "\n") + "\n")


def _score_stream(inp: TextIO, out: TextIO, as_json: bool) -> int:
    for lineno, line in enumerate(inp, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError, ValueError) as e:
            raise InputError(f"line {lineno}: not JSON ({getattr(e, 'msg', e)})") from None
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("wild"), str)
            or not isinstance(item.get("hand"), list)
        ):
            raise InputError(f'line {lineno}: expected {{"wild": "7H", "hand": [13 cards]}}')
        try:
            answer = score_hand(item["wild"], item["hand"])
        except InputError as e:
            raise InputError(f"line {lineno}: {e}") from None
        _score_line(item["wild"], answer, as_json, out)
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    as_json = args.json or not sys.stdout.isatty()
    if args.cards:
        if args.wild is None:
            raise UsageError("give the wild card with --wild, e.g. rummy-verify score --wild 7H AS 2S …")
        _score_line(args.wild, score_hand(args.wild, args.cards), as_json, sys.stdout)
        return EXIT_OK
    if args.wild is not None:
        raise UsageError("--wild goes with 13 cards on the command line; piped lines name their own wild card")
    if sys.stdin.isatty():
        raise UsageError(
            'no cards given: rummy-verify score --wild 7H AS 2S … (13 cards), or pipe lines of {"wild", "hand"} JSON'
        )
    return _score_stream(sys.stdin, sys.stdout, as_json)


# --------------------------------------------------------------------------- reading
def _read_url(url: str, what: str = "transcript") -> bytes:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - the scheme is checked by the caller
        url, headers={"Accept": "application/json", "User-Agent": f"rummy-verify/{__version__}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:  # noqa: S310
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > MAX_BYTES:
                raise InputError(f"{url}: the {what} is {length} bytes, more than 16 MiB; it was not read")
            return read_stream(resp, url)
    except urllib.error.HTTPError as e:
        raise InputError(f"{url}: {_server_error(e)}") from None
    except urllib.error.URLError as e:
        raise InputError(f"cannot reach {url}: {e.reason}") from None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read {url}: {e}") from None


def _server_error(e: urllib.error.HTTPError) -> str:
    """The server's own error (``{"error": {"code", "message"}}``, docs/api.md)."""
    text = f"the server answered {e.code} {e.reason}"
    try:
        body = json.loads(e.read(65536).decode("utf-8"))
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            code = f" {err['code']}" if isinstance(err.get("code"), str) else ""
            return f"the server answered {e.code}{code}: {err['message'][:300]}"
    except (OSError, ValueError, AttributeError):
        pass
    return text


def read_bytes(target: str, what: str = "transcript") -> bytes:
    if target == "-":
        return read_stream(sys.stdin.buffer, "standard input")
    if target.startswith(("http://", "https://")):
        return _read_url(target, what)
    return read_file(Path(target), target)


def read_target(target: str) -> dict[str, Any]:
    """The transcript at a path, ``-`` (standard input) or an http(s) URL, read
    strictly (§2).  A test-vector file yields its transcript."""
    return unwrap_transcript(parse(read_bytes(target), target), target)


def read_evidence(target: str) -> Any:
    """An evidence file (§15), read strictly (§2); a test-vector file
    ``{"_about": …, "evidence": [...]}`` yields its items.  Its items are judged by the
    ``evidence`` check (an item that is not a signed item of §15 fails it, named by
    its position)."""
    value = parse(read_bytes(target, "evidence"), target, top=lambda v: True)
    if isinstance(value, dict) and "_about" in value and "evidence" in value:
        return value["evidence"]
    return value


def load_key(text: str) -> bytes:
    """``--key``: 64 hex digits, base64 of 32 bytes, PEM text, or a file holding any
    of those (or the JSON that GET /api/fairness/key answers)."""
    candidates = [text]
    path = Path(text)
    if path.is_file():
        try:
            content = path.read_text(encoding="utf-8")[:100_000].strip()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--key: cannot read {text}: {e}") from None
        candidates.append(content)
        try:
            doc = json.loads(content)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("public_key_hex"), str):
            candidates.append(doc["public_key_hex"])
    for candidate in candidates:
        try:
            key = load_public_key(candidate)
        except (ValueError, TypeError, OSError, UnicodeDecodeError, UnsupportedAlgorithm):
            continue
        return key  # a key that is not strict fails `signature` (or is a fingerprint: see _fingerprint_pinned)
    squeezed = "".join(text.split())
    if squeezed != text and len(squeezed) == 64 and all(c in "0123456789abcdefABCDEF" for c in squeezed):
        raise UsageError(
            f"--key: {text[:80]!r} is a key fingerprint (64 hex digits in groups of four), not the key itself "
            f"(a fingerprint is not a key); {KEY_HELP}"
        )
    raise UsageError(f"--key: {text[:80]!r} is not an Ed25519 public key (hex, base64 or PEM); {KEY_HELP}")


# --------------------------------------------------------------------------- verifying
def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(report: Report, name: str) -> str:
    s = report.summary
    lines = []
    if report.ok:
        lines.append(f"OK  {name}: every check passed ({', '.join(report.checks_passed)})")
    else:
        f = report.failure
        assert f is not None
        where = "" if f.record is None else f" at log record {f.record}"
        lines.append(f"FAIL {name}: check '{f.check}' failed{where}: {f.message}")
        if f.expected is not None or f.found is not None:
            lines.append(f"  expected: {_short(f.expected)}")
            lines.append(f"  found:    {_short(f.found)}")
        lines.append(f"  passed before it: {', '.join(report.checks_passed) or 'none'}")
    for check in report.checks_skipped:
        lines.append(f"  skipped {check}: {report.skip_reasons.get(check, '')}")
    for w in report.warnings:
        lines.append(f"  WARNING {w['code']}: {w['message']}")
    if "table_id" in s:
        lines.append(f"  {s['protocol']}: table {s['table_id']}, hand {s['hand_no']}")
        lines.append("  seats: " + ", ".join(f"{seat}={pid}" for seat, pid in sorted(s["seats"].items())))
    if "winner" in s:
        lines.append(f"  winner: seat {s['winner']} ({s['reason']})")
        lines.append("  points: " + ", ".join(f"seat {k}: {v}" for k, v in sorted(s["points"].items())))
        lines.append(
            "  tokens: "
            + ", ".join(f"seat {k}: {v:+d}" for k, v in sorted(s["deltas"].items()))
            + f", house commission: +{s['commission']} (pot {s['pot']})"
        )
    if "evidence" in s:
        f = report.failure
        ran = "evidence" in report.checks_passed + report.checks_skipped or (f is not None and f.check == "evidence")
        why = f" (not applied: check '{f.check}' failed first)" if f is not None and not ran else ""
        lines.append(f"  evidence: {evidence_line(s['evidence'])}{why}")
    if "key_fingerprint" in s:
        pin = "pinned" if s["key_pinned"] else "UNPINNED - compare it with the server's published key"
        lines.append(f"  server key fingerprint: {fingerprint_text(s['key_fingerprint'])} ({pin})")
    return "\n".join(lines)


def evidence_line(e: dict[str, int]) -> str:
    """§15's counts, shown whatever the verdict: ``N of M items checked``."""
    return (
        f"{e['checked']} of {e['items']} items checked"
        + f", {e['other_hands']} for other hands"
        + (f", {e['after_void']} for records the void came before" if e["after_void"] else "")
    )


def _is_internal(report: Report) -> bool:
    return report.failure is not None and report.failure.message.startswith(INTERNAL)


def _fingerprint_pinned(report: Report, pinned: bytes | None) -> bool:
    return (
        pinned is not None
        and report.failure is not None
        and report.failure.check == "signature"
        and pinned.hex() == report.summary.get("key_fingerprint")
    )


def cmd_verify(args: argparse.Namespace) -> int:
    pinned = load_key(args.key) if args.key else None
    if args.jobs < 1:
        raise UsageError("--jobs takes a number of processes, 1 or more")
    target = args.transcript
    evidence = read_evidence(args.receipts) if args.receipts else None
    if target != "-" and not target.startswith(("http://", "https://")) and Path(target).is_dir():
        return _verify_dir(Path(target), pinned, evidence, args)
    try:
        transcript = read_target(target)
    except InputError as e:
        if args.json:
            failure = {"check": "read", "message": str(e), "record": None, "expected": None, "found": None}
            print(json.dumps({"transcript": target, "ok": False, "failure": failure}, sort_keys=True))
        raise
    report = verify_transcript(transcript, pinned, evidence, allow_v1=args.allow_v1, parsed=True, debug=args.debug)
    if _fingerprint_pinned(report, pinned):
        raise UsageError(
            "--key: that is the fingerprint of this transcript's key, not the key itself (a fingerprint is not a "
            f"key); {KEY_HELP}"
        )
    if args.json:
        print(json.dumps({"transcript": target, **report.to_json()}, sort_keys=True, ensure_ascii=False))
    else:
        print(render(report, target))
    if _is_internal(report):
        return EXIT_INTERNAL
    return EXIT_OK if report.ok else EXIT_FAILED


def _progress(stream: IO[str]) -> Any:
    width = 30

    def show(n: int, total: int) -> None:
        if n == total or n % max(1, total // 200) == 0:
            done = n * width // total
            stream.write(f"\r[{'#' * done}{'.' * (width - done)}] {n}/{total}")
            if n == total:
                stream.write("\n")
            stream.flush()

    return show


def _verify_dir(folder: Path, pinned: bytes | None, evidence: Any, args: argparse.Namespace) -> int:
    outcome: BatchOutcome = verify_folder(
        folder,
        pinned,
        evidence,
        processes=args.jobs,
        keep_reports=args.json,
        debug=args.debug,
        progress=_progress(sys.stderr) if sys.stderr.isatty() else None,
        allow_v1=args.allow_v1,
    )
    failed = outcome.failed_files
    counts = outcome.evidence_counts()
    if args.json:
        results = []
        for r in outcome.results:
            entry = {"transcript": r.path, **(r.report or {})}
            marks = [f.to_json() for f in outcome.findings if r.path in f.files]
            if marks and entry.get("ok", False):
                entry["ok"] = False
                entry["failure"] = {"check": marks[0]["check"], "message": marks[0]["message"], "record": None}
            results.append(entry)
        print(
            json.dumps(
                {
                    "passed": outcome.passed,
                    "failed": len(failed),
                    "results": results,
                    "tables": [f.to_json() for f in outcome.findings],
                    **({} if counts is None else {"evidence": counts}),
                },
                sort_keys=True,
                ensure_ascii=False,
            )
        )
    else:
        for r in outcome.results:
            if r.failure is not None:
                f = r.failure
                if f["check"] == "read":
                    print(f"UNREADABLE {r.path}: {f['message']}")
                else:
                    where = "" if f.get("record") is None else f" at log record {f['record']}"
                    print(f"FAIL {r.path}: check '{f['check']}' failed{where}: {f['message']}")
        for finding in outcome.findings:
            where = ", ".join(finding.files) or str(folder)
            print(f"FAIL {where}: check '{finding.check}' failed: {finding.message}")
        warned: dict[str, int] = {}
        for r in outcome.results:
            for code in r.warnings:
                warned[code] = warned.get(code, 0) + 1
        if warned:
            print("warnings: " + ", ".join(f"{n} {code}" for code, n in sorted(warned.items())))
        if counts is not None:
            print(
                f"evidence: {counts['checked']} of {counts['items']} items checked, in {counts['transcripts']} "
                "transcripts"
                + (f", {counts['after_void']} for records a void came before" if counts["after_void"] else "")
            )
        print(f"{outcome.passed} passed, {len(failed)} failed")
    if any(r.internal for r in outcome.results):
        return EXIT_INTERNAL
    return EXIT_OK if outcome.ok else EXIT_FAILED


# --------------------------------------------------------------------------- parsers
def build_verify_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="rummy-verify",
        description=f"Verify {PROTOCOL_V2} (and, with --allow-v1, {PROTOCOL_V1}) hand transcripts; 'rummy-verify "
        f"score …' counts a hand. Checks, in order: {', '.join(CHECKS)}. A directory: every *.json under it, then "
        "across each table's hands: chain (each hand starts from the previous hand's head, hand 1 from 64 zeros), "
        "gap (no hand number missing), fork (one transcript per hand), downgrade (no v1 hand at or after a v2 "
        "hand), rules (one rule set per table), dealer (the button moves to the next seat each hand). Exit codes: "
        "0 passed, 1 a check failed, 2 unreadable input, "
        "3 wrong usage, 70 a fault of the verifier, 130 interrupted, 141 output closed.",
    )
    ap.add_argument("transcript", help="a transcript file, - for standard input, an http(s) URL, or a directory")
    ap.add_argument("--key", help=f"pin the server's public key: 64 hex digits, base64, or a PEM file; {KEY_HELP}")
    ap.add_argument(
        "--receipts",
        metavar="FILE",
        help="an evidence file (acks, heads, the header, the player item: docs/fairness.md §15)",
    )
    ap.add_argument(
        "--allow-v1",
        action="store_true",
        help=f"accept {PROTOCOL_V1} transcripts (refused otherwise): they carry no player signatures, so the server "
        "alone vouches for their moves (warning v1_server_only)",
    )
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--jobs", type=int, default=1, metavar="N", help="verify a directory with N processes")
    ap.add_argument("--debug", action="store_true", help="show tracebacks of faults of the verifier")
    ap.add_argument("--version", action="version", version=VERSION)
    ap.set_defaults(func=cmd_verify)
    return ap


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="rummy-verify", description="Score and verify 13-card rummy hands.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sp = sub.add_parser("score", help="best-arrangement points of 13 cards (RULES.md D13)")
    sp.add_argument("--wild", help="the wild indicator card, e.g. 7H, or JK for a printed joker")
    sp.add_argument("--json", action="store_true", help="JSON (the default when the output is not a terminal)")
    sp.add_argument("--debug", action="store_true", help="show tracebacks of faults of the verifier")
    sp.add_argument("cards", nargs="*", help="13 cards: AS 2S 3S … (TS or 10S for tens, JK for jokers)")
    sp.set_defaults(func=cmd_score)
    from verifier import audit

    ap_audit = sub.add_parser("audit", help="the room audit of a folder of transcripts (docs/audit.md)")
    audit.add_arguments(ap_audit)
    ap_audit.set_defaults(func=cmd_audit)
    return ap


def cmd_audit(args: argparse.Namespace) -> int:
    from verifier import audit

    progress = _progress(sys.stderr) if sys.stderr.isatty() else None
    return audit.run(args, load_key(args.key) if args.key else None, progress)


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "verify":
        argv = argv[1:]
    ap = build_parser() if argv[:1] in (["score"], ["audit"]) else build_verify_parser()
    debug = "--debug" in argv
    try:
        args = ap.parse_args(argv)
        code: int = args.func(args)
        sys.stdout.flush()
        return code
    except UsageError as e:
        print(f"rummy-verify: {e}", file=sys.stderr)
        return EXIT_USAGE
    except InputError as e:
        print(f"rummy-verify: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as e:
        if debug:
            raise
        print(
            f"rummy-verify: internal error ({type(e).__name__}: {str(e)[:200]}); run again with --debug for the "
            "traceback, and please report it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        # The reader went away (``rummy-verify … | head``): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PIPE
    except KeyboardInterrupt:
        print("rummy-verify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
