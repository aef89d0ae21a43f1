"""``rummy-verify``: verify hand transcripts (rummy-pf/v1) and score hands.

    rummy-verify TRANSCRIPT [--key KEY] [--json]  a file, - for stdin, an http(s) URL, or a directory
    rummy-verify score --wild 7H AS 2S 3S …      one hand of 13 cards
    rummy-verify score < hands.jsonl              {"wild": "7H", "hand": [...]} per line

Exit codes: 0 success, 1 a check failed, 2 unreadable or invalid input.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from verifier.arrange import best_arrangement
from verifier.cards import Card, wild_rank_of
from verifier.errors import RuleError
from verifier.signing import load_public_key
from verifier.transcript import CHECKS, Report, verify_transcript

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """Input that cannot be read: exit 2 with the message."""


def score_hand(wild: str, hand: Sequence[str]) -> dict[str, Any]:
    """The ``score`` answer for one hand: points, valid declare, the spared groups
    and exactly the loose cards that count (their values sum to the points)."""
    try:
        indicator = Card.parse(wild)
    except RuleError as e:
        raise InputError(f"bad wild card {wild!r}: {e.message}") from None
    cards = []
    for i, text in enumerate(hand):
        if not isinstance(text, str):
            raise InputError(f"card {i + 1} is not a string: {text!r}")
        try:
            cards.append(Card.parse(text))
        except RuleError:
            raise InputError(f"card {i + 1} is not a card: {text!r}") from None
    if len(cards) != 13:
        raise InputError(f"a hand has 13 cards, got {len(cards)}: {' '.join(map(str, hand))}")
    arr = best_arrangement(cards, wild_rank_of(indicator))
    groups, loose = arr.faces(cards)
    return {"points": arr.points, "valid_declare": arr.valid_declare, "groups": groups, "loose": loose}


def _score_stream(inp: TextIO, out: TextIO) -> int:
    for lineno, line in enumerate(inp, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"line {lineno}: not JSON ({e.msg})") from None
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
        out.write(json.dumps(answer) + "\n")
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    if args.cards:
        if args.wild is None:
            raise InputError("--wild is required with cards on the command line")
        print(json.dumps(score_hand(args.wild, args.cards)))
        return EXIT_OK
    return _score_stream(sys.stdin, sys.stdout)


MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


def read_target(target: str) -> Any:
    """The JSON at a path, ``-`` (standard input) or an http(s) URL.  A test-vector
    file ({"_about": …, "transcript": {…}}) yields its transcript."""
    try:
        if target == "-":
            text = sys.stdin.read()
        elif target.startswith(("http://", "https://")):
            with urllib.request.urlopen(target, timeout=30) as resp:  # noqa: S310 - the scheme is checked above
                text = resp.read(MAX_TRANSCRIPT_BYTES + 1).decode("utf-8")
        else:
            text = Path(target).read_text(encoding="utf-8")
    except (OSError, urllib.error.URLError, UnicodeDecodeError, ValueError) as e:
        raise InputError(f"cannot read {target}: {e}") from None
    if len(text) > MAX_TRANSCRIPT_BYTES:
        raise InputError(f"{target} is larger than {MAX_TRANSCRIPT_BYTES} bytes")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{target} is not JSON: {e.msg} at line {e.lineno}") from None
    if isinstance(data, dict) and "_about" in data and isinstance(data.get("transcript"), dict):
        data = data["transcript"]
    if not isinstance(data, dict) or "protocol" not in data:
        raise InputError(f"{target} is not a rummy-pf transcript")
    return data


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True)
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
    if "table_id" in s:
        lines.append(f"  table {s['table_id']}, hand {s['hand_no']}")
        lines.append("  seats: " + ", ".join(f"{seat}={pid}" for seat, pid in sorted(s["seats"].items())))
    if s.get("void"):
        lines.append("  void hand (D29): nothing was dealt, nobody was charged")
    if "winner" in s:
        lines.append(f"  winner: seat {s['winner']} ({s['reason']})")
        lines.append("  points: " + ", ".join(f"seat {k}: {v}" for k, v in sorted(s["points"].items())))
        lines.append(
            "  tokens: "
            + ", ".join(f"seat {k}: {v:+d}" for k, v in sorted(s["deltas"].items()))
            + f", house commission: +{s['commission']} (pot {s['pot']})"
        )
    if "key_fingerprint" in s:
        pin = "pinned" if s["key_pinned"] else "UNPINNED - compare it with the server's published key"
        lines.append(f"  server key fingerprint: {s['key_fingerprint']} ({pin})")
    return "\n".join(lines)


def cmd_verify(args: argparse.Namespace) -> int:
    pinned = None
    if args.key:
        try:
            pinned = load_public_key(args.key)
        except ValueError as e:
            raise InputError(f"--key: {e}") from None
    target = args.transcript
    if target not in ("-",) and not target.startswith(("http://", "https://")) and Path(target).is_dir():
        return _verify_dir(Path(target), pinned, args.json)
    report = verify_transcript(read_target(target), pinned)
    if args.json:
        print(json.dumps({"transcript": target, **report.to_json()}, sort_keys=True))
    else:
        print(render(report, target))
    return EXIT_OK if report.ok else EXIT_FAILED


def _verify_dir(folder: Path, pinned: bytes | None, as_json: bool) -> int:
    files = sorted(p for p in folder.rglob("*.json") if p.is_file())
    if not files:
        raise InputError(f"no .json files in {folder}")
    failures: list[tuple[str, str]] = []
    results = []
    passed = 0
    heads: dict[tuple[str, int], tuple[str, str, str]] = {}  # (table, hand) -> (prev_head, head, file)
    for n, path in enumerate(files, 1):
        try:
            data = read_target(str(path))
            report = verify_transcript(data, pinned)
            ok, detail = report.ok, "" if report.ok else render(report, str(path)).splitlines()[0]
            results.append({"transcript": str(path), **report.to_json()})
            if report.ok:
                header = data["log"][0]["header"]
                heads[(str(header["table_id"]), int(header["hand_no"]))] = (
                    header["prev_head"],
                    data["head"],
                    str(path),
                )
        except InputError as e:
            ok, detail = False, f"UNREADABLE {path}: {e}"
            results.append({"transcript": str(path), "ok": False, "failure": {"check": "read", "message": str(e)}})
        passed += ok
        if not ok:
            failures.append((str(path), detail))
        width = 30
        done = n * width // len(files)
        sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {n}/{len(files)}")
        sys.stderr.flush()
    sys.stderr.write("\n")
    # A table's history is one chain: each hand starts from the previous hand's head.
    for (table, hand), (prev, _, fname) in sorted(heads.items()):
        before = heads.get((table, hand - 1))
        if before is not None and before[1] != prev:
            passed -= 1
            detail = (
                f"FAIL {fname}: check 'chain' failed: hand {hand} of table {table} does not start from "
                f"hand {hand - 1}'s head ({before[2]})"
            )
            failures.append((fname, detail))
            results.append({"transcript": fname, "ok": False, "failure": {"check": "chain", "message": detail}})
    if as_json:
        print(json.dumps({"passed": passed, "failed": len(failures), "results": results}, sort_keys=True))
    else:
        for _, detail in failures:
            print(detail)
        print(f"{passed} passed, {len(failures)} failed")
    return EXIT_OK if not failures else EXIT_FAILED


def build_verify_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="rummy-verify",
        description="Verify rummy-pf/v1 hand transcripts; 'rummy-verify score …' counts a hand. "
        f"Checks, in order: {', '.join(CHECKS)}.",
    )
    ap.add_argument("transcript", help="a transcript file, - for standard input, an http(s) URL, or a directory")
    ap.add_argument("--key", help="pin the server's public key: 64 hex digits, base64, or a PEM file")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.set_defaults(func=cmd_verify)
    return ap


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rummy-verify", description="Score and verify 13-card rummy hands (rummy-pf/v1).")
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("score", help="best-arrangement points of 13 cards (RULES.md D13)")
    sp.add_argument("--wild", help="the wild indicator card, e.g. 7H, or JK for a printed joker")
    sp.add_argument("cards", nargs="*", help="13 cards: AS 2S 3S … (TS or 10S for tens, JK for jokers)")
    sp.set_defaults(func=cmd_score)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "verify":
        argv = argv[1:]
    ap = build_parser() if argv[:1] == ["score"] else build_verify_parser()
    args = ap.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except InputError as e:
        print(f"rummy-verify: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
