"""A hand's records held compactly while it is played (verifier/recordlog.py): every
record but the newest as its packed canonical JSON, read back equal to what was made,
and a fraction of the memory the same records take as dicts."""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_record import fresh_hand
from verifier import vectors
from verifier.chain import chain_link
from verifier.errors import RuleError
from verifier.fairness import canonical, player_commit
from verifier.hand import TableRules
from verifier.record import HandRecorder
from verifier.recordlog import FIRST_KEPT, FRAGMENTS, PIECE, Forgotten, RecordLog, pack, unpack


def played(n: int = 0) -> HandRecorder:
    return vectors.play_hand("log", n, TableRules(seats=6), [0, 1, 2, 3, 4, 5], 0, vectors.greedy).rec


def test_a_played_hand_keeps_its_newest_record_as_made_the_rest_as_packed_text() -> None:
    rec = played()
    n = len(rec.records)
    assert n > 6
    assert rec.records.held_as_text() == list(range(n - 1))
    # packed, the older records take at most half their canonical JSON
    assert rec.records.packed_bytes() < sum(len(canonical(r)) for r in rec.records[:-1]) / 2
    # what is read back is what was chained: each record's link, computed again
    head = rec.prev_head
    for i, r in enumerate(rec.records):
        assert r["i"] == i
        assert chain_link(head, r) == r["h"], i
        head = r["h"]
    assert rec.head == head
    # and the transcript carries every record in full, signed as ever
    t = rec.transcript()
    assert [r["i"] for r in t["log"]] == list(range(n))
    assert t["log"] == rec.records


def test_reading_a_record_back_gives_a_new_dict_equal_to_the_one_appended() -> None:
    made = [{"type": "action", "i": i, "events": [{"kind": "draw", "data": {"cards": (1, 2)}}]} for i in range(8)]
    log = RecordLog()
    for r in made:
        log.append(r)
    assert log.held_as_text() == [0, 1, 2, 3, 4, 5, 6]
    assert log[-1] is made[-1]
    assert log[5] is not made[5] and log[0] is not made[0]
    assert log[5] == json.loads(canonical(made[5]))  # a tuple comes back as a list
    assert log == made and log[4:6] == [json.loads(canonical(r)) for r in made[4:6]]
    assert log != made[:-1] and log != [*made[:-1], {"i": 7}] and log != "not a log"
    # taking the newest off makes the one before it the newest, held as made again
    assert log.pop() is made[-1]
    assert log.held_as_text() == [0, 1, 2, 3, 4, 5] and log[-1] == json.loads(canonical(made[6]))
    log[-1]["t"] = 9  # the newest is the dict held, so a change to it stays
    assert log[-1]["t"] == 9
    # appended after a pop, the texts still line up with their records
    log.append({"type": "action", "i": 7})
    assert log.held_as_text() == [0, 1, 2, 3, 4, 5, 6]
    assert log[6] == {**json.loads(canonical(made[6])), "t": 9} and log[5] == json.loads(canonical(made[5]))


def test_the_older_records_take_a_fraction_of_their_memory_as_dicts() -> None:
    hands = [played(n) for n in range(3)]
    texts = [canonical(r) for rec in hands for r in rec.records]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        as_dicts = [json.loads(t) for t in texts]
        dicts = tracemalloc.get_traced_memory()[0] - base
        logs = []
        for rec in hands:
            log = RecordLog()
            for t in texts[: len(rec.records)]:
                log.append(json.loads(t))
            texts = texts[len(rec.records) :]
            logs.append(log)
        held = tracemalloc.get_traced_memory()[0] - base - dicts
    finally:
        tracemalloc.stop()
    assert len(as_dicts) > 3 * 20
    assert held < dicts / 2, (held, dicts)


def test_a_recorder_remembers_the_commitments_and_reveals_it_checked_as_digests_and_no_action() -> None:
    """A commitment or reveal is checked when it is sent and again as its record is
    made, so its digest is kept; an action is checked once, and a hand in progress kept
    one digest for each of its moves."""
    rec = played()
    assert rec._verified and all(isinstance(d, bytes) and len(d) == 32 for d in rec._verified)
    signed = [r for r in rec.records if r["type"] == "action" and r["psig"]]
    assert len(signed) > 6
    commits = [c for c in rec.records[1]["commitments"]["commits"] if c["psig"]]
    reveals = [r for r in rec.records[2]["reveals"] if r["psig"]]
    assert len(rec._verified) == len(commits) + len(reveals)


@pytest.mark.parametrize("bad", [b"[1, 2]", b'"text"'])
def test_a_record_text_that_is_not_an_object_is_refused(bad: bytes) -> None:
    log = RecordLog(encode=lambda _r: bad)
    for i in range(2):
        log.append({"i": i})
    with pytest.raises(TypeError):
        log[0]


@pytest.mark.parametrize("sig", ["\ud800" * 128, 7, None, ["a"]])
def test_a_signature_of_any_shape_is_refused_as_a_bad_signature(sig: object) -> None:
    """The digest of what was checked takes whatever a client sent (a lone surrogate
    too): the check refuses it, and nothing is remembered."""
    rec, _keys = fresh_hand()
    commit = player_commit(0, b"a" * 32)
    with pytest.raises(RuleError) as e:
        rec.check_commit(0, commit, sig)  # type: ignore[arg-type]
    assert e.value.code == "bad_signature"
    assert not rec._verified


def test_packing_gives_back_every_record_of_every_vector_byte_for_byte() -> None:
    """The transcripts of the vectors (every kind of record a hand makes, 4 to 8 seats,
    voids and clock moves among them) pack and unpack to their exact canonical JSON."""
    texts = [
        canonical(r)
        for path in sorted(Path(vectors.__file__).parent.glob("vectors/*transcript*.json"))
        for r in _log_of(json.loads(path.read_text()))
    ]
    assert len(texts) > 100
    for t in texts:
        p = pack(t)
        assert p is not None and unpack(p) == t
    assert sum(len(pack(t) or b"") for t in texts) < sum(map(len, texts)) * 0.6


def _log_of(doc: dict[str, object]) -> list[dict[str, object]]:
    t = doc.get("transcript", doc)
    assert isinstance(t, dict)
    log = t["log"]
    assert isinstance(log, list)
    return log


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.text()
    | st.sampled_from([f.decode() for f in FRAGMENTS])  # what the table packs, as a string
    | st.text('0123456789abcdefABCDEF"\x01\x02\x1f\\', min_size=60, max_size=140)
    | st.binary(min_size=32, max_size=64).map(bytes.hex),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_packing_any_json_value_loses_nothing(value: object) -> None:
    """Hex strings of every length and case, the fragments inside strings, escaped
    control characters, quotes and backslashes: unpacking gives back the text."""
    text = canonical(value)
    packed = pack(text)
    assert packed is not None
    assert unpack(packed) == text


def test_a_text_holding_a_control_byte_is_not_packed_and_its_record_stays_as_made() -> None:
    assert pack(b'{"a":"\x01"}') is None
    log = RecordLog(encode=lambda r: b'{"raw":"\x03"}' if r.get("raw") else canonical(r))
    made = [{"i": 0}, {"i": 1, "raw": True}, {"i": 2}, {"i": 3}]
    for r in made:
        log.append(r)
    assert log.held_as_text() == [0, 2]
    assert log[1] is made[1] and log[2] == made[2] and log[0] == made[0]
    assert log.pop() is made[3] and log.pop() == made[2]
    assert log.held_as_text() == [0] and log.packed_bytes() == len(pack(canonical(made[0])) or b"")
    assert log.pop() is made[1] and log.held_as_text() == [] and log.packed_bytes() == 0
    assert log[0] == made[0] and len(log) == 1


def test_every_piece_held_is_within_the_small_object_allocator() -> None:
    """A packed text longer than PIECE (a header, the commitments) is held in pieces,
    each a bytes object of at most 512 bytes in all, and read back whole."""
    rec = played()
    held = [h for h in rec.records._items if type(h) is not dict]
    pieces = [p for h in held for p in (h if isinstance(h, tuple) else (h,))]
    assert any(isinstance(h, tuple) for h in held) and any(isinstance(h, bytes) for h in held)
    assert all(isinstance(p, bytes) and 0 < len(p) <= PIECE and sys.getsizeof(p) <= 512 for p in pieces)
    assert sum(map(len, pieces)) == rec.records.packed_bytes()
    assert [canonical(r) for r in rec.records] == [canonical(r) for r in rec.transcript()["log"]]


def test_a_log_forgets_stored_records_but_its_first_and_newest_and_takes_them_back_whole() -> None:
    rec = played(1)
    whole = [json.loads(canonical(r)) for r in rec.records]
    n = len(whole)
    log = rec.records
    log.forget(n + 5)  # never the newest, whatever is asked
    assert log.forgotten == range(FIRST_KEPT, n - 1) and len(log) == n
    assert log.held_as_text() == list(range(FIRST_KEPT))
    assert log.get(FIRST_KEPT) is None and log.get(n) is None and log.get(-1) == whole[-1] and log.get(0) == whole[0]
    for read in (lambda: log[FIRST_KEPT], lambda: list(log), lambda: log == whole, rec.transcript):
        with pytest.raises(Forgotten):
            read()
    with pytest.raises(Forgotten):
        log.pop()  # the record before the newest cannot become the newest
    assert "None" in repr(log)
    log.forget(FIRST_KEPT + 1)  # forgetting less than is forgotten takes nothing back
    assert log.forgotten == range(FIRST_KEPT, n - 1)

    with pytest.raises(ValueError, match="came back"):
        log.fill(whole[FIRST_KEPT:-2])
    assert log.forgotten == range(FIRST_KEPT, n - 1)
    log.fill(whole[FIRST_KEPT:-1])
    assert not log.forgotten and log == whole and log.held_as_text() == list(range(n - 1))
    assert rec.transcript()["log"] == whole


def test_a_log_knows_every_records_link_forgotten_ones_too_and_none_other() -> None:
    """A table judges only a move signed over a record of its log (docs/fairness.md
    §15): the log answers that for every record it made — one it forgot (stored) as
    well — and for nothing else; a record taken off is no longer one of them."""
    rec = played(1)
    links = [str(r["h"]) for r in rec.records]
    log = rec.records
    log.forget(len(links))
    assert log.forgotten  # some records are held no more
    assert all(log.index_of(h) == i for i, h in enumerate(links))
    assert rec.knows(links[FIRST_KEPT]) and not rec.knows("00" * 32) and not rec.knows(None)
    assert log.index_of(chain_link(links[-1], {"type": "void", "reason": "x", "i": len(links), "t": 0})) is None
    fresh, _ = fresh_hand()
    newest = str(fresh.records[0]["h"])
    assert fresh.knows(newest)
    fresh.records.pop()
    assert not fresh.knows(newest) and fresh.records.index_of(newest) is None


def _altered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [dict(r) for r in records]
    out[1]["t"] += 1
    return out


def _relinked(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records altered and linked again among themselves: the record after them is not linked to the last."""
    out = _altered(records)
    prev = records[0]["h"]
    for r in out[1:]:
        r["h"] = chain_link(prev, r)
        prev = r["h"]
    return out


#: what a store that lies or lost records gives back instead of the records forgotten
NOT_THE_RECORDS = pytest.mark.parametrize(
    "change",
    [
        _altered,
        _relinked,
        lambda rs: rs[:-1],
        lambda rs: rs[::-1],
        lambda rs: [*rs, dict(rs[2])],
        lambda rs: [{**rs[0], "i": rs[1]["i"]}, *rs[1:]],
        lambda rs: [[1], *rs[1:]],
        lambda rs: [{**rs[0], "t": 1.5}, *rs[1:]],
    ],
    ids=["altered", "relinked", "short", "reversed", "twice", "renumbered", "not-an-object", "a-float"],
)


@NOT_THE_RECORDS
def test_the_recorder_takes_back_only_the_records_it_forgot(change: Any) -> None:
    rec = played(2)
    whole = [json.loads(canonical(r)) for r in rec.records]
    rec.forget_stored(len(whole), 3)
    gone = rec.records.forgotten
    assert gone == range(FIRST_KEPT, len(whole) - 3)
    back = [whole[i] for i in gone]
    bad = change(back)
    assert bad != back
    with pytest.raises(ValueError):
        rec.fill(bad)
    assert rec.records.forgotten == gone  # nothing taken
    rec.fill(whole)  # the whole log, as a store gives it back: the forgotten ones are taken
    assert not rec.records.forgotten and rec.records == whole


def test_a_transcript_made_as_text_is_the_canonical_json_of_the_transcript_of_every_vector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server publishes a hand as :meth:`HandRecorder.transcript_text` (no dict of
    its log); it must be byte for byte the canonical JSON of :meth:`transcript`, for
    every shape of hand the vectors hold: settled, voided mid-hand, void with the seed
    unopened, withheld seeds, eight seats."""
    made: list[tuple[bytes, bytes]] = []
    real = HandRecorder.transcript

    def both(self: HandRecorder, *, seed_revealed: bool = True) -> dict[str, Any]:
        t = real(self, seed_revealed=seed_revealed)
        made.append((canonical(t), self.transcript_text(seed_revealed=seed_revealed)))
        return t

    monkeypatch.setattr(HandRecorder, "transcript", both)
    vectors.transcripts()
    assert len(made) == 7
    for whole, text in made:
        assert text == whole


def test_a_transcript_made_as_text_takes_the_forgotten_records_from_the_store_and_shows_each_record() -> None:
    for n in range(3):
        rec = played(n)
        whole = rec.transcript()
        texts = [canonical(r) for r in rec.records]
        rec.forget_stored(len(texts), 3)
        gone = rec.records.forgotten
        assert len(gone) > 20
        seen: list[int] = []
        text = rec.transcript_text([texts[i] for i in gone], each=lambda r, out=seen: out.append(r["i"]))
        assert text == canonical(whole) and seen == list(range(len(texts)))
        assert rec.records.forgotten == gone  # published, not held again


@NOT_THE_RECORDS
def test_a_transcript_made_as_text_refuses_stored_records_that_are_not_the_ones_forgotten(change: Any) -> None:
    rec = played(2)
    whole = [json.loads(canonical(r)) for r in rec.records]
    want = canonical(rec.transcript())
    rec.forget_stored(len(whole), 3)
    gone = rec.records.forgotten
    back = [whole[i] for i in gone]
    bad = change(back)
    assert bad != back
    with pytest.raises(ValueError):
        rec.transcript_text([json.dumps(r).encode() for r in bad])
    with pytest.raises(ValueError):
        rec.transcript_text([b"{", *[canonical(r) for r in back[1:]]])  # not JSON
    assert rec.records.forgotten == gone
    assert rec.transcript_text([canonical(r) for r in back]) == want  # the honest store's, after
