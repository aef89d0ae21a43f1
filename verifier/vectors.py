"""Test vectors for rummy-pf (``verifier/vectors/*.json``, and ``adversarial/``).

    python -m verifier.vectors --write     regenerate the files
    python -m verifier.vectors --check     exit 1 if any file differs from what this makes

Every input is a fixed constant (seeds are SHA-256 of labelled strings; the signing
key is a published *test* key), so the files are reproducible byte for byte; the
test suite regenerates them and compares.  RFC 4231's HMAC-SHA256 cases are typed
in from the RFC, not generated.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from verifier import strategy
from verifier.cards import card_of_id, deck_size
from verifier.chain import GENESIS, commit_move, move_body, player_body, reveal_move
from verifier.fairness import (
    PROTOCOL_V2,
    Stream,
    deal_deck,
    derive_key,
    player_commit,
    reshuffle_cards,
    reshuffler,
    rules_id,
    sha256,
    transcript_input,
)
from verifier.hand import (
    Action,
    Declare,
    DrawOpen,
    Drop,
    HandState,
    Leave,
    Phase,
    Result,
    TableRules,
    TimeOut,
    action_to_json,
    apply,
)
from verifier.record import HandRecorder
from verifier.signing import Signer

DIR = Path(__file__).resolve().parent / "vectors"
GENERATOR = "python -m verifier.vectors --write (verifier/vectors.py)"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms: fixed record times for the vectors


#: The rummy-pf/v1 transcript vectors, frozen when v2 replaced v1 (their generator
#: was verifier/vectors.py at commit aecc560).  They still verify under the v1 rules;
#: the test suite checks their bytes against these SHA-256 sums.
V1_FROZEN: dict[str, str] = {
    "transcript-4seat-two-players.json": "f39ae4753bf21205e41f2a8c795ea3293f4482c94aa3e6c3e0a34d93f4085f9a",
    "transcript-6seat-everything.json": "6e81315588827bc3adda71e05649b48b2ddcc4f8f4ad603fbf80b42bcabd4e5a",
    "transcript-8seat-seeds-and-leave.json": "ecf4413dc35f7d5193434aaa8ddec6f73633acc4d42204e81f7f06cac3f0e143",
    "transcript-void.json": "c3a6b00fa5073f45d99e8d761b2109fe6544bb4f78907387a1cc51753ec46cc9",
}


def label(text: str) -> bytes:
    return sha256(text.encode("utf-8"))


TEST_SIGNER = Signer.from_seed(label("rummy-pf/v1 test vector signing key -- never use for real hands"))


def about(what: str, checked_by: list[str]) -> dict[str, Any]:
    return {
        "what": what,
        "produced_by": GENERATOR,
        "checked_by": checked_by,
        "to_be_checked_by": ["the browser verifier's tests, when the browser side is built"],
    }


# --------------------------------------------------------------------------- RFC 4231
RFC4231: list[dict[str, Any]] = [
    {
        "case": 1,
        "key": "0b" * 20,
        "data": b"Hi There".hex(),
        "hmac_sha256": "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    },
    {
        "case": 2,
        "key": b"Jefe".hex(),
        "data": b"what do ya want for nothing?".hex(),
        "hmac_sha256": "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    },
    {
        "case": 3,
        "key": "aa" * 20,
        "data": "dd" * 50,
        "hmac_sha256": "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
    },
    {
        "case": 4,
        "key": bytes(range(1, 26)).hex(),
        "data": "cd" * 50,
        "hmac_sha256": "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
    },
    {
        "case": 5,
        "key": "0c" * 20,
        "data": b"Test With Truncation".hex(),
        "hmac_sha256_128": "a3b6167473100ee06e0c796c2955552b",
    },
    {
        "case": 6,
        "key": "aa" * 131,
        "data": b"Test Using Larger Than Block-Size Key - Hash Key First".hex(),
        "hmac_sha256": "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
    },
    {
        "case": 7,
        "key": "aa" * 131,
        "data": (
            b"This is a test using a larger than block-size key and a larger than block-size data. "
            b"The key needs to be hashed before being used by the HMAC algorithm."
        ).hex(),
        "hmac_sha256": "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
    },
]


def rfc4231() -> dict[str, Any]:
    return {
        "_about": {
            "what": "HMAC-SHA256 test cases 1-7 of RFC 4231 section 4 (case 5 truncated to 128 bits)",
            "produced_by": "typed in from RFC 4231, not generated",
            "checked_by": ["tests/test_vectors.py (Python hmac)"],
            "to_be_checked_by": ["the browser verifier's tests (WebCrypto), when the browser side is built"],
        },
        "cases": RFC4231,
    }


# --------------------------------------------------------------------------- derivation
def derivation() -> dict[str, Any]:
    server_seed = label("vector/derivation/server")
    cases = []
    for seats_n in (4, 6, 8):
        rules = TableRules(seats=seats_n, point_value=5, commission_bps=250)
        rid = rules_id(rules.to_json())
        players = [
            (s, f"player-{s}", label(f"vector/derivation/player/{s}") if s % 3 else b"") for s in range(min(seats_n, 4))
        ]
        t = transcript_input("table-vec", 7, rid, players)
        key = derive_key(server_seed, t)
        stream = Stream(key, "deal")
        blocks = [stream.block(0).hex(), stream.block(1).hex()]
        u32s = [stream.next_u32() for _ in range(8)]
        uniform_stream = Stream(key, "deal")
        uniforms = [{"n": n, "value": uniform_stream.uniform(n)} for n in (106, 53, 7, 2, 1, 159, 1 << 31, 3)]
        pack = deck_size(rules.decks)
        deck = deal_deck(key, pack)
        open_pile = deck[60:80]
        cases.append(
            {
                "seats": seats_n,
                "inputs": {
                    "server_seed": server_seed.hex(),
                    "table_id": "table-vec",
                    "hand_no": 7,
                    "rules": rules.to_json(),
                    "rules_id": rid,
                    "players": [{"seat": s, "player_id": p, "seed": seed.hex()} for s, p, seed in players],
                },
                "commit_s": sha256(server_seed).hex(),
                "player_commits": {str(s): player_commit(s, seed).hex() for s, _, seed in players},
                "T": t.hex(),
                "K": key.hex(),
                "deal_blocks": blocks,
                "deal_u32": u32s,
                "deal_uniform": uniforms,
                "deck": deck,
                "deck_faces": [str(card_of_id(c, rules.decks)) for c in deck],
                "reshuffle": {"k": 1, "cards": sorted(open_pile), "closed": reshuffle_cards(key, 1, open_pile)},
                "reshuffle_2": {
                    "k": 2,
                    "cards": sorted(open_pile[:5]),
                    "closed": reshuffle_cards(key, 2, open_pile[:5]),
                },
            }
        )
    return {
        "_about": about(
            "rummy-pf/v1 derivation: commitments, T, K, the first stream blocks and u32s, uniform draws, the deal "
            "for 4-, 6- and 8-seat tables (106/106/159 cards) and two reshuffles (docs/fairness.md)",
            ["tests/test_vectors.py (verifier.fairness, and an independent re-implementation in the test)"],
        ),
        "cases": cases,
    }


# --------------------------------------------------------------------------- transcripts (v2)
Policy = Callable[[HandState, int], Action]
SEED_WINDOW_MS = 10_000


def player_signer(name: str, seat: int) -> Signer:
    """The vectors' player keys: test keys, like the server's, never for real play."""
    return Signer.from_seed(label(f"vector/{name}/player-key/{seat}"))


class VectorHand:
    """A v2 hand played through :class:`HandRecorder` as a server would: every player
    move signed by the player's key; each seat's evidence (§15) as its client keeps
    it — the header it accepted, its ``player`` item, an ack for every move it made
    and the signed head of every record it was sent; record times from a simulated
    clock that respects every window and turn clock."""

    recorder: type[HandRecorder] = HandRecorder

    def __init__(
        self,
        name: str,
        attempt: int,
        rules: TableRules,
        seats: list[int],
        dealer: int,
        *,
        prev_head: str | None = None,
        keys: dict[int, Signer] | None = None,
        server: Signer = TEST_SIGNER,
        hand_no: int | None = None,
    ) -> None:
        self.keys = keys or {s: player_signer(name, s) for s in seats}
        if hand_no is None:
            # A table's first hand is dealt by its lowest seat (RULES.md D3, §14 `chain`):
            # a vector dealt by another seat at attempt 0 is its table's hand 2 (from 64
            # zeros, as after a first hand voided without a transcript, §11)
            first = attempt == 0 and prev_head is None and dealer != min(seats)
            hand_no = 2 if first else attempt + 1
        self.rec = self.recorder(
            signer=server,
            table_id=f"table-{name}",
            hand_no=hand_no,
            rules=rules,
            seats=[(s, f"player-{name}-{s}", self.keys[s].public_bytes) for s in seats],
            dealer=dealer,
            server_seed=label(f"vector/{name}/server/{attempt}"),
            prev_head=prev_head or GENESIS,
            commit_ms=SEED_WINDOW_MS,
            reveal_ms=SEED_WINDOW_MS,
        )
        self.seeds = {s: label(f"vector/{name}/player/{s}") for s in seats}
        self.now = T0
        self.turn_began = T0
        self.evidence: dict[int, list[dict[str, Any]]] = {s: [] for s in seats}

    def _heads(self, record: dict[str, Any]) -> None:
        ev = self.rec.head_evidence(record["i"])
        for items in self.evidence.values():
            items.append(ev)

    def sign(self, seat: int, prev: str, move: dict[str, Any]) -> str:
        return self.keys[seat].sign("move", move_body(self.rec.table_id, self.rec.hand_no, prev, move), PROTOCOL_V2)

    def accept_header(self) -> None:
        """Each client checks the header lists its key, keeps it and signs its
        ``player`` item (§15)."""
        rec = self.rec
        for s, items in self.evidence.items():
            items.append({"purpose": "header", "body": rec.header, "sig": rec.records[0]["sig"]})
            body = player_body(rec.table_id, rec.hand_no, s, self.keys[s].public_bytes)
            items.append({"purpose": "player", "body": body, "sig": self.keys[s].sign("player", body, PROTOCOL_V2)})

    def commit_all(self, arrivals: dict[int, int]) -> dict[int, tuple[bytes, str]]:
        """Each seat's commitment, accepted and acknowledged at its arrival time."""
        rec, out = self.rec, {}
        for s, arrived in arrivals.items():
            c = player_commit(s, self.seeds[s])
            move = commit_move(s, c)
            sig = self.sign(s, rec.head, move)
            rec.check_commit(s, c, sig)
            self.evidence[s].append(rec.ack(s, move, rec.head, sig, arrived=arrived))
            out[s] = (c, sig)
        return out

    def reveal_all(self, arrivals: dict[int, int]) -> dict[int, tuple[bytes, str]]:
        """Each seat's seed, accepted and acknowledged at its arrival time."""
        rec, out = self.rec, {}
        for s, arrived in arrivals.items():
            move = reveal_move(s, self.seeds[s])
            sig = self.sign(s, rec.head, move)
            rec.check_reveal(s, self.seeds[s], sig)
            self.evidence[s].append(rec.ack(s, move, rec.head, sig, arrived=arrived))
            out[s] = (self.seeds[s], sig)
        return out

    def _every_40ms(self, seats: list[int]) -> dict[int, int]:
        """Arrivals 40 ms apart, from now on."""
        out = {}
        for s in seats:
            self.now += 40
            out[s] = self.now
        return out

    def seed_phases(self, *, no_commit: tuple[int, ...] = (), withhold: tuple[int, ...] = ()) -> None:
        rec = self.rec
        self._heads(rec.open(self.now))
        self.accept_header()
        commits = self.commit_all(self._every_40ms([s for s in rec.seat_numbers if s not in no_commit]))
        self.now = rec.records[0]["t"] + (SEED_WINDOW_MS if no_commit else 1_500)
        self._heads(rec.commitments(commits, self.now))
        seeds = self.reveal_all(self._every_40ms([s for s in commits if s not in withhold]))
        self.now = rec.records[1]["t"] + (SEED_WINDOW_MS if withhold else 1_200)
        self._heads(rec.reveal(seeds, self.now))
        self.now += 5
        record, _ = rec.deal(self.now)
        self._heads(record)
        self.turn_began = self.now

    def act(self, action: Action, *, at: int | None = None, arrived: int | None = None) -> dict[str, Any]:
        """One move; a player's is signed over the head and acknowledged (§15).  ``at``:
        its record's time (by default 0.7 s on, or when the turn runs out for the
        clock's); ``arrived``: its ack's (by default the record's, as an honest table
        signs it)."""
        rec = self.rec
        assert rec.state is not None
        if isinstance(action, TimeOut):
            self.now = max(self.now, self.turn_began + 1000 * rec.rules.turn_seconds) + 1 if at is None else at
            psig = None
        else:
            self.now = self.now + 700 if at is None else at
            psig = {"prev": rec.head, "sig": self.sign(action.seat, rec.head, action_to_json(action))}
        record, events = rec.act(action, psig, self.now)
        if psig is not None:
            when = self.now if arrived is None else arrived
            ack = rec.ack(action.seat, action_to_json(action), psig["prev"], psig["sig"], arrived=when, i=record["i"])
            self.evidence[action.seat].append(ack)
        self._heads(record)
        if any(e.kind == "turn" for e in events):
            self.turn_began = self.now
        return record

    def refuse(self, action: Action, code: str, *, at: int, named: int | None = None) -> dict[str, Any]:
        """A move the table judged and refused with ``code`` at time ``at``: the seat
        keeps the signed ack (§15).  ``named``: the record the ack names (a house's
        lie, for the adversarial vectors; by default the last record, as §15 says)."""
        rec = self.rec
        move = action_to_json(action)
        sig = self.sign(action.seat, rec.head, move)
        self.now = max(self.now, at)
        ack = rec.ack(action.seat, move, rec.head, sig, arrived=self.now, code=code, i=named)
        self.evidence[action.seat].append(ack)
        return ack

    def play(self, policy: Policy, max_actions: int = 600) -> None:
        n = 0
        while not self.rec.ended and n < max_actions:
            assert self.rec.state is not None
            self.act(policy(self.rec.state, self.rec.state.turn))
            n += 1


def play_hand(
    name: str,
    attempt: int,
    rules: TableRules,
    seats: list[int],
    dealer: int,
    policy: Policy,
    *,
    no_commit: tuple[int, ...] = (),
    withhold: tuple[int, ...] = (),
    prev_head: str | None = None,
    server: Signer = TEST_SIGNER,
    hand_no: int | None = None,
) -> VectorHand:
    hand = VectorHand(name, attempt, rules, seats, dealer, prev_head=prev_head, server=server, hand_no=hand_no)
    hand.seed_phases(no_commit=no_commit, withhold=withhold)
    hand.play(policy)
    return hand


def greedy(state: HandState, seat: int) -> Action:
    return strategy.choose(state, seat, allow_drop=False)


def winning_declares(name: str, table: TableRules, seats: list[int]) -> Iterator[tuple[VectorHand, Declare, Result]]:
    """Vector hands ``name`` 0 to 199 at ``seats`` (dealt by ``seats[0]``), played with
    the greedy strategy: at each declare that would end its hand with the declarer
    the winner, the hand (that declare not yet made), the declare and the result it
    would give.  Asked for the next, the declare is made and play goes on.  (For the
    vectors and audits of a house that cheats a winner out of its declare.)"""
    for attempt in range(200):
        hand = VectorHand(name, attempt, table, seats, seats[0])
        hand.seed_phases()
        rec = hand.rec
        for _ in range(600):
            assert rec.state is not None
            if rec.ended:
                break
            state = rec.state
            action = greedy(state, state.turn)
            if isinstance(action, Declare):
                after, _ = apply(state, action, reshuffler(rec.key))
                if after.phase is Phase.ENDED and after.result is not None and after.result.winner == action.seat:
                    yield hand, action, after.result
            hand.act(action)


def rich_policy() -> Policy:
    """The scripted 6-seat hand: seat 0 first-drops, seat 1 middle-drops on its second
    turn, seat 2's clock runs out once, seat 3 declares wrongly on its second turn,
    seat 4 takes the open card on its first turn; the rest play the strategy."""
    turns: dict[int, int] = {}

    def policy(state: HandState, seat: int) -> Action:
        if state.phase is Phase.DRAW:
            turns[seat] = turns.get(seat, 0) + 1
        k = turns.get(seat, 0)
        if seat == 0 and k == 1:
            return Drop(0)
        if seat == 1 and k == 2 and state.phase is Phase.DRAW:
            return Drop(1)
        if seat == 2 and k == 1 and state.phase is Phase.DRAW:
            return TimeOut(2)
        if seat == 4 and k == 1 and state.phase is Phase.DRAW:
            return DrawOpen(4)
        if seat == 3 and k == 2 and state.phase is Phase.DISCARD:
            pick = strategy.best_discard(list(state.seat(3).cards), state)
            if not pick.valid:
                return Declare(3, state.seat(3).cards[0])
        return greedy(state, seat)

    return policy


def leave_policy() -> Policy:
    """Seat 6 leaves the table during its third turn; seat 7 left during the seed
    phases (D36), so the clock plays for it until it drops it; the rest play the
    strategy."""
    turns: dict[int, int] = {}

    def policy(state: HandState, seat: int) -> Action:
        if state.phase is Phase.DRAW:
            turns[seat] = turns.get(seat, 0) + 1
        if seat == 7:
            return TimeOut(7)
        if seat == 6 and turns.get(6) == 3 and state.phase is Phase.DISCARD:
            return Leave(6)
        return greedy(state, seat)

    return policy


def kinds_of(rec: HandRecorder) -> set[str]:
    out = set()
    for r in rec.records:
        for e in r.get("events", []):
            out.add(e["kind"])
            if e["kind"] == "draw":
                out.add("draw_" + e["data"]["source"])
            if e["kind"] == "declare":
                out.add("declare_valid" if e["data"]["valid"] else "declare_wrong")
            if e["kind"] == "drop":
                out.add(f"drop_{e['data']['points']}")
    return out


def first_attempt(make: Callable[[int], VectorHand], need: set[str], tries: int = 200) -> tuple[int, VectorHand]:
    """The first attempt number whose hand shows every feature in ``need``."""
    for attempt in range(tries):
        hand = make(attempt)
        if hand.rec.ended and need <= kinds_of(hand.rec):
            return attempt, hand
    raise RuntimeError(f"no attempt in {tries} showed {sorted(need)}")


V2_CHECKED = [
    "tests/test_vectors.py and tests/test_tamper.py (rummy-verify: every check, and tampered variants)",
    "tests/test_web_verifier.py (the browser verifier, an independent JavaScript implementation)",
]


def about_v2(what: str) -> dict[str, Any]:
    return {"what": what, "produced_by": GENERATOR, "checked_by": V2_CHECKED}


def transcripts() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    a, hand = first_attempt(
        lambda n: play_hand("two", n, TableRules(seats=4, point_value=10, commission_bps=500), [1, 3], 1, greedy),
        {"declare_valid"},
    )
    out["v2-transcript-4seat-two-players.json"] = {
        "_about": about_v2(f"v2: a 4-seat table, two players playing the strategy to a valid declare (attempt {a})"),
        "transcript": hand.rec.transcript(),
    }
    out["v2-evidence-4seat-two-players-seat1.json"] = {
        "_about": about_v2(
            "v2: the evidence seat 1's client kept in that hand (§15): the header it accepted, its player item, "
            "an ack for each of its moves (commit, reveal, every action) and the signed head of every record it "
            "was sent"
        ),
        "evidence": hand.evidence[1],
    }

    a, hand = first_attempt(
        lambda n: play_hand(
            "rich",
            n,
            TableRules(seats=6, point_value=3, commission_bps=1000, max_missed_turns=2),
            list(range(6)),
            5,
            rich_policy(),
        ),
        {"draw_open", "declare_wrong", "drop_20", "drop_40", "clock", "reshuffle", "declare_valid"},
    )
    out["v2-transcript-6seat-everything.json"] = {
        "_about": about_v2(
            f"v2: a 6-seat hand with an open-pile draw, a wrong declare, a first drop, a middle drop, a clock "
            f"expiry, a reshuffle and a valid declare (attempt {a})"
        ),
        "transcript": hand.rec.transcript(),
    }

    a, hand = first_attempt(
        lambda n: play_hand(
            "eight",
            n,
            TableRules(seats=8, point_value=2, commission_bps=333),
            [0, 2, 3, 5, 6, 7],
            6,
            leave_policy(),
            no_commit=(2,),
            withhold=(5,),
        ),
        {"leave", "forfeit", "drop_40"},
    )
    out["v2-transcript-8seat-seeds-and-leaves.json"] = {
        "_about": about_v2(
            f"v2: an 8-seat table (three decks): one seat sent no commitment (empty seed), one withheld its reveal "
            f"(sits out, first drop), one left during the seed phases after its reveal (D36: no move of the hand; "
            f"the clock plays for it until it drops it), one leaves mid-hand, signed over the record it follows "
            f"(attempt {a})"
        ),
        "transcript": hand.rec.transcript(),
    }

    hand = play_hand("headsup", 0, TableRules(seats=4, point_value=5), [0, 1], 1, greedy, withhold=(1,))
    out["v2-transcript-headsup-withheld.json"] = {
        "_about": about_v2(
            "v2: heads-up, seat 1 withheld its reveal: seat 0 is dealt in alone and wins at once, seat 1 pays a "
            "first drop (D29)"
        ),
        "transcript": hand.rec.transcript(),
    }

    hand = play_hand("allwithheld", 0, TableRules(seats=4), [0, 1], 0, greedy, withhold=(0, 1))
    out["v2-transcript-void-all-withheld.json"] = {
        "_about": about_v2("v2: both seats withheld their reveals: no seat is dealt in, the hand is void (D29)"),
        "transcript": hand.rec.transcript(),
    }

    hand = VectorHand("voidplay", 0, TableRules(seats=6, point_value=4, commission_bps=200), [0, 2, 4], 0)
    hand.seed_phases()
    for _ in range(7):
        assert hand.rec.state is not None
        hand.act(greedy(hand.rec.state, hand.rec.state.turn))
    hand.now += 60_000
    hand.rec.void("voided by the operator: the table's database was restored from an older backup (D33)", hand.now)
    out["v2-transcript-void-mid-hand.json"] = {
        "_about": about_v2("v2: a hand voided by the operator after seven actions (D33); the seed is revealed"),
        "transcript": hand.rec.transcript(),
    }

    hand = VectorHand("voidlost", 0, TableRules(seats=4), [0, 1, 2], 2)
    hand.rec.open(hand.now)
    hand.rec.void("the key that seals the server seed is gone: the hand cannot resume (D33)", hand.now + 90_000)
    out["v2-transcript-void-seed-lost.json"] = {
        "_about": about_v2("v2: a hand voided in the commit phase whose sealed server seed could not be opened (D33)"),
        "transcript": hand.rec.transcript(seed_revealed=False),
    }
    return out


def all_files() -> dict[str, str]:
    """Every generated vector file, by its path under ``verifier/vectors`` (the
    rummy-pf/v1 transcripts are frozen: see V1_FROZEN): the derivation, the
    transcripts and evidence, strict Ed25519, and the adversarial cases."""
    from verifier.vectors_adversarial import adversarial_files
    from verifier.vectors_strict import strict_vectors

    files = {
        "rfc4231.json": rfc4231(),
        "derivation.json": derivation(),
        **transcripts(),
        "ed25519_strict.json": strict_vectors(TEST_SIGNER),
        **adversarial_files(),
    }
    return {name: json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n" for name, body in files.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    files = all_files()
    bad = 0
    for name, text in files.items():
        path = DIR / name
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        elif not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"differs: {path}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
