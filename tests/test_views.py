"""A slim push's changes turn a seat's view before a record into its view after it
(service/views.py): on every record of many played hands, for every seat and for a
spectator, and without showing a seat anything its view would not."""

from __future__ import annotations

import json

import pytest

from service import views
from tests.playout import play
from verifier.hand import TableRules, seat_view


def _round_trip(view: dict) -> dict:
    return json.loads(json.dumps(view))


@pytest.mark.parametrize("seats,players,seed", [(4, 2, 1), (4, 4, 2), (6, 6, 3), (6, 3, 4), (8, 8, 5), (8, 5, 6)])
def test_changes_rebuild_every_view(seats: int, players: int, seed: int) -> None:
    for k in range(6):  # several hands per table size: reshuffles, drops, leaves, wrong declares, ends
        out = play(TableRules(seats=seats), players, seed * 100 + k, turns_cap=120, exits=0.5)
        viewers = [None, *range(seats)]
        held = {v: _round_trip(seat_view(out.states[0], v)) for v in viewers}
        for before, after in zip(out.states, out.states[1:], strict=False):
            change = views.Change(before, after)
            for v in viewers:
                changes = _round_trip(change.for_seat(v))
                held[v] = views.apply(held[v], changes)
                assert held[v] == _round_trip(seat_view(after, v)), (v, after.turn_no)


def test_changes_show_a_seat_no_other_seat_s_cards() -> None:
    """Only the seat whose own part changed gets ``me``; nobody's changes name a card
    of another seat's hand before the end."""
    out = play(TableRules(seats=6), 6, 11, turns_cap=60)
    for before, after in zip(out.states, out.states[1:], strict=False):
        change = views.Change(before, after)
        spectator = change.for_seat(None)
        assert "me" not in spectator
        for s in after.seats:
            mine = change.for_seat(s.seat)
            if after.phase.value != "ended":
                hidden = {c for o in after.seats if o.seat != s.seat for c in o.cards}
                text = json.dumps({k: v for k, v in mine.items() if k != "me"})
                assert "cards" not in text
                assert not hidden & set(mine.get("me", {}).get("cards", []))
            if "me" in mine:
                assert s.seat in change.moved


def test_a_move_changes_little() -> None:
    """The point of it: a discard's changes are a few fields, not the view."""
    out = play(TableRules(seats=6), 6, 7, turns_cap=60)
    sizes = []
    for before, after in zip(out.states, out.states[1:], strict=False):
        if after.phase.value == "ended":
            break
        change = views.Change(before, after)
        sizes.append(len(json.dumps(change.for_seat(None))) / len(json.dumps(seat_view(after, None))))
    assert max(sizes) < 0.35


async def test_a_bot_follows_the_changes_and_asks_again_after_a_gap() -> None:
    """service.bots: the deal's whole view, then each update's changes, give the seat's
    view of every record; an update that skips one is not applied (the view is dropped
    and a snapshot asked for)."""
    from service.bots import Bot

    out = play(TableRules(seats=4), 4, 21, turns_cap=40)
    bot = Bot("http://127.0.0.1:1", "token", "t1")
    first = out.states[0]
    got = bot._changed({"hand_no": 1, "i": 3, "view": _round_trip(seat_view(first, 2))})
    assert got == _round_trip(seat_view(first, 2))
    for n, (before, after) in enumerate(zip(out.states[:5], out.states[1:6], strict=True)):
        changes = _round_trip(views.Change(before, after).for_seat(2))
        got = bot._changed({"hand_no": 1, "i": 4 + n, "changes": changes})
        assert got == _round_trip(seat_view(after, 2))
    skipped = _round_trip(views.Change(out.states[6], out.states[7]).for_seat(2))
    assert bot._changed({"hand_no": 1, "i": 10, "changes": skipped}) is None
    assert bot._view is None and bot._asking is not None
    bot._asking.cancel()
