"""What changed in a seat's view between two states of a hand: the slim push.

A client gets a seat's whole view (:func:`verifier.hand.seat_view`) when it joins or
resumes, and the deal's update carries it whole too; every later update carries only
``changes``, which :func:`apply` turns the seat's view before the record into its view
after it — exactly ``seat_view(after, seat)`` (tests/test_views.py checks it on every
record of many played hands, for every seat and for a spectator).  docs/api.md,
"The view's changes", describes the format for clients:

- a top-level key of the view that changed (``phase``, ``turn``, ``turn_no``,
  ``closed_count``, ``reshuffles``, ``result``, …): its new value;
- ``open``: ``{"keep": n, "add": [ids], "faces": [faces]}`` — the open pile is its
  first ``n`` cards, then ``add`` (``open_faces`` likewise);
- ``seats``: ``{"<seat>": {field: value}}`` — the fields of those seats' entries that
  changed (at the end of the hand, the ``cards`` and ``faces`` of the hands still in);
- ``me``: the fields of the viewer's own part that changed (``cards`` with ``faces``,
  ``drawn_this_turn``, ``drawn_any``, ``status``), only for the seat whose part it is.

The public part is built once per record, the ``me`` part only for a seat whose own
entry changed (the mover's), so a push costs no view per seat.
"""

from __future__ import annotations

from typing import Any, Final

from verifier.cards import card_of_id, face_texts
from verifier.hand import HandState, Phase, Seat

#: top-level keys of the view that are plain values of the state (rules, dealer and the
#: wild card never change during a hand; compared all the same)
_SCALARS: Final = ("phase", "turn", "turn_no", "dealer", "wild_indicator", "reshuffles")


def _faces(cards: tuple[int, ...] | list[int], decks: int) -> list[str]:
    texts = face_texts(decks)  # the ids are a state's: every one is of the pack
    return [texts[c] for c in cards]


def _entry(s: Seat, ended: bool, decks: int) -> dict[str, Any]:
    """A seat's public entry, as :func:`verifier.hand.seat_view` makes it (less its
    constant seat number and player id)."""
    out: dict[str, Any] = {"status": s.status.value, "card_count": len(s.cards), "missed": s.missed, "points": s.points}
    if ended and s.cards:
        out["cards"] = list(s.cards)
        out["faces"] = _faces(s.cards, decks)
    return out


def _mine(s: Seat) -> dict[str, Any]:
    """A seat's own part, less the faces of its cards (added where the cards changed)."""
    return {
        "cards": list(s.cards),
        "drawn_this_turn": s.drawn_this_turn,
        "drawn_any": s.drawn_any,
        "status": s.status.value,
    }


def _changed(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in new.items() if old.get(k, _MISSING) != v}
    if "cards" in out or "faces" in out:  # a hand's cards go with their faces
        out["cards"], out["faces"] = new.get("cards"), new.get("faces")
    return out


_MISSING: Final = object()


class Change:
    """The changes from ``before`` to ``after``: the public part once, a seat's own
    part on demand."""

    def __init__(self, before: HandState, after: HandState) -> None:
        self.before, self.after = before, after
        decks = after.rules.decks
        self.decks = decks
        ch: dict[str, Any] = {}
        for key in _SCALARS:
            old, new = getattr(before, key), getattr(after, key)
            if old != new:
                ch[key] = new.value if isinstance(new, Phase) else new
        if before.wild_indicator != after.wild_indicator:
            ch["wild_face"] = str(card_of_id(after.wild_indicator, decks))
        if len(before.closed) != len(after.closed):
            ch["closed_count"] = len(after.closed)
        if before.rules != after.rules:
            ch["rules"] = after.rules.to_json()
        if before.result != after.result:
            ch["result"] = None if after.result is None else after.result.to_json()
        if before.open != after.open:
            keep = 0
            for a, b in zip(before.open, after.open, strict=False):
                if a != b:
                    break
                keep += 1
            add = list(after.open[keep:])
            ch["open"] = {"keep": keep, "add": add, "faces": _faces(add, decks)}
        was_ended, ended = before.phase is Phase.ENDED, after.phase is Phase.ENDED
        old_seats = {s.seat: s for s in before.seats}
        seats: dict[str, Any] = {}
        self.moved: set[int] = set()  # seats whose own entry changed
        for s in after.seats:
            o = old_seats.get(s.seat)
            if o is s and was_ended == ended:
                continue
            if o is not s:
                self.moved.add(s.seat)
            if o is None:
                continue  # a seat does not join a hand in play
            diff = _changed(_entry(o, was_ended, decks), _entry(s, ended, decks))
            if diff:
                seats[str(s.seat)] = diff
        if seats:
            ch["seats"] = seats
        self.public = ch
        self._own: dict[int, dict[str, Any]] = {}

    def for_seat(self, viewer: int | None) -> dict[str, Any]:
        """The changes ``viewer`` (a seat, or None for a spectator) may see."""
        if viewer is None or viewer not in self.moved:
            return self.public
        got = self._own.get(viewer)
        if got is None:
            old = next(s for s in self.before.seats if s.seat == viewer)
            new = next(s for s in self.after.seats if s.seat == viewer)
            mine = _changed(_mine(old), _mine(new))
            if "cards" in mine:
                mine["faces"] = _faces(mine["cards"], self.decks)
            got = self._own[viewer] = {**self.public, "me": mine} if mine else self.public
        return got

    def personal(self, viewer: int | None) -> bool:
        """Does ``viewer`` get changes of its own (not the shared public ones)?"""
        return self.for_seat(viewer) is not self.public


def apply(view: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The view after ``changes`` (a new dict; ``view`` is left as it was).  The
    clients' side of the format; the page's is service/web/table/state.js."""
    out = dict(view)
    for key, value in changes.items():
        if key == "open":
            keep = value["keep"]
            out["open"] = list(view["open"][:keep]) + list(value["add"])
            out["open_faces"] = list(view["open_faces"][:keep]) + list(value["faces"])
        elif key == "seats":
            out["seats"] = [{**s, **value[str(s["seat"])]} if str(s["seat"]) in value else s for s in view["seats"]]
        elif key == "me":
            out["me"] = {**view["me"], **value}
        else:
            out[key] = value
    return out
