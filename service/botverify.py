"""``rummy-table bots --verify``: each hand the bots play, verified as it ends, with
each bot's own evidence, under a pinned server key (docs/fairness.md §14, §15).

A player's client that keeps evidence and never checks it catches nothing.  With
``--verify`` the bots are the players an operator or an auditor can leave at a room's
tables: every hand they were dealt into is fetched once its result arrives and run
through the verifier (:func:`verifier.transcript.replayed`) with each bot's evidence
for that hand — the acks, heads and receipts it kept, the header it accepted, its own
key — so a published transcript that is not the game the bots were shown fails at
once, named by check.  Then the view each bot was shown at each record is held
against ``seat_view`` of the replayed state there (check ``shown``): views are not
signed, so a difference proves nothing to others, but it tells the player that the
house showed it a game it did not publish (docs/fairness.md §16).  So are the events
each update told the bot, against the published record's events as its seat may see
them (``Event.for_seat``; check ``shown`` too).  What the bots saw
on receipt (acks that did not echo a move, items that did not verify, forks:
:mod:`verifier.echo`, :mod:`verifier.forks`) is reported at the end.  The key is
pinned once: ``--server-key``, or the server's own at the start (trust on first use,
as the table page does), printed as its fingerprint.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from service.httpclient import Refused, Rest, Unreachable
from verifier.fairness import canonical
from verifier.hand import Event, HandState, seat_view
from verifier.signing import fingerprint, fingerprint_text, load_public_key
from verifier.transcript import replayed


@dataclass(frozen=True)
class Verdict:
    """One bot's verdict on one hand."""

    hand_no: int
    bot: str  # "bot-N"
    ok: bool
    check: str | None  # the check that failed
    message: str
    evidence_checked: int  # evidence items checked for this hand (§15)
    views_compared: int = 0  # records whose view the bot was shown, held against the published hand
    events_compared: int = 0  # records whose events an update told the bot, held against the published ones

    def line(self) -> str:
        if self.ok:
            return (
                f"hand {self.hand_no}: verified for {self.bot} ({self.evidence_checked} evidence items checked, "
                f"{self.views_compared} views as shown and {self.events_compared} records' events as told compared)"
            )
        return f"hand {self.hand_no}: FAILED for {self.bot}: {self.check}: {self.message}"


async def served_key(session: aiohttp.ClientSession, server: str, timeout: float) -> bytes:
    """The key the server publishes now (pinned when no ``--server-key`` is given)."""
    got = await Rest(session, server, timeout).call("GET", "/api/fairness/key")
    return load_public_key(str(got["public_key_hex"]))


def key_line(key: bytes) -> str:
    return f"verifying each hand under the server key with fingerprint {fingerprint_text(fingerprint(key))}"


class HandChecker:
    """Verifies each ended hand once, for every bot that was dealt into it."""

    def __init__(self, session: aiohttp.ClientSession, server: str, table_id: str, key: bytes, timeout: float) -> None:
        self.rest = Rest(session, server, timeout)
        self.table_id = table_id
        self.key = key
        self.verdicts: list[Verdict] = []

    async def check(self, result: dict[str, Any], bots: list[tuple[str, Any]]) -> list[Verdict]:
        """The verdicts on the hand of ``result`` (a result frame) for each bot in
        ``bots`` (label, :class:`service.bots.Bot`) that kept evidence of it; none for
        a hand voided before its header (it has no transcript) or that no bot played."""
        hand_no = result.get("hand_no")
        if not isinstance(hand_no, int):
            return []
        with_items = [(label, b, b.evidence_of(self.table_id, hand_no)) for label, b in bots]
        players = [(label, b, items) for label, b, items in with_items if items]
        if not players:
            return []
        path = result.get("transcript") or f"/api/hands/{quote(str(result.get('hand_id')), safe='')}/transcript"
        try:
            transcript = await self.rest.call("GET", str(path))
        except Refused as e:
            if e.status == 410:  # voided before its header: no transcript, nothing was dealt
                return []
            return self._unfetched(hand_no, players, str(e))
        except (Unreachable, aiohttp.ClientError, TimeoutError, OSError) as e:
            return self._unfetched(hand_no, players, str(e) or type(e).__name__)
        found = []
        for label, bot, items in players:
            report, after = await asyncio.to_thread(replayed, transcript, self.key, items)
            checked = int((report.summary.get("evidence") or {}).get("checked", 0))
            if not report.ok:
                f = report.failure
                check, message = (f.check, f.message) if f else ("?", "failed")
                found.append(Verdict(hand_no, label, False, check, message, checked))
                continue
            seat = next(
                (e["seat"] for e in transcript["log"][0]["header"]["seats"] if e["player_id"] == bot.player_id), None
            )
            wrong, compared = shown_differs(bot.shown.get(hand_no, {}), after, seat)
            heard = 0
            if not wrong:
                wrong, heard = heard_differs(bot.heard.get(hand_no, {}), transcript["log"], seat)
            if wrong:
                found.append(Verdict(hand_no, label, False, "shown", wrong, checked, compared))
            else:
                found.append(Verdict(hand_no, label, True, None, "every check passed", checked, compared, heard))
        self.verdicts += found
        return found

    def _unfetched(self, hand_no: int, players: list[tuple[str, Any, Any]], why: str) -> list[Verdict]:
        """A published hand that cannot be read is reported as failed, never skipped."""
        message = f"the transcript could not be fetched: {why}"
        found = [Verdict(hand_no, label, False, "fetch", message, 0) for label, _, _ in players]
        self.verdicts += found
        return found


def shown_differs(shown: dict[int, dict[str, Any]], after: dict[int, HandState], seat: int | None) -> tuple[str, int]:
    """Whether a view the bot was shown at a record is not the one the published hand
    gives its seat there (``seat_view`` of the replayed state): the first such record
    described (empty if none), and how many views were compared.  Views are not signed
    (only each record's head is), so this proves nothing to anyone else; it tells the
    player that the house showed it a game it did not publish."""
    compared = 0
    for i in sorted(shown):
        state = after.get(i)
        if state is None or seat is None:
            continue
        compared += 1
        expected = seat_view(state, seat)
        if not _same(shown[i], expected):
            keys = _differing(shown[i], expected)
            return (
                f"record {i}: the view this bot was shown is not the published hand's (differs in {', '.join(keys)})",
                compared,
            )
    return "", compared


def heard_differs(heard: dict[int, Any], log: list[dict[str, Any]], seat: int | None) -> tuple[str, int]:
    """Whether the events an update told the bot at a record are not the published
    record's events as its seat may see them (each event's public data, and its private
    part only when it is the seat's own: ``Event.for_seat``): the first such record
    described (empty if none), and how many records' events were compared.  Like views,
    events are not signed: this tells the player, it proves nothing to others."""
    compared = 0
    for i in sorted(heard):
        if seat is None or not 0 <= i < len(log) or "events" not in log[i]:
            continue
        compared += 1
        expected = [Event.from_json(e).for_seat(seat) for e in log[i]["events"]]
        if not _same(heard[i], expected):
            why = _first_difference(heard[i], expected)
            return f"record {i}: the events this bot was told are not the published record's ({why})", compared
    return "", compared


def _same(told: Any, published: Any) -> bool:
    """Canonically equal; what the server sent may hold what canonical JSON has not
    (a float): then it is not the published value."""
    try:
        return canonical(told) == canonical(published)
    except ValueError:
        return False


def _differing(told: dict[str, Any], published: dict[str, Any]) -> list[str]:
    """The fields in which what was told is not the published value, sorted."""
    return sorted(k for k in told.keys() | published.keys() if not _same(told.get(k), published.get(k)))


def _first_difference(told: Any, published: list[dict[str, Any]]) -> str:
    """Where two lists of events first differ, in words."""
    if not isinstance(told, list):
        return "what was told is not a list of events"
    gone: Any = object()
    for j, (a, b) in enumerate(itertools.zip_longest(told, published, fillvalue=gone), start=1):
        if a is gone or b is gone:
            return f"told {len(told)} events, published {len(published)}"
        if not _same(a, b):
            if not isinstance(a, dict):
                return f"event {j} told is not an object"
            return f"event {j}, {b['kind']}: differs in {', '.join(_differing(a, b))}"
    return "the same events, differently encoded"


def receipt_lines(bots: list[tuple[str, Any]]) -> list[str]:
    """What each bot saw on receipt (§15, "On receipt"): disputes, items set aside, forks."""
    lines = []
    for label, b in bots:
        lines.append(
            f"{label}: {len(b.disputes)} acks that did not echo its move, "
            f"{len(b.rejected)} server items that did not verify, {len(b.forks)} forks"
        )
        lines += [f"{label}: fork: {f}" for f in b.forks]
    return lines
