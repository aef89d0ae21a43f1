"""What the recorder and the verifier share (docs/fairness.md §6, §9–§11, §15):
the hash chain, the dealt seats and the start of a hand, the bodies players and the
server sign, and the reveal statuses.

Nothing here does I/O or reads a clock; both the server (through
:mod:`verifier.record`) and :mod:`verifier.transcript` call these functions, so the
server writes exactly what the verifier checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from verifier.cards import deck_size
from verifier.fairness import PROTOCOL_V2, canonical, deal_deck, derive_key, sha256, transcript_input
from verifier.hand import Event, HandState, TableRules, deal

GENESIS: Final = "00" * 32

REVEALED: Final = "revealed"
NO_COMMIT: Final = "no_commit"  # committed nothing in time: takes part with an empty seed (D21)
WITHHELD: Final = "withheld"  # committed but did not reveal: sits out, first drop (D29)


def chain_link(prev_hex: str, record: Mapping[str, Any]) -> str:
    """``h = SHA-256(h_prev ‖ canonical(record without "h"))`` (§11)."""
    body = {k: v for k, v in record.items() if k != "h"}
    return link_of(prev_hex, canonical(body))


def link_of(prev_hex: str, body: bytes) -> str:
    """``h`` of a record whose ``canonical(record without "h")`` is ``body`` (§11)."""
    return sha256(bytes.fromhex(prev_hex) + body).hex()


def dealt_seats(header: Mapping[str, Any], reveals: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, bytes]]:
    """(seat, player_id, seed) of the seats the deck is derived from and dealt to:
    every seat but those that withheld their reveal (§6)."""
    ids = {int(s["seat"]): str(s["player_id"]) for s in header["seats"]}
    out = []
    for r in reveals:
        if r["status"] != WITHHELD:
            out.append((int(r["seat"]), ids[int(r["seat"])], bytes.fromhex(r["seed"])))
    return sorted(out)


def hand_key(header: Mapping[str, Any], reveals: Sequence[Mapping[str, Any]], server_seed: bytes) -> bytes:
    t = transcript_input(
        str(header["table_id"]), int(header["hand_no"]), str(header["rules_id"]), dealt_seats(header, reveals)
    )
    return derive_key(server_seed, t)


def start_hand(
    header: Mapping[str, Any], reveals: Sequence[Mapping[str, Any]], server_seed: bytes
) -> tuple[bytes, list[int], HandState | None, list[Event]]:
    """Key, deck, initial state and deal events.  The state is None when the hand is
    void at the deal: under v2 when no seat is dealt in, under v1 when fewer than two
    are (D29).  Under v2 one seat dealt in beside withholders wins at once."""
    v2 = header.get("protocol") == PROTOCOL_V2
    rules = TableRules.from_json(header["rules"])
    key = hand_key(header, reveals, server_seed)
    deck = deal_deck(key, deck_size(rules.decks))
    players = [(s, pid) for s, pid, _ in dealt_seats(header, reveals)]
    ids = {int(s["seat"]): str(s["player_id"]) for s in header["seats"]}
    forfeits = [(int(r["seat"]), ids[int(r["seat"])]) for r in reveals if r["status"] == WITHHELD]
    if len(players) < (1 if v2 else 2):
        return key, deck, None, []
    state, events = deal(rules, players, int(header["dealer"]), deck, forfeits, single_wins=v2)
    return key, deck, state, events


# --------------------------------------------------------------------------- signed bodies (v2)
def move_body(table_id: str, hand_no: int, prev: str, move: Mapping[str, Any]) -> dict[str, Any]:
    """What a player signs for a move (purpose ``move``, §9)."""
    return {"table_id": table_id, "hand_no": hand_no, "prev": prev, "move": dict(move)}


def commit_move(seat: int, commit: bytes) -> dict[str, Any]:
    return {"kind": "commit", "seat": seat, "commit": commit.hex()}


def reveal_move(seat: int, seed: bytes) -> dict[str, Any]:
    return {"kind": "reveal", "seat": seat, "seed": seed.hex()}


def receipt_body(table_id: str, hand_no: int, seat: int, kind: str, value: bytes, prev: str) -> dict[str, Any]:
    """What the server signed when it accepted a commit or a reveal before acks
    (purpose ``receipt``, §15; still read)."""
    return {"table_id": table_id, "hand_no": hand_no, "seat": seat, "kind": kind, "value": value.hex(), "prev": prev}


def head_body(table_id: str, hand_no: int, i: int, h: str) -> dict[str, Any]:
    """What the server signs for each record it sends (purpose ``head``, §15)."""
    return {"table_id": table_id, "hand_no": hand_no, "i": i, "h": h}


ACCEPTED: Final = "accepted"
REFUSED: Final = "refused"


def ack_body(
    table_id: str,
    hand_no: int,
    seat: int,
    move: Mapping[str, Any],
    prev: str,
    psig: str,
    *,
    i: int,
    h: str,
    arrived: int,
    code: str | None = None,
) -> dict[str, Any]:
    """What the server signs for every move the table judges (purpose ``ack``, §15):
    accepted when ``code`` is None, else refused with that error code.  ``i``/``h``:
    the record holding an accepted action, else the last record when the move was
    judged; ``arrived``: the table's clock then."""
    return {
        "table_id": table_id,
        "hand_no": hand_no,
        "seat": seat,
        "move": dict(move),
        "prev": prev,
        "psig": psig,
        "i": i,
        "h": h,
        "arrived": arrived,
        "outcome": ACCEPTED if code is None else REFUSED,
        "code": code,
    }


def player_body(table_id: str, hand_no: int, seat: int, player_key: bytes) -> dict[str, Any]:
    """What a player's client signs with its own key (purpose ``player``, §15): the key
    it plays this hand's seat with."""
    return {"table_id": table_id, "hand_no": hand_no, "seat": seat, "player_key": player_key.hex()}
