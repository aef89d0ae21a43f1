"""Issue 16 on a live server: strict player keys at registration (a typed 400
``bad_key`` for every small-order and non-canonical key, ``key_in_use`` for another
player's), a signed ack for every move the table judges (docs/fairness.md §15), a
leave in the seed phases that stands the seat up after the hand (RULES.md D36), the
seat the house could not serve given its whole turn again (D35, through a PostgreSQL
that goes away), and the bots' evidence file checked by ``rummy-verify``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from service.app import CONFIG, TABLES
from service.bots import Bot
from service.startup import Running
from tests.conftest import Api, wait_for
from tests.pgproxy import PgProxy
from tests.skipclock import SkipClock, clocked
from tests.test_recovery import key_of, proxied, restart_table  # noqa: F401 - a fixture
from tests.test_server import by_turn, latest_view, seat_of, seat_two, seated, through_seeds
from tests.wsclient import Client
from verifier import vectors
from verifier.chain import commit_move
from verifier.fairness import PROTOCOL_V2, canonical, lp, player_commit
from verifier.record import HandRecorder
from verifier.signing import verify
from verifier.transcript import verify_transcript

STRICT = json.loads((Path(vectors.DIR) / "ed25519_strict.json").read_text(encoding="utf-8"))
REFUSED_KEYS = [k["public_key"] for k in STRICT["keys"] if k["verdict"] == "refused"]


def server_signed(key: bytes, item: dict[str, Any]) -> bool:
    return verify(key, item["purpose"], item["body"], item["sig"], PROTOCOL_V2)


# ----------------------------------------------------------------------------- registration (§9, D36)
async def test_every_small_order_and_non_canonical_key_is_refused_at_registration(api: Api) -> None:
    p = await api.player("strict")
    own = p["signer"].public_bytes.hex()
    small_order = [k["public_key"] for k in STRICT["keys"] if k["reason"] == "small_order"]
    assert len(small_order) == 8 and set(small_order) <= set(REFUSED_KEYS)
    before = len((await api.call("GET", "/api/admin/players?limit=500"))["players"])
    for key in REFUSED_KEYS:
        r = await api.call("PUT", "/api/me/key", token=p["token"], body={"public_key": key}, expect=400)
        assert r["error"]["code"] == "bad_key", (key, r)
        r = await api.call("POST", "/api/players", body={"name": "x", "public_key": key}, expect=400)
        assert r["error"]["code"] == "bad_key", (key, r)
    assert (await api.call("GET", "/api/me", token=p["token"]))["public_key"] == own  # unchanged
    assert len((await api.call("GET", "/api/admin/players?limit=500"))["players"]) == before  # nobody created


async def test_a_key_belongs_to_one_player(api: Api) -> None:
    a, b = await api.player("owner"), await api.player("copier")
    key = a["signer"].public_bytes.hex()
    r = await api.call("PUT", "/api/me/key", token=b["token"], body={"public_key": key}, expect=409)
    assert r["error"]["code"] == "key_in_use"
    r = await api.call("POST", "/api/players", body={"name": "copier2", "public_key": key}, expect=409)
    assert r["error"]["code"] == "key_in_use"
    await api.call("PUT", "/api/me/key", token=a["token"], body={"public_key": key}, expect=200)  # its own again


# ----------------------------------------------------------------------------- acks (§15)
async def test_every_judged_move_is_acknowledged_and_the_acks_agree_with_the_transcript(
    api: Api, server: Running
) -> None:
    table, a, b = await seat_two(api, server)
    key = await key_of(api)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        kept: dict[Client, list[dict[str, Any]]] = {ca: [], cb: []}
        for c in (ca, cb):  # the commit and reveal acks, accepted
            for f in c.frames:
                ack = (f.get("result") or {}).get("ack") if f.get("type") == "reply" else None
                if ack:
                    assert ack["body"]["outcome"] == "accepted" and server_signed(key, ack)
                    kept[c].append(ack)
            assert [k["body"]["move"]["kind"] for k in kept[c]] == ["commit", "reveal"]
        on, off = by_turn(ca, cb)
        # refused by the rules: out of turn, and over an old record
        out_of_turn = await off.act(table, hand_no, seat_of(off), {"kind": "draw_closed"})
        older = next(f["record"]["h"] for f in on.frames if f.get("type") == "hand" and f["record"]["i"] == 1)
        stale = await on.act(table, hand_no, seat_of(on), {"kind": "draw_closed"}, prev=older)
        # refused unjudged, with no ack (§15): signed over no record of the log — were it
        # acknowledged, a player could have the server quote the guessed link of a record
        # not made yet and "prove" the house lied — or not signed by the seat's key
        unknown = await on.act(table, hand_no, seat_of(on), {"kind": "draw_closed"}, prev="00" * 32)
        assert unknown["error"]["code"] == "unknown_head" and "ack" not in unknown["error"]
        forged = {
            "type": "action",
            "table_id": table,
            "hand_no": hand_no,
            "action": {"kind": "draw_closed"},
            "prev": on.head(),
            "sig": off.sign(table, hand_no, on.head(), {"kind": "draw_closed", "seat": seat_of(on)}),
        }
        bad = await on.request(forged)
        assert bad["error"]["code"] == "bad_signature" and "ack" not in bad["error"]
        for c, err, code in ((off, out_of_turn, "not_your_turn"), (on, stale, "stale_head")):
            assert err["type"] == "error" and err["error"]["code"] == code
            ack = err["error"]["ack"]
            body = ack["body"]
            assert server_signed(key, ack) and body["outcome"] == "refused" and body["code"] == code
            assert body["i"] == 3 and body["h"] == c.head() and body["seat"] == seat_of(c)
            kept[c].append(ack)
        # refused before any table judged it: another hand's number — no ack
        wrong = await on.act(table, hand_no + 5, seat_of(on), {"kind": "draw_closed"})
        assert wrong["error"]["code"] == "wrong_hand" and "ack" not in wrong["error"]
        # accepted: the ack is the signed head of the record that holds the move
        drew = await on.act(table, hand_no, seat_of(on), {"kind": "draw_closed"})
        ack = drew["result"]["ack"]
        assert server_signed(key, ack) and ack["body"]["i"] == drew["result"]["i"] == 4
        assert ack["body"]["h"] == drew["result"]["h"] and "head" not in drew["result"]
        assert ack["body"]["arrived"] >= 0 and ack["body"]["code"] is None
        kept[on].append(ack)
        left = await off.leave(table, hand_no, seat_of(off))
        assert left["result"]["charged"] is True and left["result"]["ack"]["body"]["move"]["kind"] == "leave"
        kept[off].append(left["result"]["ack"])
        result = await on.wait_frame(lambda f: f.get("type") == "result", timeout=30)
        await on.leave(table)
    t = await api.call("GET", result["transcript"], expect=200)
    for items in kept.values():
        report = verify_transcript(t, key, items)
        assert report.ok, report.failure
        assert report.summary["evidence"]["checked"] == len(items)
    # The signature is over the ack purpose, exactly (§9).
    assert server_signed(key, ack) and canonical(ack["body"]) and lp("rummy-pf/v2/ack")


async def test_a_commitment_not_signed_by_the_seat_over_the_header_is_refused_unjudged(
    api: Api, server: Running
) -> None:
    """§15: a table judges only a move its player signed over the record the server
    reads it over (a commitment: the header).  One signed by another key, or over
    another record, is refused ``bad_signature`` with no ack — an ack would quote a
    signature that does not verify, which the verifier now takes for the house
    misquoting the move.  The seat commits afterwards as if nothing happened."""
    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        await seated(table, ca, cb)
        frame = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        h, seat = frame["record"]["header"], ca.seat_in(frame["record"])
        commit = player_commit(seat, b"\x05" * 32)
        base = {"type": "commit", "table_id": h["table_id"], "hand_no": h["hand_no"], "commit": commit.hex()}
        over_another = ca.sign(h["table_id"], h["hand_no"], "00" * 32, commit_move(seat, commit))
        by_another = cb.sign(h["table_id"], h["hand_no"], frame["record"]["h"], commit_move(seat, commit))
        for sig in (over_another, by_another):
            r = await ca.request({**base, "sig": sig})
            assert r["type"] == "error" and r["error"]["code"] == "bad_signature" and "ack" not in r["error"], r
        r = await ca.commit(frame["record"], commit)
        assert r["type"] == "reply" and r["result"]["ack"]["body"]["outcome"] == "accepted", r


# ----------------------------------------------------------------------------- D36
async def test_leaving_in_the_seed_phases_stands_the_seat_up_after_the_hand(api: Api, server: Running) -> None:
    table = await api.table(seats=4, point_value=2, turn_seconds=1, max_missed_turns=1)
    actor, clock = await clocked(server, table)  # the window and the turns that wait for b are skipped
    a, b = await api.player("stays"), await api.player("goes")
    key = await key_of(api)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        for c in (ca, cb):
            await c.request({"type": "join", "table_id": table})
            assert (await c.request({"type": "sit", "table_id": table}))["type"] == "reply"
        hand = await cb.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        gone = await cb.request({"type": "leave", "table_id": table})  # no signature: not a move
        assert gone["result"] == {"left": cb.seat_in(hand["record"]), "charged": False, "after_hand": True}
        seated = next(x for x in (await api.call("GET", "/api/tables"))["tables"] if x["id"] == table)["seated"]
        assert b["id"] in {s["player_id"] for s in seated}  # until the hand ends
        seat_a = ca.seat_in(hand["record"])
        from verifier.fairness import player_commit

        assert (await ca.commit(hand["record"], player_commit(seat_a, b"\x05" * 32)))["type"] == "reply"

        def revealing(f: dict[str, Any]) -> bool:
            return f.get("type") == "hand" and f.get("phase") == "reveal"

        await clock.skip([actor], 60, until=lambda: any(revealing(f) for f in ca.frames))  # b's commit window
        reveal = await ca.wait_frame(revealing, timeout=20)
        assert (await ca.reveal(reveal["record"], seat_a, b"\x05" * 32))["type"] == "reply"
        await ca.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3, timeout=20)
        seat_b = cb.seat_in(hand["record"])

        def b_on_turn() -> bool:
            run = actor.hand
            if run is None or run.recorder.ended or run.recorder.state is None:
                return False
            return run.recorder.state.turn == seat_b

        while not any(f.get("type") == "result" for f in ca.frames):  # play on; the clock plays for the other seat
            view = latest_view(ca)
            if view["turn"] == seat_a and view["phase"] == "draw":
                await ca.act(table, hand["hand_no"], seat_a, {"kind": "draw_closed"})
                await wait_for(lambda: latest_view(ca)["phase"] != "draw" or latest_view(ca)["turn"] != seat_a)
                v = latest_view(ca)
                if v["turn"] == seat_a and v["phase"] == "discard":
                    card = v["me"]["cards"][-1]
                    await ca.act(table, hand["hand_no"], seat_a, {"kind": "discard", "card": card})
            if b_on_turn():  # the table's clock plays b's turn: skipped, never a's
                await clock.skip([actor], 0.5)
            else:
                await asyncio.sleep(0.1)
        result = next(f for f in ca.frames if f.get("type") == "result")
        # the table tells why the seat went: its player left before the deal (D36)
        told = await ca.wait_frame(lambda f: f.get("type") == "table" and f["stood"])
        assert [(e["player_id"], e["reason"], e["rule"]) for e in told["stood"]] == [(b["id"], "left", "D36")]
        await ca.leave(table)
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t, key).ok
    assert not [r for r in t["log"] if r["type"] == "action" and r["action"]["kind"] == "leave"]
    seat_b = cb.seat_in(hand["record"])
    assert any(
        r["type"] == "action" and r["action"] == {"kind": "timeout", "seat": seat_b} for r in t["log"]
    )  # D36: the clock played for the seat until it dropped it
    assert t["result"]["winner"] == seat_a
    seated = next(x for x in (await api.call("GET", "/api/tables"))["tables"] if x["id"] == table)["seated"]
    assert b["id"] not in {s["player_id"] for s in seated}  # stood up as the hand ended


# ----------------------------------------------------------------------------- D35
@pytest.mark.parametrize("restart", [False, True], ids=["kept", "restarted"])
async def test_a_move_the_house_could_not_store_leaves_the_seat_its_whole_turn(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
    restart: bool,
) -> None:
    """The database goes away while a draw is in flight: the draw is refused
    ``unavailable`` with a signed ack, and the clock does not move for that seat until
    a whole turn has passed since the refusal — the verifier checks it (§15.7).
    Without the re-arm the turn's own end (3 s after the refusal) plus the resume
    grace (1 s) let the clock move ~4 s early, and ``evidence`` failed.  ``restarted``:
    the table restarts half a second after the refusal (the path a server restart
    takes), a new core that never saw it (D32, tests/test_owed_across_restart.py);
    before 0b2d31b it moved the clock 3 s after the refusal."""
    server, proxy = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        table, a, b = await seat_two(api, server, turn_seconds=8, max_missed_turns=3)
        key = await key_of(api)
        async with (
            Client(server.url, a["token"], a["signer"]) as ca,
            Client(server.url, b["token"], b["signer"]) as cb,
        ):
            hand_no = await through_seeds(table, ca, cb)
            c = by_turn(ca, cb)[0]
            other = cb if c is ca else ca
            seat = seat_of(c)
            clock = server.app[CONFIG].settings.clock  # the tables' clock skips ahead instead of sleeping
            assert isinstance(clock, SkipClock)
            tables = list(server.app[TABLES].values())
            await clock.skip(tables, 5)  # 5 s into the 8 s turn: what is left of it is less than the whole turn owed
            proxy.refuse = True
            proxy.cut()  # PostgreSQL is gone
            move = asyncio.create_task(c.act(table, hand_no, seat, {"kind": "draw_closed"}, timeout=40))
            await c.wait_frame(lambda f: f.get("type") == "paused", timeout=20)
            await clock.skip(tables, 0.5)
            proxy.refuse = False
            answer = await move
            assert answer["type"] == "error" and answer["error"]["code"] == "unavailable", answer
            ack = answer["error"]["ack"]
            assert server_signed(key, ack) and ack["body"]["outcome"] == "refused"
            assert ack["body"]["code"] == "unavailable" and ack["body"]["i"] == 3
            arrived = ack["body"]["arrived"]
            if restart:
                await c.wait_frame(lambda f: f.get("type") == "resumed", timeout=20)
                await restart_table(server, table, down=0.5, clock=clock)
                for cl in (ca, cb):
                    assert (await cl.request({"type": "join", "table_id": table}))["type"] == "reply"
                tables = list(server.app[TABLES].values())

            # c sends nothing more: the clock moves for it, a whole turn after the refusal
            def moved(f: dict[str, Any]) -> bool:
                return f.get("type") == "update" and any(e["kind"] == "clock" for e in f["events"])

            await clock.skip(tables, 20, until=lambda: any(moved(f) for f in other.frames))
            timed = await other.wait_frame(moved, timeout=40)
            await other.leave(table, hand_no, seat_of(other))
            result = await c.wait_frame(lambda f: f.get("type") == "result", timeout=30)
            await c.leave(table)
        t = await api.call("GET", result["transcript"], expect=200)
        report = verify_transcript(t, key, [ack])
        assert report.ok, report.failure  # without the re-arm: evidence fails, the clock moved too early (D35)
        assert report.summary["evidence"] == {"items": 1, "checked": 1, "other_hands": 0, "after_void": 0}
        timeout = t["log"][timed["i"]]
        assert timeout["action"] == {"kind": "timeout", "seat": seat} and timeout["t"] >= arrived + 8000


# ----------------------------------------------------------------------------- the bots' evidence file
async def test_the_bots_write_an_evidence_file_rummy_verify_accepts(api: Api, server: Running, tmp_path: Path) -> None:
    table = await api.table(seats=4, point_value=1, turn_seconds=20)
    bots = []
    for n in range(2):
        p = await api.player(f"ev{n}", deposit=50_000)
        bots.append(Bot(server.url, p["token"], table, fast=True, max_hands=1, key=p["signer"]))
    await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), timeout=240)
    key = (await key_of(api)).hex()
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps(await api.call("GET", bots[0].hands_seen[0]["transcript"], expect=200)))
    for b in bots:
        path = tmp_path / f"{b.player_id}.json"
        n = b.write_evidence(path)
        kinds = {e["purpose"] for e in json.loads(path.read_text())}
        assert n > 4 and kinds == {"ack", "head", "header", "player"}
        r = subprocess.run(
            [sys.executable, "-m", "verifier.cli", "--key", key, str(transcript), "--receipts", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"evidence: {n} of {n} items checked" in r.stdout


def two_seat_recorder(table_id: str, server_seed: bytes) -> HandRecorder:
    """A hand's recorder at a four-seat table (30 s turns, 10 s seed windows) with seats
    0 and 1 dealt in, each with its own test key."""
    from verifier.hand import TableRules

    keys = {s: vectors.player_signer(table_id, s) for s in (0, 1)}
    return HandRecorder(
        vectors.TEST_SIGNER,
        table_id,
        1,
        TableRules(seats=4, turn_seconds=30),
        [(s, f"p{s}", k.public_bytes) for s, k in keys.items()],
        0,
        server_seed,
        commit_ms=10_000,
        reveal_ms=10_000,
    )


def test_what_the_house_owes_moves_the_window_and_the_turn_and_only_theirs() -> None:
    """HandRun.owe (D35): a seat still to send its commitment keeps the window to
    arrival + commit_ms; a seat on turn keeps the turn to arrival + turn_seconds; what
    is owed for one window or turn does not carry to the next."""
    from service.handrun import HandRun

    rec = two_seat_recorder("t-owe", b"\x02" * 32)
    run = HandRun(1, 1, rec, {0: "p0", 1: "p1"}, {0: 1, 1: 1})
    rec.open(1_000)
    assert run.window_end() == 11_000
    run.owe(1, 9_000)
    assert run.window_end() == 19_000 and run.deadline == 19.0
    run.commits[1] = (b"\x00" * 32, "00" * 64)  # seat 1 got its commitment in after all: nothing owed for it
    assert run.window_end() == 11_000
    rec.commitments({}, 11_000)
    rec.reveal({}, 12_000)
    rec.deal(12_005)
    run.turn_began = 12_005
    state = rec.state
    assert state is not None
    on_turn = state.turn
    assert run.turn_end() == 42_005
    run.owe(1 - on_turn, 40_000)  # not on turn: its turn is not running
    assert run.turn_end() == 42_005
    run.owe(on_turn, 40_000)
    assert run.turn_end() == 70_000 and run.deadline == 70.0
    run.turn_began = 50_000  # the next turn: nothing carried over
    assert run.turn_end() == 80_000


def test_a_hand_signs_each_head_once_and_keeps_only_the_newest() -> None:
    """HandRun.head: a record's head is signed once (the same object for the updates and
    the snapshot), verifies, and the hand keeps the newest HEADS_KEPT heads only; an
    older one asked for again is signed again, the same signature (Ed25519 is
    deterministic)."""
    from service.handrun import HEADS_KEPT, HandRun
    from verifier.chain import head_body
    from verifier.hand import TimeOut
    from verifier.record import PROTOCOL
    from verifier.signing import verify

    rec = two_seat_recorder("t-heads", b"\x03" * 32)
    run = HandRun(1, 1, rec, {0: "p0", 1: "p1"}, {0: 1, 1: 1})
    rec.open(1_000)
    rec.commitments({}, 11_000)
    rec.reveal({}, 12_000)
    rec.deal(12_005)
    first = [run.head(i) for i in range(4)]
    assert run.head(3) is first[3]  # signed once
    for i, h in enumerate(first):
        assert h["body"] == head_body("t-heads", 1, i, rec.records[i]["h"])
        assert verify(vectors.TEST_SIGNER.public_bytes, "head", h["body"], h["sig"], PROTOCOL)
    assert sorted(run.heads) == list(range(4 - HEADS_KEPT, 4))
    for t in range(5):  # the clock moves for the seat on turn: records 4…
        state = rec.state
        assert state is not None and state.turn is not None
        rec.act(TimeOut(state.turn), None, 13_000 + t)
        run.head(len(rec.records) - 1)
    newest = len(rec.records) - 1
    assert sorted(run.heads) == list(range(newest - HEADS_KEPT + 1, newest + 1)), sorted(run.heads)
    again = run.head(0)  # long gone: signed again, the same signature
    assert again == first[0] and again is not first[0]
