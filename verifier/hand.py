"""One hand of 13-card rummy as a pure state machine (RULES.md D2–D20).

``state + action → new state + events``.  Nothing here reads a clock, does I/O or
draws randomness: the deck order comes in from the fairness derivation, reshuffles
come from an injected function, and clock expiries arrive as :class:`TimeOut`
actions from whoever keeps the clock.  The server and the verifier both run this
module, so what the server does is exactly what the verifier checks.

Each action has the trio ``verify(state, action)`` (raises a :class:`RuleError`
naming the rule), ``can(state, action)`` and ``apply(state, action, reshuffle)``.
What a seat may see is :func:`seat_view` of the state — never assembled by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, TypeVar

from verifier.arrange import best_arrangement
from verifier.cards import card_of_id, deck_size, decks_for_seats, face_texts, wild_rank_of
from verifier.errors import PhaseError, RuleError
from verifier.settle import Settlement, settle

HAND_SIZE: Final = 13
FIRST_DROP: Final = 20  # D15
MIDDLE_DROP: Final = 40  # D15
LEAVE_POINTS: Final = 40  # D15
WRONG_DECLARE: Final = 80  # D12

#: ``reshuffle(k, cards)``: the k-th reshuffle (1, 2, …) of ``cards`` (sorted by id)
#: into a new closed pile, top card first (D17; FAIRNESS.md "reshuffle/k").
Reshuffle = Callable[[int, list[int]], list[int]]


# --------------------------------------------------------------------------- rules
@dataclass(frozen=True, slots=True)
class TableRules:
    """A table's settings.  Validated on construction: bad config is an error, never
    silently repaired."""

    seats: int = 6
    point_value: int = 1
    commission_bps: int = 0
    turn_seconds: int = 30
    max_missed_turns: int = 3
    min_players: int = 2

    def __post_init__(self) -> None:
        decks_for_seats(self.seats)  # D1: 4, 6 or 8
        for name in ("point_value", "turn_seconds", "max_missed_turns"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise RuleError("bad_table", f"{name} must be a positive integer, not {v!r}")
        if not isinstance(self.commission_bps, int) or not 0 <= self.commission_bps <= 10_000:
            raise RuleError("bad_table", f"commission_bps must be 0…10000, not {self.commission_bps!r}", rule="D18")
        if not isinstance(self.min_players, int) or not 2 <= self.min_players <= self.seats:
            raise RuleError("bad_table", f"min_players must be 2…{self.seats}, not {self.min_players!r}", rule="D2")

    @property
    def decks(self) -> int:
        return decks_for_seats(self.seats)

    def to_json(self) -> dict[str, int]:
        return {
            "seats": self.seats,
            "point_value": self.point_value,
            "commission_bps": self.commission_bps,
            "turn_seconds": self.turn_seconds,
            "max_missed_turns": self.max_missed_turns,
            "min_players": self.min_players,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableRules:
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise RuleError("bad_table", f"unknown table settings: {sorted(unknown)}")
        return cls(**dict(data))


# --------------------------------------------------------------------------- state
class Phase(StrEnum):
    DRAW = "draw"  # the seat on turn must draw (or drop, D15)
    DISCARD = "discard"  # the seat on turn holds 14 cards: discard or declare (D11)
    ENDED = "ended"


class Status(StrEnum):
    PLAYING = "playing"
    DECLARED = "declared"  # valid declare: the winner (D12)
    WRONG_DECLARE = "wrong_declare"  # D12
    DROPPED = "dropped"  # D15, by choice or by the clock (D16)
    LEFT = "left"  # D15
    FORFEIT = "forfeit"  # committed a seed but did not reveal it (FAIRNESS.md): first drop


@dataclass(frozen=True, slots=True)
class Seat:
    seat: int
    player_id: str
    status: Status = Status.PLAYING
    cards: tuple[int, ...] = ()
    drawn_any: bool = False  # D15: has picked up a card this hand (clock draws count, D22)
    drawn_this_turn: int | None = None  # the card picked up this turn
    missed: int = 0  # D16: clock expiries in a row
    points: int | None = None  # charged (drop, leave, wrong declare) or counted at the end

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "player_id": self.player_id,
            "status": self.status.value,
            "cards": list(self.cards),
            "drawn_any": self.drawn_any,
            "drawn_this_turn": self.drawn_this_turn,
            "missed": self.missed,
            "points": self.points,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Seat:
        return cls(
            seat=int(d["seat"]),
            player_id=str(d["player_id"]),
            status=Status(d["status"]),
            cards=tuple(int(c) for c in d["cards"]),
            drawn_any=bool(d["drawn_any"]),
            drawn_this_turn=None if d["drawn_this_turn"] is None else int(d["drawn_this_turn"]),
            missed=int(d["missed"]),
            points=None if d["points"] is None else int(d["points"]),
        )


@dataclass(frozen=True, slots=True)
class Result:
    winner: int
    reason: str  # "declare" (D12) or "last_standing" (D14)
    settlement: Settlement

    def to_json(self) -> dict[str, Any]:
        return {"winner": self.winner, "reason": self.reason, "settlement": self.settlement.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Result:
        return cls(int(d["winner"]), str(d["reason"]), Settlement.from_json(d["settlement"]))


@dataclass(frozen=True, slots=True)
class HandState:
    """Everything about a hand in play.  Immutable: actions return a new state."""

    rules: TableRules
    seats: tuple[Seat, ...]  # ascending seat number; only seats that take part
    dealer: int
    wild_indicator: int  # card id, face up, never drawn (D4)
    closed: tuple[int, ...]  # top first
    open: tuple[int, ...]  # top last
    out_of_play: tuple[int, ...] = ()  # dropped, departed and wrong-declared hands; finish card
    turn: int = -1  # seat number on turn
    phase: Phase = Phase.DRAW
    turn_no: int = 1
    reshuffles: int = 0
    result: Result | None = None

    # -- derived -------------------------------------------------------------------
    @property
    def wild_rank(self) -> int | None:
        return wild_rank_of(card_of_id(self.wild_indicator, self.rules.decks))

    def seat(self, number: int) -> Seat:
        for s in self.seats:
            if s.seat == number:
                return s
        raise RuleError("not_seated", f"seat {number} takes no part in this hand", rule="D2")

    def playing(self) -> list[int]:
        return [s.seat for s in self.seats if s.status is Status.PLAYING]

    def all_cards(self) -> list[int]:
        """Every card id, wherever it is — a permutation of the pack at all times."""
        out = [self.wild_indicator, *self.closed, *self.open, *self.out_of_play]
        for s in self.seats:
            out.extend(s.cards)
        return out

    # -- serialisation ---------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules.to_json(),
            "seats": [s.to_json() for s in self.seats],
            "dealer": self.dealer,
            "wild_indicator": self.wild_indicator,
            "closed": list(self.closed),
            "open": list(self.open),
            "out_of_play": list(self.out_of_play),
            "turn": self.turn,
            "phase": self.phase.value,
            "turn_no": self.turn_no,
            "reshuffles": self.reshuffles,
            "result": None if self.result is None else self.result.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HandState:
        return cls(
            rules=TableRules.from_json(d["rules"]),
            seats=tuple(Seat.from_json(s) for s in d["seats"]),
            dealer=int(d["dealer"]),
            wild_indicator=int(d["wild_indicator"]),
            closed=tuple(int(c) for c in d["closed"]),
            open=tuple(int(c) for c in d["open"]),
            out_of_play=tuple(int(c) for c in d["out_of_play"]),
            turn=int(d["turn"]),
            phase=Phase(d["phase"]),
            turn_no=int(d["turn_no"]),
            reshuffles=int(d["reshuffles"]),
            result=None if d["result"] is None else Result.from_json(d["result"]),
        )


_Evolved = TypeVar("_Evolved", Seat, HandState)


# --------------------------------------------------------------------------- actions
@dataclass(frozen=True, slots=True)
class DrawClosed:
    seat: int
    kind: str = field(default="draw_closed", init=False)


@dataclass(frozen=True, slots=True)
class DrawOpen:
    seat: int
    kind: str = field(default="draw_open", init=False)


@dataclass(frozen=True, slots=True)
class Discard:
    seat: int
    card: int
    kind: str = field(default="discard", init=False)


@dataclass(frozen=True, slots=True)
class Declare:
    """D11: the finish card goes face down; the server judges the other 13 cards.
    ``hint`` (a grouping the player proposes) is for display only."""

    seat: int
    card: int
    hint: tuple[tuple[int, ...], ...] | None = None
    kind: str = field(default="declare", init=False)


@dataclass(frozen=True, slots=True)
class Drop:
    seat: int
    kind: str = field(default="drop", init=False)


@dataclass(frozen=True, slots=True)
class Leave:
    seat: int
    kind: str = field(default="leave", init=False)


@dataclass(frozen=True, slots=True)
class TimeOut:
    """The turn clock ran out for ``seat`` (D16); sent by whoever keeps the clock."""

    seat: int
    kind: str = field(default="timeout", init=False)


Action = DrawClosed | DrawOpen | Discard | Declare | Drop | Leave | TimeOut
_ACTIONS: Final[dict[str, type[Any]]] = {
    "draw_closed": DrawClosed,
    "draw_open": DrawOpen,
    "discard": Discard,
    "declare": Declare,
    "drop": Drop,
    "leave": Leave,
    "timeout": TimeOut,
}


def action_to_json(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": action.kind, "seat": action.seat}
    if isinstance(action, Discard | Declare):
        out["card"] = action.card
    if isinstance(action, Declare) and action.hint is not None:
        out["hint"] = [list(g) for g in action.hint]
    return out


def action_from_json(d: Mapping[str, Any]) -> Action:
    """Parse an action; any malformation is a ``bad_action`` error."""
    if not isinstance(d, Mapping):
        raise RuleError("bad_action", "an action is a JSON object")
    kind = d.get("kind")
    cls = _ACTIONS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise RuleError("bad_action", f"unknown action kind {kind!r}")
    seat = d.get("seat")
    if not isinstance(seat, int) or isinstance(seat, bool):
        raise RuleError("bad_action", "an action names its seat as an integer")
    allowed = (
        {"kind", "seat"} | ({"card"} if cls in (Discard, Declare) else set()) | ({"hint"} if cls is Declare else set())
    )
    extra = set(d) - allowed
    if extra:
        raise RuleError("bad_action", f"unexpected fields for {kind}: {sorted(extra)}")
    if cls in (Discard, Declare):
        card = d.get("card")
        if not isinstance(card, int) or isinstance(card, bool):
            raise RuleError("bad_action", f"{kind} names a card id as an integer")
        if cls is Declare:
            hint = d.get("hint")
            parsed: tuple[tuple[int, ...], ...] | None = None
            if hint is not None:
                if not isinstance(hint, list) or not all(
                    isinstance(g, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in g) for g in hint
                ):
                    raise RuleError("bad_action", "a declare hint is a list of lists of card ids")
                parsed = tuple(tuple(g) for g in hint)
            return Declare(seat, card, parsed)
        return Discard(seat, card)
    action: Action = cls(seat)
    return action


# --------------------------------------------------------------------------- events
@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened.  ``data`` is public; ``private`` is seen during the
    hand only by ``seat`` (or by nobody when ``seat`` is None) and is published in the
    transcript when the hand ends."""

    kind: str
    seat: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    private: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "seat": self.seat, "data": dict(self.data), "private": dict(self.private)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Event:
        return cls(str(d["kind"]), None if d["seat"] is None else int(d["seat"]), dict(d["data"]), dict(d["private"]))

    def for_seat(self, viewer: int | None) -> dict[str, Any]:
        """What ``viewer`` (a seat number, or None for a spectator) may see of it."""
        out: dict[str, Any] = {"kind": self.kind, "seat": self.seat, **self.data}
        if viewer is not None and viewer == self.seat:
            out.update(self.private)
        return out


# --------------------------------------------------------------------------- the deal


def first_after(order: Sequence[int], dealer: int) -> int:
    """D3: the first turn is the next seated player after the dealer (``order`` sorted)."""
    return next((s for s in order if s > dealer), order[0])


def dealer_after(order: Sequence[int], last: int | None) -> int:
    """D3: the dealer of a table's next hand, ``order`` its header's seats (sorted): the
    next of them after the last hand's dealer, wrapping (whoever sits there now), or
    the lowest for a table's first hand (``last`` None)."""
    return order[0] if last is None else first_after(order, last)


def rotation_from(order: Sequence[int], first: int) -> list[int]:
    """The seats in ``order`` (sorted) starting at ``first``: D4's dealing order."""
    start = list(order).index(first)
    return list(order[start:]) + list(order[:start])


def deal_round_robin(rotation: Sequence[int], deck: Sequence[int]) -> tuple[dict[int, list[int]], int]:
    """D4: one card at a time, round-robin in ``rotation``, 13 each; the hands and the
    position of the next card of ``deck`` (the wild indicator)."""
    hands: dict[int, list[int]] = {s: [] for s in sorted(rotation)}
    pos = 0
    for _ in range(HAND_SIZE):
        for s in rotation:
            hands[s].append(deck[pos])
            pos += 1
    return hands, pos


def deal(
    rules: TableRules,
    players: Sequence[tuple[int, str]],
    dealer: int,
    deck: Sequence[int],
    forfeits: Iterable[tuple[int, str]] = (),
    *,
    single_wins: bool = False,
) -> tuple[HandState, list[Event]]:
    """Start a hand (D2–D5).

    ``players`` are (seat, player_id) of the seats dealt in; ``forfeits`` are seats
    that committed a seed but did not reveal it (FAIRNESS.md): dealt nothing and
    charged a first drop.  ``deck`` is the shuffled pack, top card first.  With
    ``single_wins`` (rummy-pf/v2, D29), one seat dealt in beside forfeits wins at once
    (D14); otherwise a hand needs two seats dealt in.
    """
    players = sorted(players)
    forfeit_list = sorted(forfeits)
    seat_numbers = [s for s, _ in players] + [s for s, _ in forfeit_list]
    if len(set(seat_numbers)) != len(seat_numbers):
        raise RuleError("bad_deal", "a seat is listed twice", rule="D2")
    for s in seat_numbers:
        if not 0 <= s < rules.seats:
            raise RuleError("bad_deal", f"no seat {s} at a {rules.seats}-seat table", rule="D2")
    if len(players) < 2 and not (single_wins and len(players) == 1 and forfeit_list):
        raise RuleError("not_enough_players", "a hand needs at least two players dealt in", rule="D2")
    if sorted(deck) != list(range(deck_size(rules.decks))):
        raise RuleError(
            "bad_deal", f"the deck is not a permutation of the {deck_size(rules.decks)}-card pack", rule="D1"
        )
    order = [s for s, _ in players]
    first = first_after(order, dealer)  # D3
    rotation = rotation_from(order, first)
    hands, pos = deal_round_robin(rotation, deck)  # D4
    indicator = deck[pos]
    first_open = deck[pos + 1]
    closed = tuple(deck[pos + 2 :])
    seats = [Seat(s, pid, cards=tuple(hands[s])) for s, pid in players]
    seats += [Seat(s, pid, status=Status.FORFEIT, points=FIRST_DROP) for s, pid in forfeit_list]
    seats.sort(key=lambda x: x.seat)
    state = HandState(
        rules=rules,
        seats=tuple(seats),
        dealer=dealer,
        wild_indicator=indicator,
        closed=closed,
        open=(first_open,),
        turn=first,
    )
    events = [
        Event(
            "deal",
            None,
            {
                "dealer": dealer,
                "first": first,
                "seats": order,
                "forfeits": [s for s, _ in forfeit_list],
                "wild_indicator": indicator,
                "open": first_open,
                "closed_count": len(closed),
            },
        )
    ]
    events += [Event("hand", s, {"count": HAND_SIZE}, {"cards": hands[s]}) for s in rotation]
    events += [Event("forfeit", s, {"points": FIRST_DROP}) for s, _ in forfeit_list]
    if len(players) == 1:
        return _end(state, first, "last_standing", events), events  # D29, D14
    events.append(Event("turn", first, {"turn_no": 1, "phase": Phase.DRAW.value}))
    return state, events


# --------------------------------------------------------------------------- legality
def verify(state: HandState, action: Action) -> None:
    """Raise a :class:`RuleError` naming the rule if ``action`` is not legal now."""
    if state.phase is Phase.ENDED:
        raise PhaseError("hand_over", "the hand has ended", rule="D12")
    seat = state.seat(action.seat)
    if seat.status is not Status.PLAYING:
        raise RuleError("not_in_hand", f"seat {seat.seat} is out of this hand ({seat.status.value})", rule="D15")
    if isinstance(action, Leave):
        return  # D15: leaving is allowed at any time
    if action.seat != state.turn:
        raise RuleError("not_your_turn", f"it is seat {state.turn}'s turn, not seat {action.seat}'s", rule="D3")
    if isinstance(action, TimeOut):
        return
    if isinstance(action, DrawClosed | DrawOpen | Drop):
        if state.phase is not Phase.DRAW:
            what = "drop" if isinstance(action, Drop) else "draw"
            raise PhaseError(
                "already_drawn" if what == "draw" else "cannot_drop_after_draw",
                f"you can {what} only in the draw phase, before picking up a card this turn; "
                f"the phase is {state.phase.value}",
                rule="D15" if what == "drop" else "D11",
            )
        if isinstance(action, DrawOpen) and not state.open:
            raise RuleError("open_pile_empty", "the open pile is empty", rule="D17")
        return
    if isinstance(action, Discard | Declare):
        if state.phase is not Phase.DISCARD:
            raise PhaseError(
                "must_draw_first",
                f"you must draw before you {action.kind}; the phase is {state.phase.value}, expected discard",
                rule="D11",
            )
        if action.card not in seat.cards:
            raise RuleError("card_not_in_hand", f"card {action.card} is not in your hand", rule="D11")
        if isinstance(action, Declare) and action.hint is not None:
            flat = [c for g in action.hint for c in g]
            rest = list(seat.cards)
            rest.remove(action.card)
            if sorted(flat) != sorted(rest):
                raise RuleError("bad_hint", "a declare hint must group exactly the 13 cards you keep", rule="D11")
        return
    raise RuleError("bad_action", f"unknown action {action!r}")  # pragma: no cover - exhaustive


def can(state: HandState, action: Action) -> bool:
    try:
        verify(state, action)
    except RuleError:
        return False
    return True


def legal_actions(state: HandState, seat: int) -> list[Action]:
    """Every legal action for ``seat`` now (discards and declares for each card)."""
    try:
        me = state.seat(seat)
    except RuleError:
        return []
    candidates: list[Action] = [DrawClosed(seat), DrawOpen(seat), Drop(seat), Leave(seat), TimeOut(seat)]
    for c in sorted(set(me.cards)):
        candidates += [Discard(seat, c), Declare(seat, c)]
    return [a for a in candidates if can(state, a)]


# --------------------------------------------------------------------------- transitions
def apply(state: HandState, action: Action, reshuffle: Reshuffle) -> tuple[HandState, list[Event]]:
    """Apply a legal action (verified first) and return the new state and events."""
    verify(state, action)
    events: list[Event] = []
    if isinstance(action, DrawClosed):
        state = _draw_closed(state, action.seat, reshuffle, events, by_clock=False)
    elif isinstance(action, DrawOpen):
        state = _draw_open(state, action.seat, events)
    elif isinstance(action, Discard):
        state = _discard(state, action.seat, action.card, events, by_clock=False)
    elif isinstance(action, Declare):
        state = _declare(state, action, events)
    elif isinstance(action, Drop):
        state = _drop(state, action.seat, events, reason="drop")
    elif isinstance(action, Leave):
        state = _leave(state, action.seat, events)
    else:
        state = _timeout(state, action.seat, reshuffle, events)
    return state, events


_FIELDS: Final[dict[type[Any], frozenset[str]]] = {cls: frozenset(cls.__slots__) for cls in (Seat, HandState)}
_new_object: Final = object.__new__
_set_field: Final = object.__setattr__


def _evolve(obj: _Evolved, **changes: Any) -> _Evolved:
    """``dataclasses.replace(obj, **changes)`` for a :class:`Seat` or a
    :class:`HandState` (frozen and slotted, every field set by ``__init__``, no
    ``__post_init__``), without ``replace``'s generic work: the replay's most frequent
    call."""
    cls = type(obj)
    if not changes.keys() <= _FIELDS[cls]:
        raise TypeError(f"{cls.__name__} has no field {sorted(changes.keys() - _FIELDS[cls])}")
    new = _new_object(cls)
    for name in cls.__slots__:
        _set_field(new, name, changes[name] if name in changes else getattr(obj, name))
    return new


def _with_seat(state: HandState, seat: Seat, **changes: Any) -> HandState:
    """The state with ``seat`` in its place, and ``changes``."""
    return _evolve(state, seats=tuple(seat if s.seat == seat.seat else s for s in state.seats), **changes)


def _draw_closed(
    state: HandState, seat_no: int, reshuffle: Reshuffle, events: list[Event], *, by_clock: bool
) -> HandState:
    if not state.closed:
        state = _reshuffle(state, reshuffle, events)
    card, closed = state.closed[0], state.closed[1:]
    seat = state.seat(seat_no)
    seat = _evolve(seat, cards=seat.cards + (card,), drawn_any=True, drawn_this_turn=card)
    state = _with_seat(state, seat, closed=closed, phase=Phase.DISCARD)
    events.append(Event("draw", seat_no, {"source": "closed", "by_clock": by_clock}, {"card": card}))
    return state


def _reshuffle(state: HandState, reshuffle: Reshuffle, events: list[Event]) -> HandState:
    """D17: the open pile but its top card becomes the new closed pile."""
    if len(state.open) < 2:
        # Impossible under D1 (the piles never hold fewer than 26 cards), but never
        # guessed at: a hand that cannot go on is an error, not a silent repair.
        raise RuleError("piles_exhausted", "no cards are left to reshuffle", rule="D17")
    k = state.reshuffles + 1
    cards = sorted(state.open[:-1])
    new_closed = list(reshuffle(k, list(cards)))
    if sorted(new_closed) != cards:
        raise RuleError("bad_reshuffle", f"reshuffle {k} did not return a permutation of its cards", rule="D17")
    events.append(Event("reshuffle", None, {"k": k, "count": len(new_closed)}, {"closed": new_closed}))
    return _evolve(state, closed=tuple(new_closed), open=state.open[-1:], reshuffles=k)


def _draw_open(state: HandState, seat_no: int, events: list[Event]) -> HandState:
    card = state.open[-1]
    seat = state.seat(seat_no)
    seat = _evolve(seat, cards=seat.cards + (card,), drawn_any=True, drawn_this_turn=card)
    state = _with_seat(state, seat, open=state.open[:-1], phase=Phase.DISCARD)
    # Open-pile draws happen in front of everyone (rules page, phase 3).
    events.append(Event("draw", seat_no, {"source": "open", "card": card, "by_clock": False}))
    return state


def _discard(state: HandState, seat_no: int, card: int, events: list[Event], *, by_clock: bool) -> HandState:
    seat = state.seat(seat_no)
    cards = list(seat.cards)
    cards.remove(card)
    seat = _evolve(
        seat, cards=tuple(cards), drawn_this_turn=None, missed=seat.missed if by_clock else 0
    )  # D16: acting in time resets the count
    state = _with_seat(state, seat, open=state.open + (card,))
    events.append(Event("discard", seat_no, {"card": card, "by_clock": by_clock}))
    return _next_turn(state, seat_no, events)


def _next_turn(state: HandState, after: int, events: list[Event]) -> HandState:
    """D3: the next seat still playing, ascending, wrapping; or the end (D14)."""
    playing = state.playing()
    if len(playing) == 1:
        return _end(state, playing[0], "last_standing", events)
    nxt = next((s for s in playing if s > after), playing[0])
    state = _evolve(state, turn=nxt, phase=Phase.DRAW, turn_no=state.turn_no + 1)
    events.append(Event("turn", nxt, {"turn_no": state.turn_no, "phase": Phase.DRAW.value}))
    return state


def _remove(state: HandState, seat_no: int, status: Status, points: int) -> HandState:
    """The seat is out: its cards leave play (D12, D15) and its points are charged."""
    seat = state.seat(seat_no)
    out = state.out_of_play + seat.cards
    seat = _evolve(seat, status=status, cards=(), drawn_this_turn=None, points=points)
    return _with_seat(state, seat, out_of_play=out)


def _drop(state: HandState, seat_no: int, events: list[Event], *, reason: str) -> HandState:
    """D15: 20 before picking up any card this hand, otherwise 40."""
    seat = state.seat(seat_no)
    points = MIDDLE_DROP if seat.drawn_any else FIRST_DROP
    hidden = {"cards": list(seat.cards)}
    state = _remove(state, seat_no, Status.DROPPED, points)
    events.append(Event("drop", seat_no, {"points": points, "reason": reason}, hidden))
    return _after_removal(state, seat_no, events)


def _leave(state: HandState, seat_no: int, events: list[Event]) -> HandState:
    seat = state.seat(seat_no)
    hidden = {"cards": list(seat.cards)}
    state = _remove(state, seat_no, Status.LEFT, LEAVE_POINTS)
    events.append(Event("leave", seat_no, {"points": LEAVE_POINTS}, hidden))
    return _after_removal(state, seat_no, events)


def _after_removal(state: HandState, seat_no: int, events: list[Event]) -> HandState:
    playing = state.playing()
    if len(playing) == 1:
        return _end(state, playing[0], "last_standing", events)  # D14
    if state.turn == seat_no:
        return _next_turn(state, seat_no, events)
    return state


def _declare(state: HandState, action: Declare, events: list[Event]) -> HandState:
    """D11, D12: the server judges the 13 cards kept; the hint never decides."""
    seat = state.seat(action.seat)
    kept = list(seat.cards)
    kept.remove(action.card)
    decks = state.rules.decks
    verdict = best_arrangement([card_of_id(c, decks) for c in kept], state.wild_rank)
    if verdict.valid_declare:
        groups = [[kept[i] for i in g] for g in verdict.groups]
        seat = _evolve(seat, cards=tuple(kept), status=Status.DECLARED, points=0, drawn_this_turn=None)
        state = _with_seat(state, seat, out_of_play=state.out_of_play + (action.card,))
        events.append(Event("declare", action.seat, {"valid": True, "groups": groups}, {"finish": action.card}))
        return _end(state, action.seat, "declare", events)
    hidden = {"finish": action.card, "cards": list(seat.cards)}
    state = _remove(state, action.seat, Status.WRONG_DECLARE, WRONG_DECLARE)
    events.append(Event("declare", action.seat, {"valid": False, "points": WRONG_DECLARE}, hidden))
    return _after_removal(state, action.seat, events)


def _timeout(state: HandState, seat_no: int, reshuffle: Reshuffle, events: list[Event]) -> HandState:
    """D16: the clock moves for the seat — draws from the closed pile and discards
    the card drawn (D22: after a draw of its own, the card it drew) — and after
    ``max_missed_turns`` expiries in a row drops it instead (charged as D15)."""
    seat = state.seat(seat_no)
    missed = seat.missed + 1
    state = _with_seat(state, _evolve(seat, missed=missed))
    events.append(Event("clock", seat_no, {"missed": missed, "phase": state.phase.value}))
    if missed >= state.rules.max_missed_turns:
        return _drop(state, seat_no, events, reason="clock")
    if state.phase is Phase.DRAW:
        state = _draw_closed(state, seat_no, reshuffle, events, by_clock=True)
    drawn = state.seat(seat_no).drawn_this_turn
    assert drawn is not None, "in the discard phase the seat has drawn this turn"
    return _discard(state, seat_no, drawn, events, by_clock=True)


# --------------------------------------------------------------------------- the end
def _end(state: HandState, winner: int, reason: str, events: list[Event]) -> HandState:
    """D12–D14, D19: count everyone still in at their best arrangement, settle."""
    decks = state.rules.decks
    wild = state.wild_rank
    seats = []
    counted: dict[str, Any] = {}
    for s in state.seats:
        if s.seat == winner:
            s = _evolve(s, points=0, status=Status.DECLARED if reason == "declare" else s.status)
        elif s.status is Status.PLAYING:
            arr = best_arrangement([card_of_id(c, decks) for c in s.cards], wild)
            s = _evolve(s, points=arr.points)
            counted[str(s.seat)] = {
                "points": arr.points,
                "groups": [[s.cards[i] for i in g] for g in arr.groups],
                "loose": [s.cards[i] for i in arr.loose],
            }
        seats.append(s)
    points = {s.seat: int(s.points or 0) for s in seats}
    settlement = settle(points, winner, state.rules.point_value, state.rules.commission_bps)
    result = Result(winner, reason, settlement)
    state = _evolve(state, seats=tuple(seats), phase=Phase.ENDED, result=result)
    events.append(
        Event(
            "end",
            winner,
            {
                "winner": winner,
                "reason": reason,
                "counted": counted,
                "hands": {str(s.seat): list(s.cards) for s in seats if s.cards},
                "settlement": settlement.to_json(),
            },
        )
    )
    return state


# --------------------------------------------------------------------------- views
def seat_view(state: HandState, viewer: int | None) -> dict[str, Any]:
    """What ``viewer`` may see: its own cards, everybody's public facts, the open
    pile, never the closed pile's order or another seat's cards (until the end,
    when the hands still in are shown)."""
    faces = face_texts(state.rules.decks)
    ended = state.phase is Phase.ENDED
    seats = []
    for s in state.seats:
        entry: dict[str, Any] = {
            "seat": s.seat,
            "player_id": s.player_id,
            "status": s.status.value,
            "card_count": len(s.cards),
            "missed": s.missed,
            "points": s.points,
        }
        if ended and s.cards:
            entry["cards"] = list(s.cards)
            entry["faces"] = [faces[c] for c in s.cards]
        seats.append(entry)
    view: dict[str, Any] = {
        "rules": state.rules.to_json(),
        "phase": state.phase.value,
        "turn": state.turn,
        "turn_no": state.turn_no,
        "dealer": state.dealer,
        "wild_indicator": state.wild_indicator,
        "wild_face": faces[state.wild_indicator],
        "open": list(state.open),
        "open_faces": [faces[c] for c in state.open],
        "closed_count": len(state.closed),
        "reshuffles": state.reshuffles,
        "seats": seats,
        "result": None if state.result is None else state.result.to_json(),
    }
    if viewer is not None:
        try:
            me = state.seat(viewer)
        except RuleError:
            me = None
        if me is not None:
            view["me"] = {
                "seat": me.seat,
                "cards": list(me.cards),
                "faces": [faces[c] for c in me.cards],
                "drawn_this_turn": me.drawn_this_turn,
                "drawn_any": me.drawn_any,
                "status": me.status.value,
            }
    return view
