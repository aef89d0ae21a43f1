"""``rummy-verify``: score hands, and (rummy-pf/v1) verify hand transcripts.

    rummy-verify score --wild 7H AS 2S 3S …      one hand of 13 cards
    rummy-verify score < hands.jsonl              {"wild": "7H", "hand": [...]} per line

Exit codes: 0 success, 1 a check failed, 2 unreadable or invalid input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from verifier.arrange import best_arrangement
from verifier.cards import Card, wild_rank_of
from verifier.errors import RuleError

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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rummy-verify", description="Score and verify 13-card rummy hands (rummy-pf/v1).")
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("score", help="best-arrangement points of 13 cards (RULES.md D13)")
    sp.add_argument("--wild", help="the wild indicator card, e.g. 7H, or JK for a printed joker")
    sp.add_argument("cards", nargs="*", help="13 cards: AS 2S 3S … (TS or 10S for tens, JK for jokers)")
    sp.set_defaults(func=cmd_score)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except InputError as e:
        print(f"rummy-verify: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
