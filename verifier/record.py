"""Writing a hand's log as it is played (rummy-pf/v2, docs/fairness.md §9–§12, §15).

:class:`HandRecorder` is the one writer of records: the server uses it for live hands
and to rebuild a hand from its stored records (:meth:`HandRecorder.restore` feeds
each stored record through the very method that made it, and fails if the record it
makes is not the stored one), and the vector generator uses it to write the test
vectors.  It checks every player's signature (strictly, §9) before a move becomes a
record, and it signs the acks and heads the server hands to players (§15).

The records, in order: the signed header (record 0), the signed commitment list, the
reveals, the deal, then one record per action; a ``void`` record may end the log at
any point (D33).  Every record carries ``"t"`` (ms) and its chain link ``"h"``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from verifier import ed25519
from verifier.cards import face_texts
from verifier.chain import (
    GENESIS,
    NO_COMMIT,
    REVEALED,
    WITHHELD,
    ack_body,
    chain_link,
    commit_move,
    head_body,
    move_body,
    reveal_move,
    start_hand,
)
from verifier.errors import RuleError
from verifier.fairness import PROTOCOL_V2, Encode, canonical, player_commit, reshuffler, rules_id, server_commit
from verifier.hand import Action, Event, HandState, Phase, TableRules, TimeOut, action_from_json, action_to_json
from verifier.hand import apply as apply_action
from verifier.recordlog import Decode, RecordLog
from verifier.signing import Signer, signed_message

PROTOCOL: Final = PROTOCOL_V2
#: stands for the log in a transcript's body while its text is made (a control
#: character: no other field of a transcript holds one, so it is found exactly once)
_LOG_MARK: Final = "\x00log"


class RestoreError(Exception):
    """A stored record is not what replaying the log makes of it (D33)."""

    def __init__(self, i: int, message: str) -> None:
        super().__init__(f"record {i}: {message}")
        self.i = i
        self.message = message


def _same(made: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    try:
        return canonical(made) == canonical(stored)
    except ValueError:
        return False


def player_signature_ok(
    key: Ed25519PublicKey, body: Mapping[str, Any], sig_hex: Any, encode: Encode = canonical
) -> bool:
    """A player's move signature, strictly (§9)."""
    if not isinstance(sig_hex, str) or len(sig_hex) != 128:
        return False
    return ed25519.verify_hex(key, sig_hex, signed_message("move", body, PROTOCOL, encode))


@dataclass
class HandRecorder:
    """Builds a hand's records and transcript.  ``seats`` are (seat, player_id,
    player_key) of the seats in the hand; ``commit_ms``/``reveal_ms`` the seed
    windows announced in the header; ``encode`` the canonical JSON encoder of chain
    links and signed bodies (:func:`canonical`, or the server's byte-identical one)."""

    signer: Signer
    table_id: str
    hand_no: int
    rules: TableRules
    seats: Sequence[tuple[int, str, bytes]]
    dealer: int
    server_seed: bytes
    prev_head: str = GENESIS
    commit_ms: int = 10_000
    reveal_ms: int = 10_000
    #: the hand's records (all but the newest held as their packed canonical JSON; the
    #: server forgets the stored ones it does not need and fills them back: forget_stored, fill)
    records: RecordLog = field(default_factory=RecordLog)
    header: dict[str, Any] = field(default_factory=dict)
    reveals: list[dict[str, Any]] = field(default_factory=list)
    key: bytes = b""
    deck: list[int] = field(default_factory=list)
    state: HandState | None = None
    _player_keys: dict[int, Ed25519PublicKey] = field(default_factory=dict, repr=False)
    # digests of (seat, prev, move, signature) of the commitments and reveals this
    # recorder has checked (each is checked when sent and again as its record is made);
    # an action's is checked once and not remembered (see trust())
    _verified: set[bytes] = field(default_factory=set, repr=False)
    # the recorder of this hand that trust() lends its records to, while a reload replays
    _trusted: HandRecorder | None = field(default=None, repr=False, compare=False)
    # the record _link made last and the head it was linked to: accept() need not hash it again
    _linked: tuple[dict[str, Any], str] | None = field(default=None, repr=False)
    # the action check_signed checked last (seat, prev, canonical move, signature): prepare
    # need not check that very move again
    _signed: tuple[int, str, bytes, Any] | None = field(default=None, repr=False)
    encode: Encode = field(default=canonical, repr=False, compare=False)
    #: a faster check of a player's signature (raw key, hex signature, signed message),
    #: which may say True only where the strict check (§9) accepts: on its False the
    #: strict check decides (the server's libsodium, service.fastsig)
    accepts: Callable[[bytes, str, bytes], bool] | None = field(default=None, repr=False, compare=False)
    _raw_keys: dict[int, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        """Every player key strict, and one key in at most one seat (§9, §13): the
        server never opens a hand the verifier would refuse (ValueError)."""
        self.seats = sorted(self.seats)
        keys = [bytes(k) for _, _, k in self.seats]
        if len(set(keys)) != len(keys):
            raise ValueError("one player key is listed for two seats of the hand (§13)")
        self._player_keys = {s: ed25519.strict_key(k) for s, _, k in self.seats}
        self._raw_keys = {s: bytes(k) for s, _, k in self.seats}
        if not self.records:
            self.records = RecordLog(self.encode)

    @classmethod
    def from_header(
        cls,
        signer: Signer,
        header: Mapping[str, Any],
        server_seed: bytes,
        encode: Encode = canonical,
        accepts: Callable[[bytes, str, bytes], bool] | None = None,
    ) -> HandRecorder:
        """A recorder for the hand a stored header opened, ready to :meth:`restore`
        its records (record 0 included)."""
        try:
            return cls(
                signer=signer,
                table_id=str(header["table_id"]),
                hand_no=int(header["hand_no"]),
                rules=TableRules.from_json(header["rules"]),
                seats=[(int(s["seat"]), str(s["player_id"]), bytes.fromhex(s["player_key"])) for s in header["seats"]],
                dealer=int(header["dealer"]),
                server_seed=server_seed,
                prev_head=str(header["prev_head"]),
                commit_ms=int(header["commit_ms"]),
                reveal_ms=int(header["reveal_ms"]),
                encode=encode,
                accepts=accepts,
            )
        except (KeyError, TypeError, ValueError, RuleError) as e:
            raise RestoreError(0, f"the stored header is malformed: {e!r}") from None

    # -- the chain -----------------------------------------------------------------
    @property
    def head(self) -> str:
        newest = self.records.newest()
        return self.prev_head if newest is None else str(newest["h"])

    @property
    def voided(self) -> bool:
        newest = self.records.newest()
        return newest is not None and newest["type"] == "void"

    @property
    def ended(self) -> bool:
        """Nothing more will be recorded: the hand ended, or it is void."""
        return self.voided or (self.state is not None and self.state.phase is Phase.ENDED)

    @property
    def seat_numbers(self) -> list[int]:
        return [s for s, _, _ in self.seats]

    def _link(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record numbered and chained after the current head (not yet added)."""
        record = dict(record)
        record["i"] = len(self.records)
        record["h"] = chain_link(self.head, record, self.encode)
        self._linked = (record, self.head)
        return record

    def _append(self, record: dict[str, Any]) -> dict[str, Any]:
        record = self._link(record)
        self.records.append(record)
        return record

    def _need(self, n: int, what: str) -> None:
        if len(self.records) != n or self.voided:
            raise RuleError("wrong_phase", f"{what} comes as record {n}; the log holds {len(self.records)} records")

    def _seat_key(self, seat: int) -> Ed25519PublicKey:
        key = self._player_keys.get(seat)
        if key is None:
            raise RuleError("not_in_hand", f"seat {seat} takes no part in this hand", rule="D2")
        return key

    def _check_signature(self, seat: int, prev: str, move: Mapping[str, Any], sig: Any) -> None:
        """A commitment's or a reveal's signature, checked once and remembered."""
        done = self._checked_key(seat, prev, move, sig)
        if done not in self._verified:
            self._verify(seat, prev, move, sig)
            self._verified.add(done)

    def _verify(self, seat: int, prev: str, move: Mapping[str, Any], sig: Any) -> None:
        body = move_body(self.table_id, self.hand_no, prev, move)
        key = self._seat_key(seat)
        fast = self.accepts
        if fast is not None and isinstance(sig, str):
            if fast(self._raw_keys[seat], sig, signed_message("move", body, PROTOCOL, self.encode)):
                return
        if not player_signature_ok(key, body, sig, self.encode):
            raise RuleError("bad_signature", f"the {move['kind']} is not signed by seat {seat}'s player key")

    def knows(self, h: object) -> bool:
        """Whether ``h`` is the chain link of a record of this hand's log (§15: a table
        judges only a move signed over a record that exists)."""
        return self.records.index_of(h) is not None

    def check_signed(self, seat: int, prev: str, move: Mapping[str, Any], sig: Any) -> None:
        """A move's signature by its seat's player over ``prev`` (§9), checked before the
        table judges the move: a table judges, and acknowledges, only a move its
        player signed (§15), so a client cannot have the server sign an ack quoting a
        signature that is not the player's.  A commitment's or a reveal's is remembered
        as ever; an action's until the next, for :meth:`prepare`."""
        if move.get("kind") in ("commit", "reveal"):
            self._check_signature(seat, prev, move, sig)
            return
        self._verify(seat, prev, move, sig)
        self._signed = (seat, prev, self.encode(move), sig)

    def _check_action_signature(self, seat: int, prev: str, move: Mapping[str, Any], sig: Any) -> None:
        """An action's signature, for the record this recorder makes next: checked,
        unless the trusted recorder (a reload's, :meth:`trust`) holds that very record
        with that very move and signature.  Not remembered: an action is checked once,
        and a hand in progress kept a digest for each of its moves (about 0.8 MB a
        worker at 2,000 seats) for a reload that rarely comes."""
        signed = self._signed
        if signed is not None and signed[0] == seat and signed[1] == prev and signed[3] == sig:
            if isinstance(sig, str) and signed[2] == self.encode(move):  # checked as the table judged it
                return
        other = self._trusted
        i = len(self.records)
        mine = other.records.get(i) if other is not None and isinstance(sig, str) else None  # None: forgotten
        if mine is not None:
            if mine.get("type") == "action" and mine.get("psig") == {"prev": prev, "sig": sig}:
                if mine.get("action") == move and self.encode(mine["action"]) == self.encode(move):
                    return
        self._verify(seat, prev, move, sig)

    def _checked_key(self, seat: int, prev: str, move: Mapping[str, Any], sig: Any) -> bytes:
        """What :attr:`_verified` remembers of a checked signature: a digest of (seat,
        prev, move, signature), each part length-prefixed, not the strings themselves
        (a commitment's or reveal's; an action's is not remembered).  Any ``sig`` a client
        sends digests, a lone surrogate too: it is refused by the check, not here."""
        h = hashlib.blake2b(digest_size=32)
        for part in (
            str(seat).encode(),
            self.encode(move),
            *(str(x).encode("utf-8", "surrogatepass") for x in (prev, sig)),
        ):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
        return h.digest()

    def trust(self, other: HandRecorder | None) -> None:
        """Take on trust the player signatures ``other`` — a recorder of the same hand,
        with the same seats and keys, in this process — has checked: a table that
        reloads its hand after a failed write replays its own moves without verifying
        each signature again.  Only exactly the same seat, ``prev``, move and signature
        is trusted — a commitment or reveal ``other`` checked, an action record ``other``
        holds at the same place in the log; anything else stored is checked as ever.
        ``None`` ends the trust in records (the replay is done: no recorder is kept
        alive by the next, reload after reload)."""
        if other is None:
            self._trusted = None
        elif (other.table_id, other.hand_no, list(other.seats)) == (self.table_id, self.hand_no, list(self.seats)):
            self._verified |= other._verified
            self._trusted = other

    # -- record 0: the header --------------------------------------------------------
    def open(self, t: int) -> dict[str, Any]:
        """Record 0: the signed header with ``commit_S`` (§10 step 1)."""
        self._need(0, "the header")
        rules = self.rules.to_json()
        self.header = {
            "protocol": PROTOCOL,
            "table_id": self.table_id,
            "hand_no": self.hand_no,
            "rules": rules,
            "rules_id": rules_id(rules),
            "seats": [{"seat": s, "player_id": p, "player_key": k.hex()} for s, p, k in self.seats],
            "dealer": self.dealer,
            "commit_s": server_commit(self.server_seed).hex(),
            "prev_head": self.prev_head,
            "public_key": self.signer.public_bytes.hex(),
            "commit_ms": self.commit_ms,
            "reveal_ms": self.reveal_ms,
        }
        sig = self.signer.sign("header", self.header, PROTOCOL)
        return self._append({"type": "header", "header": self.header, "sig": sig, "t": t})

    # -- record 1: commitments -------------------------------------------------------
    def check_commit(self, seat: int, commit: bytes, psig: str) -> None:
        """A player's signed commitment, checked (the table acknowledges it once stored)."""
        self._need(1, "a commitment")
        self._check_signature(seat, str(self.records[0]["h"]), commit_move(seat, commit), psig)

    def commitments(self, commits: Mapping[int, tuple[bytes, str]], t: int) -> dict[str, Any]:
        """Record 1: every seat's (commitment, player signature), or null for a seat
        that sent none in time; signed by the server."""
        self._need(1, "the commitment list")
        prev = str(self.records[0]["h"])
        entries = []
        for s in self.seat_numbers:
            if s in commits:
                c, psig = commits[s]
                self._check_signature(s, prev, commit_move(s, c), psig)
                entries.append({"seat": s, "commit": c.hex(), "psig": psig})
            else:
                entries.append({"seat": s, "commit": None, "psig": None})
        body = {"table_id": self.table_id, "hand_no": self.hand_no, "commits": entries}
        sig = self.signer.sign("commitments", body, PROTOCOL)
        return self._append({"type": "commitments", "commitments": body, "sig": sig, "t": t})

    def commit_of(self, seat: int) -> bytes | None:
        if len(self.records) < 2 or self.records[1].get("type") != "commitments":
            return None  # (record 1 is a void when the hand was voided in its commit window, D33, D36)
        for c in self.records[1]["commitments"]["commits"]:
            if c["seat"] == seat and c["commit"] is not None:
                return bytes.fromhex(c["commit"])
        return None

    # -- record 2: reveals -----------------------------------------------------------
    def check_reveal(self, seat: int, seed: bytes, psig: str) -> None:
        """A player's signed seed, checked against its commitment (the table
        acknowledges it once stored)."""
        self._need(2, "a reveal")
        commit = self.commit_of(seat)
        if commit is None:
            raise RuleError("not_committed", "you sent no commitment, so you play with the empty seed", rule="D21")
        if player_commit(seat, seed) != commit:
            raise RuleError("seed_mismatch", "that seed does not match your commitment")
        self._check_signature(seat, str(self.records[1]["h"]), reveal_move(seat, seed), psig)

    def reveal(self, seeds: Mapping[int, tuple[bytes, str]], t: int) -> dict[str, Any]:
        """Record 2: a seat with no commitment takes part with the empty seed; a seat
        that committed but revealed nothing matching withholds and sits out (D29)."""
        self._need(2, "the reveals")
        prev = str(self.records[1]["h"])
        reveals: list[dict[str, Any]] = []
        for s in self.seat_numbers:
            c = self.commit_of(s)
            got = seeds.get(s)
            if c is None:
                reveals.append({"seat": s, "seed": "", "status": NO_COMMIT, "psig": None})
            elif got is not None and player_commit(s, got[0]) == c:
                self._check_signature(s, prev, reveal_move(s, got[0]), got[1])
                reveals.append({"seat": s, "seed": got[0].hex(), "status": REVEALED, "psig": got[1]})
            else:
                reveals.append({"seat": s, "seed": "", "status": WITHHELD, "psig": None})
        self.reveals = reveals
        return self._append({"type": "reveals", "reveals": reveals, "t": t})

    # -- record 3: the deal ----------------------------------------------------------
    def deal(self, t: int) -> tuple[dict[str, Any], list[Event]]:
        """Record 3: the deal from the derived deck, or a void when no seat is dealt
        in (D29)."""
        self._need(3, "the deal")
        self.key, self.deck, self.state, events = start_hand(self.header, self.reveals, self.server_seed)
        if self.state is None:
            return self.void("no seat was dealt in: every seat withheld its reveal (D29)", t), []
        return self._append({"type": "deal", "events": [e.to_json() for e in events], "t": t}), events

    # -- records 4…: actions ---------------------------------------------------------
    def check_fresh(self, action: Action, psig: Mapping[str, Any] | None) -> None:
        """A player's move signed over another record than the newest is ``stale_head``
        before the rules judge it: the rules would judge it in a state the player did
        not sign for (a move sent again after it was stored is stale, not "not your
        turn").  A signature that is not ``{prev, sig}`` is :meth:`check_move`'s."""
        if isinstance(action, TimeOut) or not isinstance(psig, Mapping) or "prev" not in psig:
            return
        if psig["prev"] != self.head:  # a leave too: it is recorded where it was signed (§9)
            raise RuleError("stale_head", f"the move must be signed over the current head {self.head}")

    def check_move(self, action: Action, psig: Mapping[str, Any] | None) -> None:
        """The player's signature on an action (§9); the clock's moves carry none."""
        if isinstance(action, TimeOut):
            if psig is not None:
                raise RuleError("bad_signature", "a clock move carries no player signature")
            return
        if not isinstance(psig, Mapping) or set(psig) != {"prev", "sig"}:
            raise RuleError("bad_signature", "a move carries the player's signature: {prev, sig}")
        self.check_fresh(action, psig)  # prepare checked it first; here for a caller of this check alone
        self._check_action_signature(action.seat, str(psig["prev"]), action_to_json(action), psig["sig"])

    def prepare(
        self, action: Action, psig: Mapping[str, Any] | None, t: int
    ) -> tuple[HandState, dict[str, Any], list[Event]]:
        """The state, chained record and events one action would give, changing
        nothing (raises RuleError if the move is illegal or badly signed).  The server
        stores the record, then calls :meth:`accept`."""
        if self.state is None or self.voided or len(self.records) < 4:
            raise RuleError("wrong_phase", "actions come after the deal")
        self.check_fresh(action, psig)  # judged in the state it was signed for, or not at all
        state, events = apply_action(self.state, action, reshuffler(self.key))
        self.check_move(action, psig)
        record: dict[str, Any] = {
            "type": "action",
            "action": action_to_json(action),
            "psig": None if psig is None else {"prev": psig["prev"], "sig": psig["sig"]},
            "events": [e.to_json() for e in events],
            "t": t,
        }
        return state, self._link(record), events

    def accept(self, state: HandState, record: dict[str, Any]) -> None:
        linked_here = self._linked is not None and self._linked[0] is record and self._linked[1] == self.head
        if record["i"] != len(self.records) or (
            not linked_here and chain_link(self.head, record, self.encode) != record["h"]
        ):
            raise RuntimeError("the record does not follow the current head")
        self.records.append(record)
        self.state = state

    def act(self, action: Action, psig: Mapping[str, Any] | None, t: int) -> tuple[dict[str, Any], list[Event]]:
        state, record, events = self.prepare(action, psig, t)
        self.accept(state, record)
        return record, events

    # -- the end -----------------------------------------------------------------------
    def void(self, reason: str, t: int) -> dict[str, Any]:
        """A void record ends the log (D33): nobody is charged."""
        if self.voided:
            raise RuleError("wrong_phase", "the hand is already void")
        if self.state is not None and self.state.phase is Phase.ENDED:
            raise RuleError("hand_over", "the hand has ended; it cannot be voided")
        if not self.records:
            raise RuleError("wrong_phase", "a hand is voided after its header")
        return self._append({"type": "void", "reason": reason, "t": t})

    def transcript(self, *, seed_revealed: bool = True) -> dict[str, Any]:
        """The signed transcript (§12).  The server seed is revealed unless the hand
        was voided before its reveals and the seed could not be opened (D33): once
        the reveals are recorded it is always published (``seed_revealed`` is then
        ignored; a seed this recorder does not hold is published as "", which fails
        ``format``: the truth)."""
        body = self.transcript_body(seed_revealed)
        body["log"] = list(self.records)
        body["signature"] = self.signer.sign("transcript", body, PROTOCOL)
        return body

    def transcript_text(
        self,
        stored: Sequence[bytes] = (),
        *,
        seed_revealed: bool = True,
        decode: Decode = json.loads,
        each: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> bytes:
        """The signed transcript as its canonical JSON, byte for byte
        ``encode(transcript())``, made record by record: no dict of the whole log is
        ever held (the server publishes a hand this way).  The records memory forgot
        come from ``stored``, their text as the store gave it back, and are taken
        only if they are exactly those records: numbered in order, each linked to
        the one before (§11), the one after them linked to the last; else
        ValueError.  ``each`` is shown every record, in order."""
        log = b"[" + b",".join(self._log_texts(stored, decode, each)) + b"]"
        body = self.transcript_body(seed_revealed)
        body["log"] = _LOG_MARK
        signature = self.signer.sign_text("transcript", self._with_log(body, log), PROTOCOL)
        body["signature"] = signature
        return self._with_log(body, log)

    def transcript_body(self, seed_revealed: bool = True) -> dict[str, Any]:
        """The transcript's body (§12) but its log and signature."""
        if not self.ended:
            raise RuntimeError("the transcript is published when the hand has ended")
        seed_revealed = seed_revealed or self._reveals_recorded
        result = None
        if not self.voided and self.state is not None and self.state.result is not None:
            r = self.state.result
            result = {
                "winner": r.winner,
                "reason": r.reason,
                "points": {str(s): p for s, p in sorted(r.settlement.points.items())},
                "settlement": r.settlement.to_json(),
            }
        deck: list[int] = []
        if seed_revealed and self._reveals_recorded and self.server_seed:
            if not self.deck:  # voided after the reveals, before the deal
                self.key, self.deck, _, _ = start_hand(self.header, self.reveals, self.server_seed)
            deck = list(self.deck)
        faces = face_texts(self.rules.decks)
        return {
            "protocol": PROTOCOL,
            "table_id": self.table_id,
            "hand_no": self.hand_no,
            "head": self.head,
            "server_seed": self.server_seed.hex() if seed_revealed else "",
            "deck": deck,
            "deck_faces": [faces[c] for c in deck],
            "result": result,
        }

    def _with_log(self, body: Mapping[str, Any], log: bytes) -> bytes:
        """``body``'s canonical JSON with ``log`` (a list's canonical JSON) where its
        log stands (:data:`_LOG_MARK`)."""
        parts = self.encode(body).split(self.encode(_LOG_MARK))
        if len(parts) != 2:
            raise RuntimeError("the transcript's log mark is not found exactly once")
        return parts[0] + log + parts[1]

    def _log_texts(
        self, stored: Sequence[bytes], decode: Decode, each: Callable[[Mapping[str, Any]], None] | None
    ) -> list[bytes]:
        """Every record's canonical JSON, in order; the forgotten ones from ``stored``
        (checked as :meth:`fill` checks them, one at a time: ValueError)."""
        records, gone = self.records, self.records.forgotten
        if len(stored) != len(gone):
            raise ValueError(f"{len(gone)} records were forgotten; the store gave back {len(stored)}")
        out: list[bytes] = []
        prev = ""
        for i in range(len(records)):
            if i in gone:
                r = self._stored_record(i, prev, stored[i - gone.start], decode)
            else:
                r = records[i]
                if gone and i == gone.stop:
                    self._linked_after(r, prev)
            prev = str(r["h"])
            if each is not None:
                each(r)
            out.append(self.encode(r))
        return out

    def _stored_record(self, i: int, prev: str, text: bytes, decode: Decode) -> dict[str, Any]:
        try:
            r = decode(bytes(text))
        except ValueError as e:
            raise ValueError(f"stored record {i} is not JSON: {e}") from None
        if not isinstance(r, dict) or r.get("i") != i:
            raise ValueError(f"the store gave back another record where record {i} was")
        self._linked_stored(i, prev, r)
        return r

    def _linked_stored(self, i: int, prev: str, r: Mapping[str, Any]) -> str:
        """Stored record ``i`` linked to ``prev`` (§11), or ValueError: its link."""
        try:
            linked = r.get("h") == chain_link(prev, r, self.encode)
        except (TypeError, ValueError, OverflowError) as e:  # not canonical JSON: a float, a big number
            raise ValueError(f"stored record {i} cannot be encoded: {e}") from None
        if not linked:
            raise ValueError(f"stored record {i} is not linked to the record before it")
        return str(r["h"])

    def _linked_after(self, after: Mapping[str, Any], prev: str) -> None:
        """The record held after the stored ones linked to the last of them (``prev``), or ValueError."""
        if after["h"] != chain_link(prev, after, self.encode):
            raise ValueError(f"record {after['i']} is not linked to the stored record before it")

    @property
    def _reveals_recorded(self) -> bool:
        return len(self.records) > 2 and self.records[2]["type"] == "reveals"

    # -- evidence for players (§15) --------------------------------------------------
    def ack(
        self,
        seat: int,
        move: Mapping[str, Any],
        prev: str,
        psig: str,
        *,
        arrived: int,
        code: str | None = None,
        i: int | None = None,
        h: str | None = None,
    ) -> dict[str, Any]:
        """The server's signed acknowledgement of a move the table judged (§15):
        accepted (``code`` None) or refused with ``code``.  ``i``: the record holding
        an accepted action (the ack is then also that record's signed head); by
        default the last record of the log.  ``arrived``: the table's clock when it
        judged the move, never before that record's ``t``.  ``h``: record ``i``'s link,
        when the caller holds it (the log may have forgotten an older record)."""
        n = len(self.records) - 1 if i is None else i
        body = ack_body(
            self.table_id,
            self.hand_no,
            seat,
            move,
            prev,
            psig,
            i=n,
            h=str(self.records[n]["h"]) if h is None else h,
            arrived=arrived,
            code=code,
        )
        return {"purpose": "ack", "body": body, "sig": self.signer.sign("ack", body, PROTOCOL)}

    def head_evidence(self, i: int, h: str | None = None) -> dict[str, Any]:
        """Record ``i``'s signed head (§15); ``h`` its link, when the caller holds it."""
        body = head_body(self.table_id, self.hand_no, i, str(self.records[i]["h"]) if h is None else h)
        return {"purpose": "head", "body": body, "sig": self.signer.sign("head", body, PROTOCOL)}

    # -- records kept by the store ---------------------------------------------------
    def forget_stored(self, stored: int, recent: int) -> None:
        """Forget the action records the store holds (those numbered below ``stored``),
        all but the newest ``recent`` of the log (:meth:`RecordLog.forget`)."""
        self.records.forget(min(stored, len(self.records) - recent))

    def fill(self, stored: Sequence[Mapping[str, Any]]) -> None:
        """Hold again the forgotten records, as the store gave them back: they must be
        exactly those records — numbered in order, each linked to the one before
        (§11), the first to the record before them and the record after them to the
        last — or ValueError and nothing changes."""
        gone = self.records.forgotten
        if not gone:
            return
        want = [r for r in stored if isinstance(r, Mapping) and r.get("i") in gone]
        if [r.get("i") for r in want] != list(gone):
            got = [r.get("i") for r in want]
            shown = ", ".join(map(str, got[:6])) + (", …" if len(got) > 6 else "")
            wanted = f"{gone.start}–{gone.stop - 1} in order"
            raise ValueError(f"the store gave back {len(got)} records ({shown}), not {wanted}")
        prev = str(self.records[gone.start - 1]["h"])
        for r in want:
            prev = self._linked_stored(int(r["i"]), prev, r)
        self._linked_after(self.records[gone.stop], prev)
        self.records.fill([dict(r) for r in want])

    # -- rebuilding from a stored log (D32) ------------------------------------------
    def adopt(self, stored: Sequence[Mapping[str, Any]]) -> None:
        """Take stored records as they are, as far as their chain links hold, when the
        server seed cannot be opened and nothing can be replayed: the hand can only be
        voided (D33), and its transcript will not reveal the seed."""
        if self.records:
            raise RuntimeError("adopt starts from an empty log")
        for n, r in enumerate(stored):
            if r.get("i") != n or r.get("h") != chain_link(self.head, r) or (n == 0) != (r.get("type") == "header"):
                break
            self.records.append(dict(r))
            if r.get("type") == "void":
                break
        if self.records:
            self.header = dict(self.records[0]["header"])

    def restore(self, stored: Mapping[str, Any]) -> list[Event]:
        """Feed one stored record through the method that made it; raise
        :class:`RestoreError` unless the record it makes is exactly the stored one.
        Returns the record's events (for a deal or an action)."""
        i = len(self.records)
        kind = stored.get("type")
        events: list[Event] = []
        t = stored.get("t")
        if not isinstance(t, int) or isinstance(t, bool):
            raise RestoreError(i, "the stored record has no time")
        try:
            if kind == "void":
                made = self.void(str(stored.get("reason")), t)
            elif i == 0 and kind == "header":
                made = self.open(t)
            elif i == 1 and kind == "commitments":
                made = self.commitments(
                    {
                        int(c["seat"]): (bytes.fromhex(c["commit"]), str(c["psig"]))
                        for c in stored["commitments"]["commits"]
                        if c["commit"] is not None
                    },
                    t,
                )
            elif i == 2 and kind == "reveals":
                made = self.reveal(
                    {
                        int(r["seat"]): (bytes.fromhex(r["seed"]), str(r["psig"]))
                        for r in stored["reveals"]
                        if r["status"] == REVEALED
                    },
                    t,
                )
            elif i == 3 and kind == "deal":
                made, events = self.deal(t)
            elif i >= 4 and kind == "action":
                state, made, events = self.prepare(action_from_json(stored["action"]), stored.get("psig"), t)
                if _same(made, stored):
                    self.accept(state, made)
            else:
                raise RestoreError(i, f"a {kind!r} record cannot come here")
        except RuleError as e:
            raise RestoreError(i, f"it does not replay: {e}") from None
        except (KeyError, TypeError, ValueError) as e:
            raise RestoreError(i, f"it is malformed: {e!r}") from None
        if not _same(made, stored) or len(self.records) != i + 1:
            if len(self.records) == i + 1:
                self.records.pop()  # keep the log at the verified prefix
            raise RestoreError(i, "the stored record differs from the one its log makes")
        return events
