"""A hand in progress forgets its stored action records (verifier.recordlog: held for
the hand's life they were most of a server's warm-up, docs/benchmarks.md) and reads
them back from the store when the hand ends or a join asks for their events.  Driven
step by step through the table core with tests/sim's in-memory store: the transcript
and a join's events are what they were when memory held everything; a store that
gives back other records, or fails the read, makes the table reload, and nothing is
lost or settled twice."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from service import fastjson
from service.handrun import HandRun
from service.startup import Running
from service.tablecore import io
from service.tablecore.core import Mode, TableCore
from service.tablecore.steps import RECENT_KEPT
from tests.conftest import Api
from tests.sim.store import SimStore
from tests.test_recovery import key_of
from tests.test_server import draw_and_discard, seat_of, seat_two, through_seeds
from tests.test_tablecore import CFG, Harness
from tests.wsclient import Client
from verifier.chain import move_body
from verifier.fairness import PROTOCOL_V2
from verifier.hand import Event
from verifier.recordlog import FIRST_KEPT, Forgotten
from verifier.transcript import verify_transcript

TURNS = 10  # draw and discard: 20 action records, well past FIRST_KEPT + RECENT_KEPT


def act(h: Harness, kind: str, **extra: Any) -> None:
    hand = h.core.hand
    assert hand is not None
    pid, seat = h.on_turn()
    move = {"kind": kind, "seat": seat, **extra}
    head = hand.recorder.head
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    action = {"kind": kind, **extra}
    h.send(pid, "action", {"hand_no": hand.hand_no, "action": action, "prev": head, "sig": sig})
    h.answer_all()
    reply = h.of(io.Reply)[-1]
    assert reply.cmd_id == h.ids and reply.error is None, reply.error


def play_turns(h: Harness, turns: int) -> None:
    for _ in range(turns):
        act(h, "draw_closed")
        hand = h.core.hand
        assert hand is not None and hand.recorder.state is not None
        _, seat = h.on_turn()
        act(h, "discard", card=hand.recorder.state.seat(seat).cards[0])


def stored(h: Harness) -> list[dict[str, Any]]:
    hand = h.core.hand
    assert hand is not None
    recs = h.store.hands[hand.hand_id].records
    return [json.loads(json.dumps(recs[i])) for i in sorted(recs)]


def reads(h: Harness, since: int = -1) -> list[io.LogOp]:
    return [e.op for e in h.of(io.Write, since) if isinstance(e.op, io.LogOp)]


def a_hand_well_into_play() -> Harness:
    h = Harness()
    h.through_seeds()
    play_turns(h, TURNS)
    hand = h.core.hand
    assert hand is not None
    gone = hand.recorder.records.forgotten
    n = len(hand.recorder.records)
    assert gone == range(FIRST_KEPT, n - RECENT_KEPT), (gone, n)  # stored: forgotten
    with pytest.raises(Forgotten):
        hand.recorder.records[FIRST_KEPT]
    return h


def events_for(records: list[dict[str, Any]], seat: int, after: int) -> list[dict[str, Any]]:
    return [
        {"i": r["i"], **Event.from_json(e).for_seat(seat)} for r in records[after + 1 :] for e in r.get("events", ())
    ]


def test_a_join_gets_the_events_of_forgotten_records_read_back_from_the_store() -> None:
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    before = h.now
    h.send("p1", "snapshot", {"since": None})
    (read,) = reads(h, before)  # the join waits for the read
    assert (read.start, read.stop) == (FIRST_KEPT, hand.recorder.records.forgotten.stop)
    assert not [r for r in h.of(io.Reply) if r.cmd_id == h.ids]
    h.answer_all()
    reply = h.of(io.Reply)[-1]
    assert reply.cmd_id == h.ids and reply.error is None, reply.error
    seat = hand.seat_of("p1")
    assert seat is not None
    got = reply.result["hand"]["events"]
    assert got == events_for(stored(h), seat, -1) and len(got) > 2 * TURNS
    assert not hand.recorder.records.forgotten, "held again until the next record is stored"

    # a join that asks only for what memory holds is answered at once, with no read
    last = len(hand.recorder.records) - 1
    h.send("p0", "snapshot", {"since": {"hand_no": hand.hand_no, "i": last - 2}})
    assert reads(h, h.now) == [read]
    reply = h.of(io.Reply)[-1]
    assert reply.cmd_id == h.ids and reply.result["hand"]["events"] == events_for(stored(h), 0, last - 2)
    play_turns(h, 1)  # and the hand plays on
    assert hand.recorder.records.forgotten, "the records read back for the join are forgotten again"


def test_joins_that_ask_for_forgotten_records_cost_one_read_until_the_next_move() -> None:
    """Any player may join a table, and a join may ask for every event of the hand.
    Fifty such joins (one client's burst) cost the store one read, not fifty, and the
    move queued among them is answered in its turn: the records read back stay in
    memory until the next record is stored.  Before, each join read the whole log
    again, and a client sending joins as fast as its pace allowed held the table's
    moves behind its reads."""
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    before = h.now
    pid, seat = h.on_turn()
    head = hand.recorder.head
    move = {"kind": "draw_closed", "seat": seat}
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    joins = []
    for k in range(50):
        h.send("p1", "snapshot", {"since": None})
        joins.append(h.ids)
        if k == 10:
            payload = {"hand_no": hand.hand_no, "action": {"kind": "draw_closed"}, "prev": head, "sig": sig}
            h.send(pid, "action", payload)
            draw = h.ids
    h.answer_all()
    replies = {r.cmd_id: r for r in h.of(io.Reply)}
    assert replies[draw].error is None, replies[draw].error
    other = hand.seat_of("p1")
    assert other is not None
    for cmd_id in joins:
        assert replies[cmd_id].error is None, replies[cmd_id].error
        got = replies[cmd_id].result["hand"]["events"]
        assert got[0]["i"] <= FIRST_KEPT and got == events_for(stored(h), other, -1)[: len(got)]
    # one read for the joins before the draw, one for those after it was stored
    assert len(reads(h, before)) == 2, f"{len(reads(h, before))} reads for 50 joins"
    assert not hand.recorder.records.forgotten
    h.send("p0", "snapshot", {"since": None})  # nothing stored since: no read
    assert len(reads(h, before)) == 2 and h.of(io.Reply)[-1].cmd_id == h.ids
    _, seat = h.on_turn()
    state = hand.recorder.state
    assert state is not None
    act(h, "discard", card=state.seat(seat).cards[0])
    assert hand.recorder.records.forgotten, "forgotten again once the discard was stored"
    h.send("p1", "snapshot", {"since": None})  # so the next such join reads again
    h.answer_all()
    assert len(reads(h, before)) == 3 and h.of(io.Reply)[-1].error is None


def test_a_join_that_comes_while_a_move_is_stored_waits_for_it_then_reads() -> None:
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    pid, seat = h.on_turn()
    head = hand.recorder.head
    move = {"kind": "draw_closed", "seat": seat}
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    h.send(pid, "action", {"hand_no": hand.hand_no, "action": {"kind": "draw_closed"}, "prev": head, "sig": sig})
    draw = h.ids
    h.send("p1", "snapshot", {"since": None})  # the draw's write is in flight: the join waits
    assert [type(e.op) for e in h.inflight.values() if isinstance(e, io.Write)] == [io.RecordsOp]
    assert not [r for r in h.of(io.Reply) if r.cmd_id == h.ids]
    h.answer_all()  # the draw stored, then the read
    replies = {r.cmd_id: r for r in h.of(io.Reply)}
    assert replies[draw].error is None and replies[h.ids].error is None
    other = hand.seat_of("p1")
    assert other is not None
    got = replies[h.ids].result["hand"]["events"]
    assert got == events_for(stored(h), other, -1) and got[-1]["i"] == len(hand.recorder.records) - 1


def test_the_hand_ends_with_its_whole_log_read_back_and_a_transcript_that_verifies() -> None:
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    records = stored(h)
    n = len(reads(h))
    act(h, "drop")  # two players: the other wins (D17)
    h.answer_all()
    assert h.core.hand is None and len(reads(h)) == n + 1
    t = h.store.hands[hand.hand_id].transcript
    assert t is not None and h.store.hands[hand.hand_id].settlements == 1
    assert t["log"][: len(records)] == records and len(t["log"]) == len(records) + 1
    report = verify_transcript(t, h.keys.signer.public_bytes)
    assert report.ok, report.failure
    assert h.store.check_ledger() is None


def _lying(store: SimStore, change: Any) -> Any:
    real = store.run

    def run(table_id: str, epoch: int, op: io.Op) -> Any:
        got = real(table_id, epoch, op)
        if isinstance(op, io.LogOp):
            change(got)
        return got

    return run


def _altered(got: list[bytes]) -> None:
    r = json.loads(got[2])
    got[2] = fastjson.canonical({**r, "t": r["t"] + 1})  # a record that is not the one stored


def _not_json(got: list[bytes]) -> None:
    got[1] = got[1][:-1]


#: what a store that lies or lost records gives back instead of the records asked for
LIES = pytest.mark.parametrize(
    "change",
    [
        _altered,
        _not_json,
        lambda got: got.pop(3),  # one left out
        lambda got: got.reverse(),  # out of order
        lambda got: got.clear(),  # none
    ],
    ids=["altered", "not-json", "missing", "reordered", "none"],
)


def _lied_to(change: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Harness, HandRun, list[dict[str, Any]], int]:
    """A hand well into play whose store now lies when its log is read: the harness,
    the hand, its records as stored, the loads so far."""
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    monkeypatch.setattr(h.store, "run", _lying(h.store, change))
    return h, hand, stored(h), len(h.of(io.Load))


@LIES
def test_a_store_that_gives_back_other_records_makes_the_table_reload_and_nothing_is_lost(
    change: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    h, hand, records, loads = _lied_to(change, monkeypatch)
    h.send("p1", "snapshot", {"since": None})
    h.answer_all()  # the lie
    h.advance(h.now + 3000)  # the reload it causes, after its backoff
    reply = next(r for r in h.of(io.Reply) if r.cmd_id == h.ids)
    assert reply.error is not None and reply.error.code == "unavailable"
    assert len(h.of(io.Load)) == loads + 1
    again = h.core.hand
    assert again is not None and again.hand_id == hand.hand_id and not again.recorder.records.forgotten
    assert list(again.recorder.records) == records  # rebuilt from the store (D32): every record
    monkeypatch.undo()
    h.send("p1", "snapshot", {"since": None})  # asked again: answered from memory
    reply = h.of(io.Reply)[-1]
    assert reply.cmd_id == h.ids and reply.result["hand"]["events"] == events_for(records, 1, -1)
    play_turns(h, 6)  # played on, and forgotten again as it goes
    assert again.recorder.records.forgotten
    act(h, "drop")
    h.answer_all()
    t = h.store.hands[hand.hand_id].transcript
    assert t is not None and verify_transcript(t, h.keys.signer.public_bytes).ok
    assert h.store.hands[hand.hand_id].settlements == 1 and h.store.check_ledger() is None


@LIES
def test_a_store_that_gives_back_other_records_as_the_hand_ends_makes_the_table_reload_and_settle_once(
    change: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transcript is made from the records' text as the store gives it back, each
    checked as it is read: a lie is found before anything is published or settled."""
    h, hand, records, loads = _lied_to(change, monkeypatch)
    act(h, "drop")
    h.answer_all()  # the drop, then the read that lies
    monkeypatch.undo()
    assert h.store.hands[hand.hand_id].transcript is None and h.store.hands[hand.hand_id].settlements == 0
    assert not [e for e in h.of(io.Write) if isinstance(e.op, io.FinishOp)]
    h.answer_all()
    h.advance(h.now + 3000)  # the reload, after its backoff: the hand rebuilt, and finished
    assert len(h.of(io.Load)) > loads
    ended = h.store.hands[hand.hand_id]
    assert ended.transcript is not None and ended.settlements == 1 and h.store.check_ledger() is None
    assert ended.transcript["log"][: len(records)] == records
    assert ended.transcript_text == fastjson.canonical(ended.transcript)
    assert verify_transcript(ended.transcript, h.keys.signer.public_bytes).ok


@pytest.mark.parametrize("result", [io.Result.FAILED, io.Result.AMBIGUOUS])
def test_a_read_that_fails_as_the_hand_ends_reloads_and_the_hand_is_settled_once(result: io.Result) -> None:
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    pid, _ = h.on_turn()
    hand_no, head = hand.hand_no, hand.recorder.head
    h.send(pid, "action", _signed_drop(h, pid, hand_no, head))
    h.answer(min(h.inflight))  # the drop is stored; the hand is over and reads its log
    (read_id,) = [k for k, e in h.inflight.items() if isinstance(e, io.Write) and isinstance(e.op, io.LogOp)]
    h.answer(read_id, result)
    assert h.core.mode in (Mode.LOADING, Mode.WAITING)  # memory is not trusted: reload
    assert h.store.hands[hand.hand_id].transcript is None
    h.answer_all()
    h.advance(h.now + 3000)
    t = h.store.hands[hand.hand_id].transcript
    assert t is not None and verify_transcript(t, h.keys.signer.public_bytes).ok
    assert h.store.hands[hand.hand_id].settlements == 1 and h.store.check_ledger() is None


def _crash_and_restart(h: Harness) -> None:
    """kill -9: the process and every op it had in flight are gone (a write that
    reached the store stays stored); another process takes the table with a new
    epoch, loads it, and its players connect again."""
    h.inflight.clear()
    h.store.tables["t0"].epoch += 1
    h.core = TableCore("t0", h.keys, CFG)
    h.step(io.Tick())
    h.answer_all()
    for pid in h.signers:
        h.step(io.Reach(pid, True))


@pytest.mark.parametrize("instant", ["reading the log", "publishing, not stored", "published, answer lost"])
def test_a_crash_at_any_instant_of_the_hands_end_settles_it_once_after_the_restart(instant: str) -> None:
    """The hand's last action is stored; the process dies while the hand's end reads
    its records back, while the transcript and settlement are on their way to the
    store, or after they were stored but before the table heard so.  The next process
    publishes the hand (or finds it published) and settles it exactly once, with a
    transcript that holds every stored record and verifies, and deals on."""
    h = a_hand_well_into_play()
    hand = h.core.hand
    assert hand is not None
    pid, _ = h.on_turn()
    h.send(pid, "action", _signed_drop(h, pid, hand.hand_no, hand.recorder.head))
    h.answer(min(h.inflight))  # the drop is stored; the hand is over and reads its log
    records = stored(h)

    def in_flight(kind: type) -> int:
        (op_id,) = [k for k, e in h.inflight.items() if isinstance(e, io.Write) and isinstance(e.op, kind)]
        return op_id

    read = in_flight(io.LogOp)
    if instant != "reading the log":
        h.answer(read)
        finish = in_flight(io.FinishOp)
        if instant == "published, answer lost":
            op = h.inflight[finish]
            assert isinstance(op, io.Write)
            h.store.run("t0", h.store.tables["t0"].epoch, op.op)  # stored; the answer never comes back
    ended = h.store.hands[hand.hand_id]
    assert ended.settlements == (1 if instant == "published, answer lost" else 0)
    _crash_and_restart(h)
    h.advance(h.now + 5000)
    assert ended.transcript is not None and ended.settlements == 1 and h.store.check_ledger() is None
    assert ended.transcript["log"] == records
    assert ended.transcript_text == fastjson.canonical(ended.transcript)
    assert verify_transcript(ended.transcript, h.keys.signer.public_bytes).ok
    nxt = h.core.hand
    assert nxt is not None and nxt.hand_no == hand.hand_no + 1  # and the table deals on


def _signed_drop(h: Harness, pid: str, hand_no: int, head: str) -> dict[str, Any]:
    hand = h.core.hand
    assert hand is not None
    seat = hand.seat_of(pid)
    move = {"kind": "drop", "seat": seat}
    sig = h.signers[pid].sign("move", move_body("t0", hand_no, head, move), PROTOCOL_V2)
    return {"hand_no": hand_no, "action": {"kind": "drop"}, "prev": head, "sig": sig}


# ----------------------------------------------------------------------------- a real server
async def test_over_a_real_socket_a_rejoin_gets_every_event_and_the_transcript_every_record(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL and WebSockets: a hand played past what memory keeps; a player who
    connects again gets the events of the whole hand, exactly as its seat was sent
    them (the forgotten ones read back from the database), and the published
    transcript holds every record and verifies."""
    from service.app import METRICS, TABLES

    table, a, b = await seat_two(api, server)
    # this table's reads of its log, counted at its own store (the server-wide metric
    # rummy_log_reads_total also counts the other tests' tables on this shared server)
    store = server.app[TABLES][table].store
    reads: list[io.LogOp] = []
    run = store.run

    async def counted(op: Any) -> Any:
        if isinstance(op, io.LogOp):
            reads.append(op)
        return await run(op)

    monkeypatch.setattr(store, "run", counted)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        await draw_and_discard(table, hand_no, ca, cb, TURNS)
        hand = server.app[TABLES][table].hand
        assert hand is not None and hand.recorder.records.forgotten.start == FIRST_KEPT
        last = len(hand.recorder.records) - 1
        await ca.wait_frame(lambda f: f.get("type") == "update" and f["i"] == last)
        pushed = [{"i": f["i"], **e} for f in ca.frames if f.get("type") == "update" for e in f["events"]]
        before = len(reads)
        metric = server.app[METRICS].registry.get_sample_value("rummy_log_reads_total") or 0.0
        async with Client(server.url, a["token"], a["signer"]) as ca2:
            snap = await ca2.request({"type": "join", "table_id": table})
            assert snap["type"] == "reply", snap
            assert snap["result"]["hand"]["events"] == pushed and len(pushed) > 2 * TURNS
            assert not hand.recorder.records.forgotten, "held again until the next record is stored"
            # a spectator's burst of joins asking for the whole hand: answered from memory
            watcher = await api.player("watcher")
            async with Client(server.url, watcher["token"], watcher["signer"]) as cw:
                answers = await asyncio.gather(*(cw.request({"type": "join", "table_id": table}) for _ in range(40)))
            assert all(r["type"] == "reply" and len(r["result"]["hand"]["events"]) > 2 * TURNS for r in answers)
            assert len(reads) == before + 1
            # the server-wide metric counts it too (and any other table's meanwhile)
            assert (server.app[METRICS].registry.get_sample_value("rummy_log_reads_total") or 0.0) >= metric + 1
            r = await ca2.leave(table, hand_no, seat_of(ca))
            assert r["type"] == "reply", r
        result = await cb.wait_frame(lambda f: f.get("type") == "result")
        await cb.leave(table)
    t = await api.call("GET", result["transcript"], expect=200)
    assert [r["i"] for r in t["log"]] == list(range(last + 2))  # every record, and the leave
    report = verify_transcript(t, await key_of(api))
    assert report.ok, report.failure
