"""A hand's records held compactly while it is played (verifier/recordlog.py): the older
action records as their canonical JSON, read back equal to what was made, and a
fraction of the memory the same records take as dicts."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from tests.test_record import fresh_hand
from verifier import vectors
from verifier.chain import chain_link
from verifier.errors import RuleError
from verifier.fairness import canonical, player_commit
from verifier.hand import TableRules
from verifier.record import HandRecorder
from verifier.recordlog import KEPT_AS_MADE, RecordLog


def played(n: int = 0) -> HandRecorder:
    return vectors.play_hand("log", n, TableRules(seats=6), [0, 1, 2, 3, 4, 5], 0, vectors.greedy).rec


def test_a_played_hand_keeps_its_first_records_and_its_newest_as_made_the_rest_as_text() -> None:
    rec = played()
    n = len(rec.records)
    assert n > KEPT_AS_MADE + 2
    assert rec.records.held_as_text() == list(range(KEPT_AS_MADE, n - 1))
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
    assert log.held_as_text() == [4, 5, 6]
    assert log[-1] is made[-1] and log[0] is made[0]
    assert log[5] is not made[5]
    assert log[5] == json.loads(canonical(made[5]))  # a tuple comes back as a list
    assert log == made and log[4:6] == [json.loads(canonical(r)) for r in made[4:6]]
    assert log != made[:-1] and log != [*made[:-1], {"i": 7}] and log != "not a log"
    # taking the newest off makes the one before it the newest, held as made again
    assert log.pop() is made[-1]
    assert log.held_as_text() == [4, 5] and log[-1] == json.loads(canonical(made[6]))
    log[-1]["t"] = 9  # the newest is the dict held, so a change to it stays
    assert log[-1]["t"] == 9
    # appended after a pop, the texts still line up with their records
    log.append({"type": "action", "i": 7})
    assert log.held_as_text() == [4, 5, 6]
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


def test_a_recorder_remembers_the_signatures_it_checked_as_digests() -> None:
    rec = played()
    assert rec._verified and all(isinstance(d, bytes) and len(d) == 32 for d in rec._verified)


@pytest.mark.parametrize("bad", [b"[1, 2]", b'"text"'])
def test_a_record_text_that_is_not_an_object_is_refused(bad: bytes) -> None:
    log = RecordLog(encode=lambda _r: bad)
    for i in range(KEPT_AS_MADE + 2):
        log.append({"i": i})
    with pytest.raises(TypeError):
        log[KEPT_AS_MADE]


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
