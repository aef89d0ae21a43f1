"""``rummy-table bots --verify`` (service/botverify.py): each hand the bots play is
verified as it ends with each bot's own evidence under a pinned key; a hand that is
not the game the bots were shown fails, named, and the command exits 1."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from service.bots import Bot
from service.botverify import heard_differs
from service.startup import Running
from service.telling import Teller
from tests.test_cli_errors import OPERATOR, arummy, clean_env, new_table, one_line
from tests.test_forks import forking_house
from verifier.chain import head_body
from verifier.record import PROTOCOL
from verifier.signing import Signer

DEAL = 3  # the deal's record (docs/fairness.md §10)


def bots_args(server: Running, table: str, *more: str) -> list[str]:
    return ["bots", "--server", server.url, "--table", table, "--count", "2", "--fast", "--hands", "1", *more]


async def test_honest_hands_are_verified_with_each_bots_evidence(server: Running, tmp_path: Path) -> None:
    table = await new_table(server, seats=4)
    r = await arummy(
        *bots_args(server, table, "--verify"), cwd=tmp_path, env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR), timeout=110
    )
    assert r.code == 0, (r.out, r.err)
    assert re.search(
        r"^verifying each hand under the server key with fingerprint ([0-9a-f]{4} ){15}[0-9a-f]{4}$", r.out, re.M
    )
    verified = re.findall(
        r"^hand (\d+): verified for bot-(\d) \((\d+) evidence items checked, (\d+) views as shown "
        r"and (\d+) records' events as told compared\)$",
        r.out,
        re.M,
    )
    assert {b for _, b, _, _, _ in verified} == {"1", "2"}, r.out
    # every view as shown, and every record's events as told, were the hand's
    assert all(int(n) > 4 and int(v) > 1 and int(e) > 1 for _, _, n, v, e in verified), verified
    assert "FAILED" not in r.out
    for b in ("1", "2"):
        assert f"bot-{b}: 0 acks that did not echo its move, 0 server items that did not verify, 0 forks" in r.out


async def test_a_forked_hand_fails_and_the_command_says_so(
    server: Running, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The house shows the table the deal's record twice, with two links: each bot holds
    both heads, the published transcript agrees with one, and the evidence check fails
    on the other; the bots also name the fork they saw on receipt.  (The deal, record
    DEAL: these bots may drop at their first turn, and every hand has a record after
    the deal.)"""
    forged = forking_house(monkeypatch, DEAL)
    table = await new_table(server, seats=4)
    r = await arummy(
        *bots_args(server, table, "--verify"), cwd=tmp_path, env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR), timeout=110
    )
    assert forged, r.out
    assert r.code == 1, (r.out, r.err)
    failed = re.findall(r"^hand \d+: FAILED for bot-(\d): evidence: (.+)$", r.out, re.M)
    assert {b for b, _ in failed} == {"1", "2"}, r.out
    for b in ("1", "2"):
        assert f"bot-{b}: 0 acks that did not echo its move, 0 server items that did not verify, 1 forks" in r.out
        assert re.search(rf"^bot-{b}: fork: table {table}, hand \d+: record {DEAL} is ", r.out, re.M), r.out
    # the bots' own log says it too, as it happens; the command's last line sums up
    assert sum(f"a fork: table {table}" in line for line in r.err.splitlines()) == 2, r.err
    assert r.err.strip().splitlines()[-1] == "rummy-table: 2 of 2 hand verdicts failed (above)", r.err


async def test_hands_checked_under_another_pinned_key_fail(server: Running, tmp_path: Path) -> None:
    """A key pinned with --server-key that is not the one the hands are signed with: no
    hand verifies (what pinning is for — a room that swapped its key is caught)."""
    table = await new_table(server, seats=4)
    other = Signer.generate().public_bytes.hex()
    r = await arummy(
        *bots_args(server, table, "--verify", "--server-key", other),
        cwd=tmp_path,
        env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR),
        timeout=110,
    )
    assert r.code == 1, (r.out, r.err)
    assert re.search(r"^hand \d+: FAILED for bot-1: ", r.out, re.M), r.out
    assert "verified for" not in r.out


async def test_server_key_usage_errors(server: Running, tmp_path: Path) -> None:
    table = await new_table(server, seats=4)
    env = clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR)
    r = await arummy(*bots_args(server, table, "--server-key", "ab" * 32), cwd=tmp_path, env=env)
    one_line(r, 2, "--server-key", "--verify")
    r = await arummy(*bots_args(server, table, "--verify", "--server-key", "not-a-key"), cwd=tmp_path, env=env)
    one_line(r, 2, "--server-key", "not a public key")


async def failures_when_the_house_alters(
    server: Running, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, alter: Callable[[dict[str, Any]], None]
) -> list[tuple[str, str]]:
    """Two bots play a hand with ``--verify`` while the house alters, with ``alter``,
    every update it tells of record ``at`` (each seat's, the mover's too) and publishes
    the true hand; the command fails, and this returns (bot, why) for each failure at
    that record."""
    update = Teller._update

    def altered(base: dict[str, Any], u: Any, seat: Any, change: Any, deadline: Any) -> dict[str, Any]:
        out = update(base, u, seat, change, deadline)
        if out["i"] == at:
            alter(out)
        return out

    monkeypatch.setattr(Teller, "_update", staticmethod(altered))
    table = await new_table(server, seats=4)
    r = await arummy(
        *bots_args(server, table, "--verify"), cwd=tmp_path, env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR), timeout=110
    )
    assert r.code == 1, (r.out, r.err)
    failed = re.findall(rf"^hand \d+: FAILED for bot-(\d): shown: record {at}: (.+)$", r.out, re.M)
    assert {b for b, _ in failed} == {"1", "2"}, r.out  # the mover (its reply's update) and the other seat
    return failed


async def test_a_view_the_published_hand_does_not_give_fails(
    server: Running, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The house deals each seat a view with one closed card too many (the signed head
    is the true one, so the evidence passes): the bots hold what they were shown
    against the published hand and say which record and what differs.  Views are not
    signed, so this proves nothing to a third party; it tells the player."""

    def one_more_closed(out: dict[str, Any]) -> None:
        out["view"] = {**out["view"], "closed_count": out["view"]["closed_count"] + 1}

    failed = await failures_when_the_house_alters(server, tmp_path, monkeypatch, DEAL, one_more_closed)
    assert all("differs in closed_count" in why for _, why in failed), failed


async def test_events_the_published_hand_does_not_hold_fail(
    server: Running, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The house tells every seat that the first move was the clock's (``by_clock``), a
    word no view carries, while it publishes the true record: the views as shown all
    agree, and the events as told name the record, the event and the field."""

    def by_the_clock(out: dict[str, Any]) -> None:
        first = out["events"][0]  # a draw, or a first drop (then the hand ends there)
        out["events"] = [{**first, "by_clock": True}, *out["events"][1:]]

    failed = await failures_when_the_house_alters(server, tmp_path, monkeypatch, DEAL + 1, by_the_clock)
    assert all("events this bot was told" in why and ": differs in by_clock" in why for _, why in failed), failed


def test_events_told_are_held_against_the_published_record_as_the_seat_may_see_it() -> None:
    """heard_differs: each event's public data, and its private part for its own seat
    only; another seat's hidden card told, an event missing, a float: each differs."""
    draw = {"kind": "draw", "seat": 1, "data": {"source": "closed", "by_clock": False}, "private": {"card": 7}}
    turn = {"kind": "turn", "seat": 2, "data": {"turn_no": 2, "phase": "draw"}, "private": {}}
    log: list[dict[str, Any]] = [{"i": 0}, {"i": 1}, {"i": 2}, {"i": 3, "events": []}, {"i": 4, "events": [draw, turn]}]
    mine = [
        {"kind": "draw", "seat": 1, "source": "closed", "by_clock": False, "card": 7},
        {"kind": "turn", "seat": 2, "turn_no": 2, "phase": "draw"},
    ]
    theirs = [{**mine[0]}, mine[1]]
    del theirs[0]["card"]
    assert heard_differs({4: mine}, log, 1) == ("", 1)
    assert heard_differs({3: [], 4: theirs}, log, 2) == ("", 2)
    assert heard_differs({4: theirs}, log, None) == ("", 0)  # a seat not dealt in compares nothing
    leaked, n = heard_differs({4: mine}, log, 2)  # seat 2 told seat 1's drawn card
    assert n == 1 and "record 4" in leaked and "event 1, draw: differs in card" in leaked, leaked
    short, _ = heard_differs({4: mine[:1]}, log, 1)
    assert "told 1 events, published 2" in short, short
    floated, _ = heard_differs({4: [{**mine[0], "card": 7.0}, mine[1]]}, log, 1)
    assert "event 1, draw: differs in card" in floated, floated  # 7.0 == 7 in Python, not on the wire
    assert heard_differs({9: mine}, log, 1) == ("", 0)  # a record the log does not reach
    nulled, _ = heard_differs({4: [None, mine[1]]}, log, 1)  # an event told as null
    assert "event 1 told is not an object" in nulled, nulled
    missing, _ = heard_differs({4: None}, log, 1)  # an update that came without its events
    assert "what was told is not a list of events" in missing, missing


def test_a_bot_with_keep_hands_holds_the_newest_hands_only() -> None:
    """Bots left at a table for days (``bots`` without ``--evidence``) keep the items of
    their newest KEEP hands: older hands' items, links and keys go; a fork is still seen
    within a kept hand."""
    house = Signer.generate()
    bot = Bot("http://127.0.0.1:1", "token", "T", keep_hands=2)

    def head(hand_no: int, i: int, h: str) -> dict[str, Any]:
        body = head_body("T", hand_no, i, h)
        return {"purpose": "head", "body": body, "sig": house.sign("head", body, PROTOCOL)}

    for hand_no in range(1, 6):
        bot._keys[("T", hand_no)] = house.public_bytes
        for i in range(3, 8):
            assert bot._keep(head(hand_no, i, f"{hand_no:02x}{i:02x}" * 16))
    assert sorted({e["body"]["hand_no"] for e in bot.evidence}) == [4, 5]
    assert len(bot.evidence) == 10 and len(bot.evidence_of("T", 5)) == 5 and bot.evidence_of("T", 1) == []
    assert {k[1] for k in bot._links} == {4, 5} and set(bot._keys) == {("T", 4), ("T", 5)}
    assert bot._keep(head(5, 6, "ff" * 32)) and [f.i for f in bot.forks] == [6]
    unbounded = Bot("http://127.0.0.1:1", "token", "T")  # keep_hands None: every hand (--evidence)
    for hand_no in range(1, 6):
        unbounded._keep(head(hand_no, 3, "aa" * 32))
    assert len(unbounded.evidence) == 5
