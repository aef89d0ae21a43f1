"""Check 14, ``evidence`` (docs/fairness.md §15): what a player's client kept, checked
against the transcript.

An evidence file is a list of signed items — the server's acks, heads, the header the
client accepted, the old receipts, and the player's own ``player`` item.  Only the
items for this hand count; at least one must be (evidence that proves nothing does
not pass).  Each item is typed first (:func:`verifier.schema.check_evidence_item`),
its signature verified strictly (§9), then judged by the function its purpose names
in :data:`ITEM_CHECKS`, which answers ``checked`` or ``after_void`` (§15 rule 8) or
fails.  The first item that fails is the failure, named by its position; the counts
are in the report whatever the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from verifier import ed25519
from verifier.chain import REVEALED, WITHHELD, move_body
from verifier.checkbase import Ctx, Fail, Skip, canon, fail, public_key, same, signature_ok
from verifier.errors import RuleError
from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2, player_commit, reshuffler
from verifier.hand import action_from_json, apply, dealer_after
from verifier.schema import SchemaError, check_evidence_item, render_path

Outcome = Literal["checked", "after_void"]


@dataclass
class Judge:
    """The transcript as the item checks read it (``format`` and ``replay`` ran)."""

    ctx: Ctx
    server: Ed25519PublicKey
    players: dict[int, Ed25519PublicKey] = field(default_factory=dict)
    item: int = 0  # the number in the file of the item being checked

    def __post_init__(self) -> None:
        for e in self.ctx.s.header["seats"]:
            self.players[e["seat"]] = public_key(bytes.fromhex(e["player_key"]), f"seat {e['seat']}'s player_key", 0)

    @property
    def log(self) -> list[dict[str, Any]]:
        return self.ctx.s.log

    @property
    def void(self) -> bool:
        return self.ctx.s.void is not None

    def index_of(self, h: str) -> int | None:
        """The number of the record whose chain link is ``h``, or None."""
        return next((k for k, r in enumerate(self.log) if r["h"] == h), None)

    def record(self, body: Mapping[str, Any], what: str) -> dict[str, Any]:
        """Record ``body.i`` with the ``h`` the server signed for it.  A record past
        a void is not one the log never reached (§15 rule 8): the server signed that
        it had reached it, and the transcript cut it off."""
        i = body["i"]
        if i >= len(self.log):
            if self.void:
                v = len(self.log) - 1
                fail(
                    f"the server signed {what} for record {i}, but its transcript voids the hand at record {v}: "
                    "it cut off records it had made (D33)",
                    v,
                    f"a log reaching record {i}",
                    f"a void at record {v}",
                )
            fail(f"the server signed {what} for record {i}, which the transcript does not have", None, body["h"], None)
        if self.log[i]["h"] != body["h"]:
            fail(f"the server signed {what} for another record {i} than the transcript's", i, body["h"], self.ctx.h(i))
        record: dict[str, Any] = self.log[i]
        return record


# --------------------------------------------------------------------------- one function per item kind
def check_header(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """§15.3: the header the client accepted is exactly the transcript's."""
    if canon(body) != canon(j.ctx.s.header):
        fail(
            "the server signed another header for this hand than the transcript's: it showed the player another hand",
            0,
            body,
            j.ctx.s.header,
        )
    return "checked"


def check_table_header(j: Judge, n: int, item: Mapping[str, Any]) -> None:
    """§15.3: the header of another hand of this table, if the server signed it with
    this transcript's key, gives this hand's rules — a table's rules never change
    (RULES.md D38) — and, of the hand just before or after this one, a dealer from
    which the button moved to the next seat (D3).  (One signed with another key is
    another era's, §16: counted with the other hands, as any item of another hand.)"""
    body = item["body"]
    if not signature_ok(j.server, PROTOCOL_V2, "header", body, item["sig"]):
        return
    header = j.ctx.s.header
    other = f"evidence item {n} (header): the server signed hand {body['hand_no']} of table {body['table_id']}"
    for name in ("rules", "rules_id"):
        if not same(body.get(name), header[name]):
            fail(
                f"{other} with other {name} than this hand's; a table's rules never change (RULES.md D38)",
                0,
                body.get(name),
                header[name],
            )
    if body["hand_no"] == header["hand_no"] - 1:  # the hand before: this hand's button follows its
        last, seats, dealer, whose = body.get("dealer"), [e["seat"] for e in header["seats"]], header["dealer"], "this"
    elif body["hand_no"] == header["hand_no"] + 1:  # the hand after: its button follows this hand's
        last, seats, dealer, whose = header["dealer"], _seats_of(body), body.get("dealer"), "that"
    else:
        return
    # a header the server signs always has an integer dealer and lists its seats (§13)
    well_formed = type(body.get("dealer")) is int and bool(_seats_of(body))
    want = dealer_after(sorted(seats), int(last)) if well_formed else None
    if want is None or dealer != want:
        fail(
            f"{other}; hand {body['hand_no'] if whose == 'that' else header['hand_no']}'s button must move from seat"
            f" {last}, the dealer of the hand before, to the next seat of {whose} hand's header, seat {want}, not"
            f" seat {dealer} (RULES.md D3)",
            0,
            want,
            dealer,
        )


def _seats_of(header: Mapping[str, Any]) -> list[int]:
    """The seat numbers a signed header of another hand lists, or [] if it lists none
    as §13 types them (no header the server signs is like that)."""
    seats = header.get("seats")
    if type(seats) is not list:
        return []
    out = [e.get("seat") if isinstance(e, dict) else None for e in seats]
    return [s for s in out if type(s) is int] if all(type(s) is int for s in out) else []


def check_player(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """§15.4: the player's own word, signed by the key it names: it fails nothing
    (anyone can sign one for any key and seat — a player could "prove" a substitution
    the server never made).  A key the header does not list for the seat is the
    warning ``key_claim``; what proves a substitution is a ``header`` item (§15.3)."""
    seat = body["seat"]
    listed = next((e["player_key"] for e in j.ctx.s.header["seats"] if e["seat"] == seat), None)
    if listed != body["player_key"]:
        j.ctx.key_claims.append((j.item, seat, body["player_key"], listed))
    return "checked"


def check_head(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """§15.5: record ``i`` exists and its ``h`` is the one the server signed (a void
    before it fails, §15.8)."""
    j.record(body, "a head")
    return "checked"


def check_receipt(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """§15.6: what an old receipt says was accepted is in record 1 (a commitment) or
    record 2 (a seed)."""
    s = j.ctx.s
    seat, kind, value = body["seat"], body["kind"], body["value"]
    record = 1 if kind == "commit" else 2
    listed = (None if s.commitments is None else s.commitments["commits"]) if kind == "commit" else s.reveals
    # what the receipt says of the records the log has is checked before rule 8 sets it
    # aside: the log always has record 0, and a void after it stands at record 1's place
    if seat not in s.seats:
        fail(f"a {kind} receipt for seat {seat}, which the header does not list", record, s.seats, seat)
    if body["prev"] != j.ctx.h(record - 1):
        fail(
            f"the {kind} receipt was signed over another record {record - 1}",
            record - 1,
            body["prev"],
            j.ctx.h(record - 1),
        )
    if listed is None:
        if j.void:
            return "after_void"
        fail(f"the transcript has no record {record}")  # pragma: no cover - format requires it
    entry = next(e for e in listed if e["seat"] == seat)
    if kind == "commit" and entry["commit"] != value:
        fail(f"the server accepted seat {seat}'s commitment, record 1 says otherwise", 1, value, entry["commit"])
    if kind == "reveal" and (entry["status"] != REVEALED or entry["seed"] != value):
        found = {"seed": entry["seed"], "status": entry["status"]}
        fail(f"the server accepted seat {seat}'s seed, record 2 says otherwise", 2, value, found)
    return "checked"


def check_ack(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """§15.7: the record the ack names is the transcript's, the move arrived after it,
    and the outcome agrees with the log: an accepted move is where the ack says, and
    a refusal the rules do not justify left the seat its whole window (D35)."""
    rec = j.record(body, "an ack")
    if body["arrived"] < rec["t"]:
        fail(
            "the ack says the move arrived before the record it was judged after",
            body["i"],
            f">= {rec['t']}",
            body["arrived"],
        )
    kind = body["move"]["kind"]
    if body["outcome"] == "refused":
        judged_at_the_last_record(j, body)
        quotes_a_judged_move(j, body)
        return "checked" if justified(j, body) else owed_window(j, body)
    return ACCEPTED.get(kind, accepted_action)(j, body)


def judged_at_the_last_record(j: Judge, body: Mapping[str, Any]) -> None:
    """§15.7: a refusal's ``i`` is the last record of the log when the table judged
    the move, so the move cannot be signed over a later record: a ``prev`` that is the
    ``h`` of a record after ``i`` shows that record existed when the move came, and the
    ack's ``i`` is false.  Without this a house could name an earlier record and pass
    its own refusal off as a stale move's (justified), then charge the seat before the
    window D35 owes it."""
    i = body["i"]
    later = j.index_of(body["prev"])
    if later is not None and later > i:
        fail(
            f"a refusal names record {i} as the last of the log when seat {body['seat']}'s move was judged, but the"
            f" move is signed over record {later}, which the log holds after it",
            i,
            f"i >= {later}",
            i,
        )


def quotes_a_judged_move(j: Judge, body: Mapping[str, Any]) -> None:
    """§15.7: a refusal's ack quotes a move a table judges — signed by the seat's
    player over a record the log held (record ``i`` or an earlier one).  A table
    judges no other move (§15, acks), so an ack quoting one misquotes the move: the
    player's real signature over another ``prev``, or a signature with a bit flipped,
    would pass the house's own refusal off as justified (a stale move's, or one the
    player did not sign) and let its clock charge the seat."""
    i, seat, prev = body["i"], body["seat"], body["prev"]
    if j.index_of(prev) is None:  # one after i failed judged_at_the_last_record
        fail(
            f"the server refused a move of seat {seat} signed over no record of the log up to record {i}: "
            "no table judges such a move, so the ack misquotes it",
            i,
            f"the h of a record 0…{i}",
            prev,
        )
    key = j.players.get(seat)
    signed = move_body(j.ctx.t["table_id"], j.ctx.t["hand_no"], prev, body["move"])
    if key is None or not signature_ok(key, PROTOCOL_V2, "move", signed, body["psig"]):
        fail(
            f"the server refused a move of seat {seat} quoting a signature that is not the seat's over the prev "
            "it names: no table judges such a move, so the ack misquotes it",
            i,
            "the seat's move signature over prev",
            body["psig"],
        )


def accepted_commit(j: Judge, body: Mapping[str, Any]) -> Outcome:
    s, seat = j.ctx.s, body["seat"]
    _accepted_at(j, body, 0)
    if s.commitments is None:
        return "after_void"
    entry = next((c for c in s.commitments["commits"] if c["seat"] == seat), None)
    want = {"commit": body["move"]["commit"], "psig": body["psig"]}
    if entry is None or entry["commit"] != want["commit"] or entry["psig"] != want["psig"]:
        fail(f"the server accepted seat {seat}'s commitment, record 1 says otherwise", 1, want, entry)
    made_after_it_arrived(j, body, 1)
    return "checked"


def accepted_reveal(j: Judge, body: Mapping[str, Any]) -> Outcome:
    s, seat = j.ctx.s, body["seat"]
    _accepted_at(j, body, 1)
    if s.reveals is None:
        seed_held_then_hidden(j, body, "accepted")
        return "after_void"
    entry = next((r for r in s.reveals if r["seat"] == seat), None)
    want = {"seed": body["move"]["seed"], "status": REVEALED, "psig": body["psig"]}
    if entry is None or {k: entry[k] for k in want} != want:
        fail(f"the server accepted seat {seat}'s seed, record 2 says otherwise", 2, want, entry)
    made_after_it_arrived(j, body, 2)
    return "checked"


def _accepted_at(j: Judge, body: Mapping[str, Any], i: int) -> None:
    """What an accepted commit's or reveal's ack says of records 0 and 1, checked
    before rule 8 may set it aside (§15.8): its seat is the header's, its ``i`` and
    ``prev`` the record it was judged at."""
    seat, seats = body["seat"], j.ctx.s.seats
    if seat not in seats:
        fail(f"an accepted {body['move']['kind']} of seat {seat}, which the header does not list", 0, seats, seat)
    if body["i"] != i:
        fail(f"an accepted {body['move']['kind']} is acknowledged at record {i}", body["i"], i, body["i"])
    if body["prev"] != j.ctx.h(i):
        fail(f"an accepted {body['move']['kind']} is signed over record {i}", i, j.ctx.h(i), body["prev"])


def accepted_action(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """The ack of an accepted action is the signed head of the record holding it."""
    i = body["i"]
    rec = j.log[i]
    want = {"action": body["move"], "psig": {"prev": body["prev"], "sig": body["psig"]}}
    found = {k: rec.get(k) for k in want}
    if rec["type"] != "action" or not same(found, want):
        fail(f"the server accepted this move as record {i}; the transcript's record {i} is another", i, want, found)
    if i == 0 or body["prev"] != j.ctx.h(i - 1):
        fail(f"the accepted move is signed over another record than record {i - 1}", i, j.ctx.h(i - 1), body["prev"])
    made_after_it_arrived(j, body, i)
    return "checked"


def made_after_it_arrived(j: Judge, body: Mapping[str, Any], record: int) -> None:
    """§15.7: the record holding an accepted move (the action's own record, the
    commitments' record 1, the reveals' record 2) is not dated before the move
    arrived.  A house that dates it earlier moves back the start of the window or
    turn that runs from it, and its clock charges a seat early while every window in
    the log looks whole; its own signed ``arrived`` refutes it."""
    t = j.log[record]["t"]
    if t < body["arrived"]:
        fail(
            f"record {record} holds seat {body['seat']}'s {body['move']['kind']}, which the server acknowledged as"
            f" arriving at {body['arrived']}, but is dated {body['arrived'] - t} ms before it",
            record,
            f">= {body['arrived']}",
            t,
        )


ACCEPTED: Final[dict[str, Callable[[Judge, Mapping[str, Any]], Outcome]]] = {
    "commit": accepted_commit,
    "reveal": accepted_reveal,
}


def justified(j: Judge, body: Mapping[str, Any]) -> bool:
    """§15.7: a refusal is justified when the move could not be taken at record i: a
    stale ``prev`` (signed over an earlier record), or a move the rules do not allow
    there.  (A signature that is not the seat's was never judged: the ack fails,
    :func:`quotes_a_judged_move`.)"""
    i, seat, move = body["i"], body["seat"], body["move"]
    if body["prev"] != j.ctx.h(i):  # signed over an earlier record (quotes_a_judged_move)
        return True
    kind = move["kind"]
    if kind == "timeout":  # the server's own move (§9): a player cannot make one
        return True
    if kind == "commit":
        if i != 0:
            return True
        entry = _commit_of(j, seat)
        return entry is not None and entry != move["commit"]
    if kind == "reveal":
        if i != 1:
            return True
        entry = _commit_of(j, seat)
        return entry is None or player_commit(seat, bytes.fromhex(move["seed"])).hex() != entry
    state = j.ctx.after.get(i)
    if state is None or j.ctx.key is None:  # before the deal, or the void record
        return True
    try:
        apply(state, action_from_json(move), reshuffler(j.ctx.key))
    except RuleError:
        return True
    return False


def _commit_of(j: Judge, seat: int) -> str | None:
    c = j.ctx.s.commitments
    return None if c is None else next((e["commit"] for e in c["commits"] if e["seat"] == seat), None)


def seed_held_then_hidden(j: Judge, body: Mapping[str, Any], how: str) -> None:
    """§15.8: the server held this seat's seed (it accepted the reveal, or refused it
    for a reason of its own: the seed matched the commitment) and voided the hand
    before recording the reveals without revealing its own seed — a void it could
    have chosen for the deck the seeds gave."""
    if j.ctx.t["server_seed"] == "":
        fail(
            f"the server {how} seat {body['seat']}'s seed and then voided the hand before recording the reveals, "
            "without revealing its own seed: it held the seats' seeds and could know the deck, so the void "
            "could have been chosen for that deck (§15.8, D33)",
            len(j.log) - 1,
            "the server seed revealed",
            "",
        )


def owed_window(j: Judge, body: Mapping[str, Any]) -> Outcome:
    """D35: after a refusal that was the house's, the seat keeps its whole window
    from the move's arrival: no clock move, missed commitment or withheld reveal is
    charged to it before that window has passed."""
    s, seat, arrived, kind = j.ctx.s, body["seat"], body["arrived"], body["move"]["kind"]
    header, log = s.header, s.log
    if kind in ("commit", "reveal"):
        record, window = (1, header["commit_ms"]) if kind == "commit" else (2, header["reveal_ms"])
        if len(log) <= record or log[record]["type"] == "void":
            if kind == "reveal":
                seed_held_then_hidden(j, body, f"refused ({body['code']})")
            return "after_void"
        charged = (
            _commit_of(j, seat) is None
            if kind == "commit"
            else any(r["seat"] == seat and r["status"] == WITHHELD for r in s.reveals or ())
        )
        due = arrived + window
        if charged and log[record]["t"] < due:
            what = "as committing nothing" if kind == "commit" else "as withholding its reveal"
            fail(
                f"the house refused seat {seat}'s {kind} ({body['code']}) and then marked it {what} before the "
                f"whole window it owed the seat had passed (RULES.md D35)",
                record,
                f">= {due}",
                log[record]["t"],
            )
        return "checked"
    due = arrived + 1000 * header["rules"]["turn_seconds"]
    for check in OWED_TURN_CHECKS:
        check(log, body, due)
    return "checked"


def no_clock_move_before(log: list[dict[str, Any]], body: Mapping[str, Any], due: int) -> None:
    """D35: no ``timeout`` of the seat in the turn running at record ``i`` before
    ``due``, the refusal's arrival plus a whole turn."""
    seat, kind = body["seat"], body["move"]["kind"]
    for n in range(body["i"] + 1, len(log)):
        rec = log[n]
        if rec["type"] == "action" and rec["action"]["kind"] == "timeout" and rec["action"]["seat"] == seat:
            if rec["t"] < due:
                fail(
                    f"the house refused seat {seat}'s {kind} ({body['code']}) and then moved the clock for it before "
                    f"the whole turn it owed the seat had passed (RULES.md D35)",
                    n,
                    f">= {due}",
                    rec["t"],
                )
        if rec["type"] != "action" or any(e["kind"] == "turn" for e in rec["events"]):
            break


def leave_not_overtaken(log: list[dict[str, Any]], body: Mapping[str, Any], due: int) -> None:
    """D15, D35: a leave counts where it was signed, at any time; refused by the house,
    the next record it made is that seat's own move, or comes a whole turn later (else
    the house chose when the leave took effect: a declare of another seat taken first
    counts the leaver's cards instead of its 40; the audit of 2026-12-07).  The next
    record is record ``i + 1`` whatever its ``t``: ``i`` was the last record when the
    leave was judged, so one dated before ``arrived`` is no excuse (it was, until the
    audit h80: the overtaking declare dated 1 ms before the leave passed)."""
    seat = body["seat"]
    if body["move"]["kind"] != "leave":
        return
    first = body["i"] + 1
    if first >= len(log) or log[first]["type"] != "action" or log[first]["t"] >= due:
        return
    a = log[first]["action"]
    if a["seat"] != seat or a["kind"] == "timeout":
        fail(
            f"the house refused seat {seat}'s leave ({body['code']}) and then took a {a['kind']} of seat "
            f"{a['seat']} first, before the whole turn it owed the seat had passed: a leave counts where it "
            "was signed (RULES.md D15, D35)",
            first,
            f"a move of seat {seat}",
            f"{a['kind']} of seat {a['seat']}",
        )


def no_void_before(log: list[dict[str, Any]], body: Mapping[str, Any], due: int) -> None:
    """D33, D35: the house owed the seat its move; a void before ``due`` takes the move
    away (a winning declare refused "busy" and the hand voided; the audit of 2026-12-07)."""
    last = log[-1]
    if last["type"] == "void" and len(log) - 1 > body["i"] and last["t"] < due:
        fail(
            f"the house refused seat {body['seat']}'s {body['move']['kind']} ({body['code']}) and then voided the "
            f"hand before the whole turn it owed the seat had passed (RULES.md D33, D35)",
            len(log) - 1,
            f">= {due}",
            last["t"],
        )


#: What a refused action owes its seat (§15 rule 7), in the log's order of what each
#: looks at: the turn running at the refusal, the record after it, the log's end.
OWED_TURN_CHECKS: Final[tuple[Callable[[list[dict[str, Any]], Mapping[str, Any], int], None], ...]] = (
    no_clock_move_before,
    leave_not_overtaken,
    no_void_before,
)


ITEM_CHECKS: Final[dict[str, Callable[[Judge, Mapping[str, Any]], Outcome]]] = {
    "ack": check_ack,
    "head": check_head,
    "header": check_header,
    "player": check_player,
    "receipt": check_receipt,
}


# --------------------------------------------------------------------------- the check
def _counts(ctx: Ctx, items: Any) -> dict[str, int]:
    """§15: "items in the file, items applied (checked) for this hand, items for other
    hands, and items after a void" — in the report whatever the verdict."""
    counts = {"items": len(items) if type(items) is list else 0, "checked": 0, "other_hands": 0, "after_void": 0}
    ctx.summary["evidence"] = counts
    return counts


def unapplied_counts(t: Any, items: Any) -> dict[str, int]:
    """The counts of evidence no check applied (a check before ``evidence`` failed):
    nothing checked; items for other hands as far as they can be read."""
    mine = (t.get("table_id"), t.get("hand_no")) if isinstance(t, dict) else None
    listed = items if type(items) is list else []
    other = sum(
        1
        for it in listed
        if isinstance(it, dict)
        and isinstance(it.get("body"), dict)
        and (it["body"].get("table_id"), it["body"].get("hand_no")) != mine
    )
    return {"items": len(listed), "checked": 0, "other_hands": other, "after_void": 0}


def _listed(items: Any) -> list[Any]:
    if type(items) is not list:
        fail("the evidence is a JSON array of signed items (§15)", None, "an array", type(items).__name__)
    return items


def _typed_item(item: Any, n: int) -> dict[str, Any]:
    """Item ``n`` is a signed object of one of §15's forms; else it fails where it
    stands ("the first item that fails is the failure": one before it that fails
    otherwise is named first)."""
    try:
        check_evidence_item(item, ("evidence", n))
    except SchemaError as e:
        fail(
            f"evidence item {n} is not a signed item of §15: {render_path(e.path)}: {e.message}",
            None,
            e.expected,
            e.found,
        )
    return item  # type: ignore[no-any-return]


def _typed(items: Any) -> list[dict[str, Any]]:
    return [_typed_item(item, n) for n, item in enumerate(_listed(items))]


def _own_keys(items: list[Any]) -> set[str]:
    """The keys the evidence's ``player`` items name, each signed by the key it names
    (of any hand: whoever holds the file holds those keys)."""
    keys: set[str] = set()
    for item in items:
        body = item["body"]
        if item["purpose"] != "player" or body["player_key"] in keys:
            continue
        try:
            key = ed25519.strict_key(bytes.fromhex(body["player_key"]))
        except ValueError:
            continue  # its own transcript judges it
        if signature_ok(key, PROTOCOL_V2, "player", body, item["sig"]):
            keys.add(body["player_key"])
    return keys


def _no_item(ctx: Ctx, counts: dict[str, int], why: str) -> Skip:
    t = ctx.t
    if ctx.in_folder:
        # §14, a directory's evidence: a hand that seats the evidence's own key, of which
        # it holds nothing, fails as it would alone (the house dealt the player a hand it
        # never showed it, and the clock charged it: the audit h85); any other is skipped
        seated = [e["seat"] for e in ctx.s.header["seats"] if e["player_key"] in _own_keys(ctx.evidence)]
        if seated:
            fail(
                f"the evidence's player is seated in table {t['table_id']}, hand {t['hand_no']} (seat {seated[0]},"
                " the key its player items name), and the evidence holds no item of it: the player was never"
                " shown this hand, or kept nothing of it",
                None,
                f"an item of table {t['table_id']}, hand {t['hand_no']}",
                f"{counts['other_hands']} items of other hands",
            )
        return Skip(f"no item of the evidence is for table {t['table_id']}, hand {t['hand_no']}")
    fail(
        f"no item of this evidence is for table {t['table_id']}, hand {t['hand_no']}: {why}",
        None,
        f"an item of table {t['table_id']}, hand {t['hand_no']}",
        f"{counts['other_hands']} items of other hands",
    )


def check_evidence(ctx: Ctx) -> Skip | None:
    """§14.14 and §15: at least one item is for this hand, every item for this hand is
    signed by the right key and agrees with the log, and no seat was charged while
    the house owed it time."""
    if ctx.evidence is None:
        return Skip("no evidence was given (rummy-verify --receipts FILE)")
    counts = _counts(ctx, ctx.evidence)
    items = _listed(ctx.evidence)
    t = ctx.t
    j = Judge(ctx, public_key(ctx.public, "the header's public_key", 0))
    for n, raw in enumerate(items):
        item = _typed_item(raw, n)
        body, purpose = item["body"], item["purpose"]
        if body["table_id"] != t["table_id"] or body["hand_no"] != t["hand_no"]:
            if purpose == "header" and body["table_id"] == t["table_id"]:
                check_table_header(j, n, item)
            counts["other_hands"] += 1
            continue
        where = f"evidence item {n} ({purpose})"
        key = j.server
        if purpose == "player":
            key = public_key(bytes.fromhex(body["player_key"]), f"{where}: the player's key")
        if not signature_ok(key, PROTOCOL_V2, purpose, body, item["sig"]):
            signer = "the player's own key" if purpose == "player" else "the header's key"
            fail(f"{where} is not signed by {signer}", None, None, item)
        j.item = n
        try:
            counts[ITEM_CHECKS[purpose](j, body)] += 1
        except Fail as f:
            raise Fail(f"{where}: {f.message}", f.record, f.expected, f.found) from None
    if counts["checked"] + counts["after_void"] == 0:
        return _no_item(ctx, counts, "evidence that proves nothing does not pass")
    if counts["checked"] == 0:  # §15 rule 8: applies to nothing, so it is skipped, never passed
        return Skip(
            f"every item of the evidence for table {t['table_id']}, hand {t['hand_no']} is for a record"
            f" the void came before ({counts['after_void']} items): nothing could be checked"
        )
    return None


def check_evidence_v1(ctx: Ctx) -> Skip | None:
    """Appendix C: evidence given for a rummy-pf/v1 transcript always fails — an item
    of this hand is rummy-pf/v2 evidence, which refutes a v1 copy of the hand (a
    downgrade); evidence with no item of this hand proves nothing."""
    if ctx.evidence is None:
        return Skip(f"no evidence was given ({PROTOCOL_V1} hands have no player evidence)")
    counts = _counts(ctx, ctx.evidence)
    items = _typed(ctx.evidence)
    t = ctx.t
    mine = [
        n
        for n, it in enumerate(items)
        if (it["body"]["table_id"], it["body"]["hand_no"]) == (t["table_id"], t["hand_no"])
    ]
    counts["other_hands"] = len(items) - len(mine)
    if not mine:
        return _no_item(ctx, counts, f"evidence for a {PROTOCOL_V1} transcript proves nothing")
    fail(
        f"evidence item {mine[0]} is {PROTOCOL_V2} evidence of this table and hand: it refutes this {PROTOCOL_V1} "
        "copy of the hand (a downgrade: a v1 transcript carries no player signatures, so a server could re-publish "
        f"a {PROTOCOL_V2} hand as {PROTOCOL_V1} to escape the player checks)",
        None,
        PROTOCOL_V2,
        PROTOCOL_V1,
    )
