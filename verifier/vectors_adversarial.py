"""Adversarial vectors (``verifier/vectors/adversarial/*.json``): what a dishonest
server makes of a hand, and the verdict a rummy-pf/v2 verifier must give
(docs/fairness.md §9–§15, issue 16).

The forger holds the server's key — the vectors' test key — and nothing else: it
re-signs headers, commitment lists and transcripts and re-chains logs, but it cannot
sign for a player, except under a key that lets anyone (a small-order key) or a key
it substituted for the player's.  Each file says in ``_about.expect`` what to run and
what must happen:

- ``{"transcript", "evidence"?}`` files: ``allow_v1`` (run with ``--allow-v1``),
  ``with_evidence`` (give the file's ``evidence`` as ``--receipts``), then ``ok``
  and, when it fails, the failing ``check`` (and ``record`` where one is named), and
  the ``warnings`` of a passing verdict;
- ``{"folder", "evidence"?}`` files: write each transcript of ``folder`` to a
  directory and run ``rummy-verify DIR`` (``allow_v1``, ``with_evidence`` as above;
  with ``--key`` and the vectors' key, save when ``unpinned`` is true: hands signed
  by two keys, each verified under its own header's);
  ``failed`` maps each file that must fail to its check, ``findings`` lists the
  directory-level checks that must fail with no file (an ``evidence`` that holds no
  item of any hand of the directory).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from verifier import ed25519, vectors
from verifier.chain import chain_link, commit_move, player_body, receipt_body, reveal_move
from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2, player_commit, sha256
from verifier.hand import Action, Discard, DrawClosed, Leave, Phase, TableRules, TimeOut, action_to_json
from verifier.record import HandRecorder
from verifier.signing import Signer, signed_message
from verifier.vectors import SEED_WINDOW_MS, T0, TEST_SIGNER, VectorHand, greedy, play_hand
from verifier.vectors_strict import identity_r_signature

SUBDIR: Final = "adversarial"
GENERATOR: Final = "python -m verifier.vectors --write (verifier/vectors_adversarial.py)"
CHECKED_BY: Final = [
    "tests/test_adversarial.py (rummy-verify, as a library and as a command)",
    "the browser verifier's tests (service/web/rummypf), for the transcript files",
]
IDENTITY: Final = bytes.fromhex("01" + "00" * 31)
CONSTANT_SIG: Final = "01" + "00" * 63  # under the identity key, it verifies every message (leniently)


# --------------------------------------------------------------------------- the forger's tools
class DishonestRecorder(HandRecorder):
    """A recorder that writes what an honest one refuses: one key in two seats, any
    key at all, a leave signed over any earlier record (the rules before issue 16)."""

    def __post_init__(self) -> None:
        self.seats = sorted(self.seats)
        self._player_keys = {s: Ed25519PublicKey.from_public_bytes(k) for s, _, k in self.seats}

    def check_fresh(self, action: Action, psig: Any) -> None:
        if isinstance(action, Leave) and psig is not None and psig["prev"] in {r["h"] for r in self.records}:
            return
        super().check_fresh(action, psig)

    def check_move(self, action: Action, psig: Any) -> None:
        if isinstance(action, Leave) and psig is not None and psig["prev"] in {r["h"] for r in self.records}:
            self._verify(action.seat, str(psig["prev"]), {"kind": "leave", "seat": action.seat}, psig["sig"])
            return
        super().check_move(action, psig)


class DishonestHand(VectorHand):
    recorder = DishonestRecorder


class ConstantSigner(Signer):
    """A "key" under which one constant signature verifies every message: the
    identity point (or another encoding of it) and ``01 00…00``."""

    def __init__(self, public: bytes = IDENTITY) -> None:
        self.public_bytes = public

    def sign(self, purpose: str, obj: Any, protocol: str = PROTOCOL_V1) -> str:
        return CONSTANT_SIG


def forge(
    t: dict[str, Any],
    *,
    signer: Signer = TEST_SIGNER,
    protocol: str | None = None,
    transcript_sig: Callable[[dict[str, Any]], str] | None = None,
) -> dict[str, Any]:
    """What the server's key alone can do: re-sign the header and the commitments,
    re-chain the log and re-sign the transcript (``transcript_sig`` to sign it some
    other way).  Player signatures are left as they are: the forger cannot make them."""
    proto = protocol or t["protocol"]
    h = t["log"][0]["header"]["prev_head"]
    for rec in t["log"]:
        if rec["type"] == "header":
            rec["sig"] = signer.sign("header", rec["header"], proto)
        elif rec["type"] == "commitments":
            rec["sig"] = signer.sign("commitments", rec["commitments"], proto)
        rec["h"] = chain_link(h, rec)
        h = rec["h"]
    t["head"] = h
    body = {k: v for k, v in t.items() if k != "signature"}
    t["signature"] = transcript_sig(body) if transcript_sig else signer.sign("transcript", body, proto)
    return t


def downgrade(t2: dict[str, Any]) -> dict[str, Any]:
    """A rummy-pf/v2 hand re-published as rummy-pf/v1: player keys, player signatures,
    seed windows and the times of all but actions stripped, re-signed under the v1
    prefix with the same key (the tester's forgery of issue 16)."""
    t = copy.deepcopy(t2)
    t["protocol"] = PROTOCOL_V1
    header = t["log"][0]["header"]
    header["protocol"] = PROTOCOL_V1
    header["seats"] = [{"seat": s["seat"], "player_id": s["player_id"]} for s in header["seats"]]
    del header["commit_ms"], header["reveal_ms"]
    for rec in t["log"]:
        if rec["type"] != "action":
            rec.pop("t", None)
        else:
            rec.pop("psig", None)
    t["log"][1]["commitments"]["commits"] = [
        {"seat": c["seat"], "commit": c["commit"]} for c in t["log"][1]["commitments"]["commits"]
    ]
    t["log"][2]["reveals"] = [{k: r[k] for k in ("seat", "seed", "status")} for r in t["log"][2]["reveals"]]
    return forge(t, protocol=PROTOCOL_V1)


def s_plus_l(sig_hex: str) -> str:
    """The same signature with L added to S: the equation still holds (§9 refuses it)."""
    sig = bytes.fromhex(sig_hex)
    return (sig[:32] + (int.from_bytes(sig[32:], "little") + ed25519.L).to_bytes(32, "little")).hex()


def signed_item(signer: Signer, purpose: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"purpose": purpose, "body": body, "sig": signer.sign(purpose, body, PROTOCOL_V2)}


# --------------------------------------------------------------------------- the hands they start from
TWO = TableRules(seats=4, point_value=10, commission_bps=500)


def fresh(hand: VectorHand) -> dict[str, Any]:
    """The hand's transcript, a copy of its own to tamper with."""
    return copy.deepcopy(hand.rec.transcript())


def two_players(name: str = "adv", attempt: int = 0, *, prev_head: str | None = None) -> VectorHand:
    """A finished two-player hand (a valid declare), seat 1's evidence kept."""
    for n in range(attempt, attempt + 200):
        hand = play_hand(name, n, TWO, [1, 3], 3, greedy, prev_head=prev_head)
        if hand.rec.ended and not hand.rec.voided:
            return hand
    raise RuntimeError("no two-player hand ended")  # pragma: no cover


def first_turn_of(hand: VectorHand, seat: int) -> None:
    """Play the strategy until it is ``seat``'s turn to draw."""
    while True:
        state = hand.rec.state
        assert state is not None
        if state.turn == seat and state.phase is Phase.DRAW:
            return
        hand.act(greedy(state, state.turn))


def finish(hand: VectorHand) -> None:
    hand.play(greedy)
    assert hand.rec.ended


@dataclass
class Case:
    name: str
    what: str
    expect: dict[str, Any]
    transcript: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] | None = None
    folder: dict[str, dict[str, Any]] | None = None

    def file(self) -> dict[str, Any]:
        expect = {"allow_v1": False, "with_evidence": self.evidence is not None, **self.expect}
        out: dict[str, Any] = {
            "_about": {"what": self.what, "produced_by": GENERATOR, "checked_by": CHECKED_BY, "expect": expect}
        }
        if self.transcript is not None:
            out["transcript"] = self.transcript
        if self.folder is not None:
            out["folder"] = self.folder
        if self.evidence is not None:
            out["evidence"] = self.evidence
        return out


def failing(check: str, record: int | None = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": False, "check": check, **more}
    if record is not None:
        out["record"] = record
    return out


def passing(*warnings: str, **more: Any) -> dict[str, Any]:
    return {"ok": True, "check": None, "warnings": list(warnings), **more}


# --------------------------------------------------------------------------- the cases
def downgrades(base: VectorHand) -> list[Case]:
    v1 = downgrade(fresh(base))
    ev = base.evidence[1]
    return [
        Case(
            "downgrade-v1-refused",
            "a v2 hand re-published as rummy-pf/v1 (player keys, signatures and times stripped, re-signed under the "
            "v1 prefix with the same key): refused unless the user asks for v1 (§14 format)",
            failing("format"),
            v1,
            ev,
        ),
        Case(
            "downgrade-v1-refuted-by-evidence",
            "the same v1 copy, with --allow-v1: the player's v2 evidence of that hand refutes it (§14, Appendix C)",
            failing("evidence", allow_v1=True),
            v1,
            ev,
        ),
        Case(
            "downgrade-v1-allowed-warns",
            "the same v1 copy with --allow-v1 and no evidence: it verifies, with the warning that the server alone "
            "vouches for its moves",
            passing("v1_server_only", allow_v1=True),
            v1,
        ),
    ]


def small_order_keys() -> list[Case]:
    """Live hands as the tester played them: a seat (or the server) whose key is the
    identity point, every one of its signatures the constant one."""
    seat = 1
    player = DishonestHand(
        "adv-small-order", 0, TWO, [1, 3], 3, keys={1: ConstantSigner(), 3: vectors.player_signer("adv-small-order", 3)}
    )
    player.seed_phases()
    finish(player)
    server = DishonestHand("adv-small-server", 0, TWO, [1, 3], 3, server=ConstantSigner())
    server.seed_phases()
    finish(server)
    noncanonical = DishonestHand(
        "adv-noncanonical-server", 0, TWO, [1, 3], 3, server=ConstantSigner((ed25519.P + 1).to_bytes(32, "little"))
    )
    noncanonical.seed_phases()
    finish(noncanonical)
    return [
        Case(
            "small-order-player-key",
            f"a live hand in which the server listed the identity point as seat {seat}'s player key and signed its "
            "commit, its reveal and every one of its moves with the constant signature 01 00…00, which verifies "
            "every message under that key (§9: refused; format names the key)",
            failing("format", 0),
            player.rec.transcript(),
        ),
        Case(
            "small-order-server-key",
            "a hand whose server key is the identity point, every server signature the constant 01 00…00 (§9: format)",
            failing("format", 0),
            server.rec.transcript(),
        ),
        Case(
            "non-canonical-server-key",
            "a hand whose server key is written non-canonically (y = p + 1: the identity, read modulo p), every "
            "server signature the constant 01 00…00 (§9: format)",
            failing("format", 0),
            noncanonical.rec.transcript(),
        ),
    ]


def non_strict_signatures(base: VectorHand) -> list[Case]:
    t = forge(fresh(base), transcript_sig=lambda body: s_plus_l(TEST_SIGNER.sign("transcript", body, PROTOCOL_V2)))
    r = forge(
        fresh(base),
        transcript_sig=lambda body: identity_r_signature(
            TEST_SIGNER,
            signed_message("transcript", body, PROTOCOL_V2),
            (ed25519.P + 1).to_bytes(32, "little"),
        ).hex(),
    )
    m = fresh(base)
    last = len(m["log"]) - 1
    m["log"][last]["psig"]["sig"] = s_plus_l(m["log"][last]["psig"]["sig"])
    m = forge(m)
    return [
        Case(
            "transcript-signature-s-not-below-l",
            "the transcript signature with L added to S: the equation still holds, §9 refuses it",
            failing("signature"),
            t,
        ),
        Case(
            "transcript-signature-r-non-canonical",
            "a transcript signature whose R is the identity written with y = p + 1 and S = k·a (the server knows "
            "its own scalar): the equation holds when y is read modulo p; §9 refuses it",
            failing("signature"),
            r,
        ),
        Case(
            "move-signature-s-not-below-l",
            "the last move's player signature with L added to S (the same signature to a lenient verifier), the log "
            "re-chained and re-signed",
            failing("player_signatures", last),
            m,
        ),
    ]


def first_hand_chain() -> list[Case]:
    prev = sha256(b"a hand before hand 1").hex()
    hand = two_players("adv-chain", prev_head=prev)
    nxt = two_players("adv-chain", hand.rec.hand_no, prev_head=str(hand.rec.head))
    assert hand.rec.hand_no == 1
    return [
        Case(
            "first-hand-not-from-zeros",
            "hand 1 of a table whose header names a non-zero prev_head (the players signed over it as shown): a "
            "table's first hand chains from 64 zeros (§11, §14 chain, for a single file too)",
            failing("chain", 0),
            hand.rec.transcript(),
        ),
        Case(
            "folder-first-hand-not-from-zeros",
            "a table's hand 1 (chained from a non-zero prev_head) and the hand after it",
            {"allow_v1": False, "failed": {"hand-1.json": "chain"}, "findings": []},
            folder={"hand-1.json": hand.rec.transcript(), f"hand-{nxt.rec.hand_no}.json": nxt.rec.transcript()},
        ),
        Case(
            "first-hand-dealt-by-a-higher-seat",
            "hand 1 of a table (seats 1 and 3) dealt by seat 3, so seat 1 plays first: nothing before a table's first "
            "hand moves the button, so its lowest seat deals it (RULES.md D3; §14 chain, for a single file too)",
            failing("chain", 0),
            play_hand("adv-first-dealer", 0, TWO, [1, 3], 3, greedy, hand_no=1).rec.transcript(),
        ),
        Case(
            "first-hand-dealt-by-its-lowest-seat",
            "the same table's hand 1 dealt by seat 1, its lowest seat (RULES.md D3)",
            passing(),
            play_hand("adv-first-dealer", 0, TWO, [1, 3], 1, greedy).rec.transcript(),
        ),
    ]


def evidence_binding(base: VectorHand, other: VectorHand) -> list[Case]:
    t = fresh(base)
    return [
        Case(
            "evidence-of-another-hand",
            "the transcript of one hand with evidence holding only items of another hand: evidence that proves "
            "nothing does not pass (§15.1)",
            failing("evidence"),
            t,
            other.evidence[1],
        ),
        Case(
            "evidence-empty",
            "the transcript with an empty evidence file (§15.1)",
            failing("evidence"),
            t,
            [],
        ),
        Case(
            "folder-evidence-of-no-hand",
            "a table's hand with evidence of a hand not in the directory: no transcript checks any item",
            {"allow_v1": False, "failed": {}, "findings": ["evidence"]},
            folder={"hand-1.json": t},
            evidence=other.evidence[1],
        ),
        Case(
            "evidence-honest",
            "the transcript with the evidence seat 1's client kept: header, player item, acks and heads (§15)",
            passing(),
            t,
            base.evidence[1],
        ),
    ]


def key_substitution() -> list[Case]:
    """The server lists a key it holds for seat 1 and plays seat 1's moves itself."""
    name = "adv-subst"
    real = vectors.player_signer(name, 1)
    forged_key = vectors.player_signer(name + "-the-server-holds", 1)
    keys = {1: forged_key, 3: vectors.player_signer(name, 3)}
    hand = VectorHand(name, 0, TWO, [1, 3], 3, keys=keys)
    hand.seed_phases()
    finish(hand)
    t = hand.rec.transcript()
    shown = {
        **hand.rec.header,
        "seats": [
            {**s, "player_key": real.public_bytes.hex()} if s["seat"] == 1 else s for s in hand.rec.header["seats"]
        ],
    }
    own = player_body(hand.rec.table_id, hand.rec.hand_no, 1, real.public_bytes)
    missed = [it for it in hand.evidence[1] if it["purpose"] != "player"]
    missed.append({"purpose": "player", "body": own, "sig": real.sign("player", own, PROTOCOL_V2)})
    caught = [it for it in missed if it["purpose"] != "header"]
    caught.append(signed_item(TEST_SIGNER, "header", shown))
    return [
        Case(
            "key-substitution-missed-by-the-client",
            "the server listed a key it holds for seat 1 and signed seat 1's moves with it; the player's client "
            "accepted that header, and its player item names its own key: the player's own word, which proves "
            "nothing against the server (anyone can sign one), so a warning, never a failure (§15.4)",
            passing("key_claim"),
            t,
            missed,
        ),
        Case(
            "key-substitution-another-header-shown",
            "the server showed seat 1 a header listing its own key and published one listing a key the server "
            "holds (§15.3)",
            failing("evidence", 0),
            t,
            caught,
        ),
    ]


def leave_over_older_record() -> Case:
    """Seat 6 signs a leave over the deal record; the server records it two records later."""
    name = "adv-leave"
    hand = DishonestHand(name, 0, TableRules(seats=4), [0, 1, 2], 0)
    hand.seed_phases()
    deal_h = hand.rec.head
    for _ in range(2):
        assert hand.rec.state is not None
        hand.act(greedy(hand.rec.state, hand.rec.state.turn))
    leaver = next(s.seat for s in hand.rec.state.seats if s.seat != hand.rec.state.turn)  # type: ignore[union-attr]
    hand.now += 700
    psig = {"prev": deal_h, "sig": hand.sign(leaver, deal_h, {"kind": "leave", "seat": leaver})}
    record, _ = hand.rec.act(Leave(leaver), psig, hand.now)
    finish(hand)
    return Case(
        "leave-signed-over-an-older-record",
        "a leave the player signed over the deal record, recorded by the server two records later (it chose when "
        "the leave took effect): a leave is signed over the record it follows (§9)",
        failing("player_signatures", record["i"]),
        hand.rec.transcript(),
    )


def one_key_two_seats() -> Case:
    name = "adv-twoseats"
    one = vectors.player_signer(name, 0)
    hand = DishonestHand(name, 0, TableRules(seats=4), [0, 2], 0, keys={0: one, 2: one})
    hand.seed_phases()
    finish(hand)
    return Case(
        "one-key-two-seats",
        "one player key listed for two seats of a hand (one person playing both, every move signed): §13 format",
        failing("format", 0),
        hand.rec.transcript(),
    )


def void_without_seed() -> list[Case]:
    out = []
    hand = VectorHand("adv-void", 0, TableRules(seats=4), [0, 1, 2], 0)
    hand.seed_phases()
    for _ in range(3):
        assert hand.rec.state is not None
        hand.act(greedy(hand.rec.state, hand.rec.state.turn))
    hand.now += 30_000
    hand.rec.void("the key that seals the server seed is gone: the hand cannot resume (D33)", hand.now)
    t = fresh(hand)
    t["server_seed"], t["deck"], t["deck_faces"] = "", [], []
    out.append(
        Case(
            "void-after-the-reveals-without-seed",
            "a hand voided after the deal whose transcript withholds the server seed: once the reveals are "
            "recorded the seed is always published (§12, format)",
            failing("format"),
            forge(t),
        )
    )
    before = VectorHand("adv-void-deal", 0, TableRules(seats=4), [0, 1], 0)
    rec = before.rec
    rec.open(before.now)
    before.accept_header()
    rec.commitments({}, before.now + SEED_WINDOW_MS)
    rec.reveal({}, before.now + 2 * SEED_WINDOW_MS)
    rec.void("voided between the reveals and the deal (D33)", before.now + 2 * SEED_WINDOW_MS + 5)
    v = copy.deepcopy(rec.transcript())
    v["server_seed"], v["deck"], v["deck_faces"] = "", [], []
    out.append(
        Case(
            "void-between-reveals-and-deal-without-seed",
            "a hand voided after its reveals, before the deal, published without its seed (§12, format)",
            failing("format"),
            forge(v),
        )
    )
    return out


def _first_drawer(hand: VectorHand) -> int:
    state = hand.rec.state
    assert state is not None
    return state.turn


def refusals() -> list[Case]:
    """Acks of refused moves, and what the house owed the seat after them (D35)."""
    out: list[Case] = []
    for honest in (False, True):
        hand = VectorHand("adv-d35" + ("-honest" if honest else ""), 0, TableRules(seats=4, turn_seconds=30), [0, 1], 1)
        hand.seed_phases()
        seat = _first_drawer(hand)
        late = hand.turn_began + 25_000  # the table could not store the draw 25 s into the 30 s turn
        ack = hand.refuse(DrawClosed(seat), "unavailable", at=late)
        if honest:
            hand.turn_began = ack["body"]["arrived"]  # D35: the whole turn again from the refusal
        record = hand.act(TimeOut(seat))
        finish(hand)
        if honest:
            out.append(
                Case(
                    "refused-then-timed-out-after-the-owed-turn",
                    "a draw refused for the house's reason (unavailable) 25 s into a 30 s turn, the clock moved for "
                    "the seat 30 s after the refusal (D35): the evidence agrees",
                    passing(),
                    hand.rec.transcript(),
                    hand.evidence[seat],
                )
            )
        else:
            out.append(
                Case(
                    "refused-then-timed-out-early",
                    "a draw refused for the house's reason (unavailable) 25 s into a 30 s turn, then the clock moved "
                    "for the seat 5 s later: the seat was charged while the house owed it a whole turn (D35, §15.7)",
                    failing("evidence", record["i"]),
                    hand.rec.transcript(),
                    hand.evidence[seat],
                )
            )

    # A refusal whose ack names a record before the one the move is signed over, passing
    # the house's refusal off as a stale move's, then the clock early (§15.7, D35).
    lied = VectorHand("adv-d35-earlier", 0, TableRules(seats=4, turn_seconds=30), [0, 1], 1)
    lied.seed_phases()
    seat = _first_drawer(lied)
    drew = lied.act(DrawClosed(seat))
    state = lied.rec.state
    assert state is not None
    card = state.seat(seat).drawn_this_turn
    assert card is not None
    lied.refuse(Discard(seat, card), "busy", at=lied.turn_began + 20_000, named=drew["i"] - 1)
    lied.act(TimeOut(seat))
    finish(lied)
    out.append(
        Case(
            "refused-acked-at-an-earlier-record",
            "a discard signed over the seat's own accepted draw, refused for the house's reason (busy) 20 s into a "
            "30 s turn with an ack naming the record before the draw (as if the move were stale), then the clock "
            "moved for the seat 10 s later (§15.7, D35)",
            failing("evidence", drew["i"] - 1),
            lied.rec.transcript(),
            lied.evidence[seat],
        )
    )

    # A refused commit, then the seat marked as committing nothing before the window it was owed.
    hand = VectorHand("adv-d35-commit", 0, TableRules(seats=4), [0, 1], 1)
    rec = hand.rec
    rec.open(hand.now)
    hand.accept_header()
    c = {s: player_commit(s, hand.seeds[s]) for s in (0, 1)}
    sig0 = hand.sign(0, rec.head, commit_move(0, c[0]))
    rec.check_commit(0, c[0], sig0)
    hand.evidence[0].append(rec.ack(0, commit_move(0, c[0]), rec.head, sig0, arrived=hand.now + 50))
    sig1 = hand.sign(1, rec.head, commit_move(1, c[1]))
    hand.evidence[1].append(
        rec.ack(1, commit_move(1, c[1]), rec.head, sig1, arrived=hand.now + SEED_WINDOW_MS - 500, code="unavailable")
    )
    rec.commitments({0: (c[0], sig0)}, hand.now + SEED_WINDOW_MS)
    hand.now += SEED_WINDOW_MS + 10
    move = reveal_move(0, hand.seeds[0])
    sig = hand.sign(0, rec.head, move)
    rec.reveal({0: (hand.seeds[0], sig)}, hand.now + 100)
    hand.now += 105
    rec.deal(hand.now)
    hand.turn_began = hand.now
    finish(hand)
    out.append(
        Case(
            "refused-commit-then-no-commit",
            "seat 1's commitment refused for the house's reason 0.5 s before the commit window closed, then seat 1 "
            "marked as committing nothing when the window closed (D35, §15.7)",
            failing("evidence", 1),
            rec.transcript(),
            hand.evidence[1],
        )
    )

    # An accepted move the server then censored: the ack names record i, the log holds another.
    acked = VectorHand("adv-censor", 0, TableRules(seats=4), [0, 1], 1)
    acked.seed_phases()
    seat = _first_drawer(acked)
    acked.act(DrawClosed(seat))
    ack = next(it for it in reversed(acked.evidence[seat]) if it["purpose"] == "ack")
    censored = VectorHand("adv-censor", 0, TableRules(seats=4), [0, 1], 1)
    censored.seed_phases()
    censored.act(TimeOut(seat))
    finish(censored)
    evidence = [*censored.evidence[seat], ack]
    out.append(
        Case(
            "accepted-move-censored",
            "the server acknowledged a draw as record 4 and published a log whose record 4 is a clock move for the "
            "same seat (§15.7)",
            failing("evidence", 4),
            censored.rec.transcript(),
            evidence,
        )
    )

    # Justified refusals: a move signed over an old record, and a draw out of turn.
    fair = VectorHand("adv-justified", 0, TableRules(seats=4), [0, 1], 1)
    fair.seed_phases()
    seat = _first_drawer(fair)
    other = next(s for s in (0, 1) if s != seat)
    fair.refuse(DrawClosed(other), "not_your_turn", at=fair.now + 100)
    stale = fair.rec.records[2]["h"]
    move = {"kind": "draw_closed", "seat": seat}
    sig = fair.sign(seat, stale, move)
    body = fair.rec.ack(seat, move, stale, sig, arrived=fair.now + 200, code="stale_head")
    fair.evidence[seat].append(body)
    finish(fair)
    out.append(
        Case(
            "justified-refusals",
            "a draw out of turn and a draw signed over an older record, each refused and acknowledged: refusals the "
            "rules justify, the seat owed nothing (§15.7)",
            passing(),
            fair.rec.transcript(),
            [*fair.evidence[seat], *[it for it in fair.evidence[other] if it["purpose"] == "ack"]],
        )
    )
    return out


def backdated() -> list[Case]:
    """Records dated before a move they hold arrived (§15.7): the window or turn that
    runs from such a record starts earlier than it did, and the clock charges a seat
    early while every window in the log looks whole.  The house's own ``arrived``, in
    the ack of the accepted move, refutes it."""
    out: list[Case] = []
    victim, other = 1, 3  # dealer 3: seat 1 draws first

    # Record 1 dated at the header's time, though it lists a commitment acknowledged 9 s
    # later: the reveal window "ran" 10 s from then, 1 s after anyone could see record 1.
    hand = VectorHand("adv-backdated-commits", 0, TWO, [victim, other], 3)
    rec = hand.rec
    hand._heads(rec.open(T0))
    hand.accept_header()
    commits = hand.commit_all({other: T0 + 40, victim: T0 + 9_000})
    hand._heads(rec.commitments(commits, T0))  # the lie: made at T0 + 9 000 or later
    seeds = hand.reveal_all({other: T0 + 9_100})
    hand._heads(rec.reveal(seeds, T0 + SEED_WINDOW_MS))  # the victim: withheld (D15, D29)
    late = reveal_move(victim, hand.seeds[victim])
    sig = hand.sign(victim, rec.records[1]["h"], late)
    hand.evidence[victim].append(
        rec.ack(victim, late, rec.records[1]["h"], sig, arrived=T0 + SEED_WINDOW_MS + 2, code="wrong_phase")
    )
    record, _ = rec.deal(T0 + SEED_WINDOW_MS + 5)  # one seat dealt in: it wins at once (D14)
    hand._heads(record)
    assert rec.ended
    out.append(
        Case(
            "backdated-commitments-then-withheld",
            "seat 1's commitment acknowledged 9 s into the commit window, record 1 (which lists it) dated at the "
            "header's time, and the reveal window closed 10 s after that, 1 s after seat 1 could see record 1: "
            "seat 1 recorded withheld and charged a first drop (§15.7: record 1 is not dated before a commitment "
            "it holds arrived)",
            failing("evidence", 1),
            rec.transcript(),
            hand.evidence[victim],
        )
    )

    # Records 2 and 3 dated before the victim's seed arrived: its first turn "ran out"
    # 22 s after it could see its cards, and the clock dropped it (max_missed_turns 1).
    rules = TableRules(seats=4, point_value=10, commission_bps=500, turn_seconds=30, max_missed_turns=1)
    hand = VectorHand("adv-backdated-reveals", 0, rules, [victim, other], 3)
    rec = hand.rec
    hand._heads(rec.open(T0))
    hand.accept_header()
    t1 = T0 + 1_500
    hand._heads(rec.commitments(hand.commit_all({other: T0 + 40, victim: T0 + 80}), t1))
    seeds = hand.reveal_all({other: t1 + 40, victim: t1 + 9_500})
    hand._heads(rec.reveal(seeds, t1 + 1_200))  # the lie: made at t1 + 9 500 or later
    record, _ = rec.deal(t1 + 1_205)
    hand._heads(record)
    dealt = record["h"]
    draw = action_to_json(DrawClosed(victim))
    sig = hand.sign(victim, dealt, draw)
    timed_out = hand.act(TimeOut(victim), at=t1 + 1_205 + 30_001)
    hand.evidence[victim].append(rec.ack(victim, draw, dealt, sig, arrived=timed_out["t"] + 50, code="stale_head"))
    assert rec.ended
    out.append(
        Case(
            "backdated-reveals-then-first-turn-timed-out",
            "seat 1's seed acknowledged 9.5 s into the reveal window, records 2 and 3 (the reveals and the deal) "
            "dated 8.3 s before it arrived, and seat 1's first turn timed out 30 s after the deal's date, 22 s "
            "after seat 1 could see its cards: a clock drop (§15.7: record 2 is not dated before a seed it holds "
            "arrived, and the deal not before record 2)",
            failing("evidence", 2),
            rec.transcript(),
            hand.evidence[victim],
        )
    )

    # A discard's record dated at the draw before it, 24 s before the discard arrived:
    # the next seat's turn "ran out" 6 s after it began.  The mover's ack refutes it,
    # so the two seats' evidence pooled shows it.
    for attempt in range(50):
        hand = VectorHand("adv-backdated-action", attempt, rules, [victim, other], 3)
        rec = hand.rec
        hand.seed_phases()
        first_turn_of(hand, other)
        if rec.ended:
            continue
        began = hand.turn_began
        state = rec.state
        assert state is not None
        drew = hand.act(greedy(state, other), at=began + 1_000)
        state = rec.state
        if rec.ended or state is None:
            continue
        discard = greedy(state, other)
        if not isinstance(discard, Discard):
            continue
        arrived = began + 25_000
        record = hand.act(discard, at=drew["t"], arrived=arrived)  # the lie: dated at the draw
        state = rec.state
        if rec.ended or state is None or state.turn != victim:
            continue
        hand.act(TimeOut(victim), at=record["t"] + 30_001)
        if not rec.ended:
            continue
        pooled = [*hand.evidence[victim], *(it for it in hand.evidence[other] if it["purpose"] == "ack")]
        out.append(
            Case(
                "backdated-action-record-pooled-evidence",
                "seat 3's discard acknowledged as arriving 25 s into its turn, its record dated at seat 3's draw "
                "24 s earlier, and seat 1's turn, which that record began, timed out 30 s after the record's date: "
                "6 s after seat 1 could see it (§15.7: an accepted action's record is dated when it arrived); the "
                "ack is seat 3's, so the two seats' evidence pooled refutes it",
                failing("evidence", record["i"]),
                rec.transcript(),
                pooled,
            )
        )
        return out
    raise RuntimeError("no hand where seat 3 discards before seat 1's turn")  # pragma: no cover


def receipts_still_read(base: VectorHand) -> Case:
    """Receipts as the server sent them before acks (§15: still read)."""
    rec = base.rec
    t = rec.transcript()
    seat = 1
    commit = next(c for c in t["log"][1]["commitments"]["commits"] if c["seat"] == seat)["commit"]
    seed = next(r for r in t["log"][2]["reveals"] if r["seat"] == seat)["seed"]
    items = [
        signed_item(
            TEST_SIGNER,
            "receipt",
            receipt_body(t["table_id"], t["hand_no"], seat, "commit", bytes.fromhex(commit), t["log"][0]["h"]),
        ),
        signed_item(
            TEST_SIGNER,
            "receipt",
            receipt_body(t["table_id"], t["hand_no"], seat, "reveal", bytes.fromhex(seed), t["log"][1]["h"]),
        ),
    ]
    return Case(
        "receipts-still-read",
        "the commit and reveal receipts of the amendments' predecessor (§15)",
        passing(),
        t,
        items,
    )


def downgrade_folder() -> Case:
    one = two_players("adv-history")
    two = two_players("adv-history", one.rec.hand_no, prev_head=str(one.rec.head))
    assert two.rec.hand_no == one.rec.hand_no + 1
    v1 = downgrade(fresh(two))
    return Case(
        "folder-downgrade",
        "a table's hand n (rummy-pf/v2) and a rummy-pf/v1 copy of hand n + 1, chained from it: the switch to v2 is "
        "one way (§14 downgrade), whatever --allow-v1 says",
        {"allow_v1": True, "failed": {f"hand-{two.rec.hand_no}.json": "downgrade"}, "findings": []},
        folder={f"hand-{one.rec.hand_no}.json": one.rec.transcript(), f"hand-{two.rec.hand_no}.json": v1},
    )


def cases() -> list[Case]:
    from verifier.vectors_adversarial_rules import (
        button_kept,
        fewer_than_min_players,
        rules_changed,
        rules_raised_under_a_new_key,
        short_seed_window,
    )
    from verifier.vectors_adversarial_voids import (
        audit_2026_12_07,
        declare_after_a_refused_leave,
        void_after_a_refused_declare,
        void_before_the_commitments_with_another_record_0,
    )

    base = two_players()
    other = two_players("adv-other")
    out = [
        *downgrades(base),
        downgrade_folder(),
        *small_order_keys(),
        *non_strict_signatures(base),
        *first_hand_chain(),
        *evidence_binding(base, other),
        *key_substitution(),
        leave_over_older_record(),
        one_key_two_seats(),
        *void_without_seed(),
        *refusals(),
        *backdated(),
        receipts_still_read(base),
        *void_before_the_commitments_with_another_record_0(),
        *audit_2026_12_07(base),
        *rules_changed(),
        fewer_than_min_players(),
        *button_kept(),
        short_seed_window(),
        rules_raised_under_a_new_key(),
        *void_after_a_refused_declare(),
        *declare_after_a_refused_leave(),
    ]
    names = [c.name for c in out]
    assert len(set(names)) == len(names)
    return out


def adversarial_files() -> dict[str, dict[str, Any]]:
    """``adversarial/<name>.json`` → its body."""
    return {f"{SUBDIR}/{c.name}.json": c.file() for c in cases()}


__all__ = ["adversarial_files", "downgrade", "forge"]
