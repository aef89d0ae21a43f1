"""The table server over real sockets and a real PostgreSQL (issue 4)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import pytest

from service import ledger, tablestore, views
from service.appkeys import SOCKETS
from service.bots import Bot
from service.db import load_migrations, migrate
from service.handrun import restore
from service.startup import Running
from service.telling import Connection
from tests.conftest import Api, fresh_database, wait_for
from tests.skipclock import clocked
from tests.wsclient import Client
from verifier.chain import start_hand
from verifier.fairness import player_commit, reshuffler
from verifier.hand import Event, HandState, action_from_json, apply, seat_view
from verifier.signing import load_public_key
from verifier.transcript import verify_transcript


def replay_states(log: list[dict[str, Any]], server_seed: bytes) -> dict[int, HandState]:
    """The state after each record of a hand's log, from the verifier alone."""
    key, _, state, _ = start_hand(log[0]["header"], log[2]["reveals"], server_seed)
    assert state is not None
    states = {3: state}
    for rec in log[4:]:
        state, _ = apply(state, action_from_json(rec["action"]), reshuffler(key))
        states[rec["i"]] = state
    return states


def _flat(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames as received, a move's update (inside its reply) before the reply."""
    out = []
    for f in frames:
        if f.get("type") == "reply" and isinstance(f.get("update"), dict):
            out.append(f["update"])
        out.append(f)
    return out


def check_frames(frames: list[dict[str, Any]], player_id: str, t: dict[str, Any]) -> int:
    """Every frame this player received about the hand is exactly what its seat may
    see: events filtered for its seat, the view — the deal's whole, then each update's
    changes applied to the view before it (docs/api.md) — exactly the seat's view of
    the record's state, another seat's cards in no change before the end, and never
    the server seed before the result.  Returns how many update frames were checked."""
    header = t["log"][0]["header"]
    hand_no = header["hand_no"]
    table_id = header["table_id"]
    seat = next((s["seat"] for s in header["seats"] if s["player_id"] == player_id), None)
    states = replay_states(t["log"], bytes.fromhex(t["server_seed"])) if t["result"] else {}
    checked = 0
    held: tuple[int, dict[str, Any]] | None = None  # (i, the view the frames so far make)
    for f in _flat(frames):
        if f.get("table_id") == table_id and f.get("type") == "result" and f.get("hand_no") == hand_no:
            break
        assert t["server_seed"] not in json.dumps(f), "the server seed appeared before its reveal"
        snap = (f.get("result") or {}).get("hand") if f.get("type") == "reply" else None
        if isinstance(snap, dict) and snap.get("hand_no") == hand_no and snap.get("view") is not None:
            held = (snap["i"], snap["view"])
        if f.get("type") == "update" and f.get("table_id") == table_id and f.get("hand_no") == hand_no:
            rec = t["log"][f["i"]]
            expected = [Event.from_json(e).for_seat(seat) for e in rec["events"]]
            assert f["events"] == expected
            if "view" in f:
                held = (f["i"], f["view"])
            elif held is not None and held[0] >= f["i"]:
                continue  # a snapshot already held this record
            else:
                assert held is not None and held[0] == f["i"] - 1, "an update's changes with no view before them"
                ended = states[f["i"]].phase.value == "ended"
                assert ended or "cards" not in json.dumps(f["changes"].get("seats", {})), "another seat's cards"
                held = (f["i"], views.apply(held[1], f["changes"]))
            assert held[1] == json.loads(json.dumps(seat_view(states[f["i"]], seat)))
            for s in held[1]["seats"]:
                if held[1]["phase"] != "ended":
                    assert "cards" not in s, "another seat's cards in a view during play"
            checked += 1
    return checked


async def bot_hands(
    api: Api, server: Running, seats: int, players: int, hands: int, table: str | None = None
) -> tuple[str, list[Bot]]:
    if table is None:
        table = await api.table(seats=seats, point_value=3, commission_bps=700, turn_seconds=20)
    bots = []
    for n in range(players):
        p = await api.player(f"bot{n}", deposit=50_000)
        bots.append(Bot(server.url, p["token"], table, fast=True, keep_frames=True, max_hands=hands, key=p["signer"]))
    await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), timeout=240)
    return table, bots


@pytest.mark.parametrize("seats,players", [(4, 4), (6, 6), (8, 8), (6, 3)])
async def test_whole_hands_with_bots_verify_and_leak_nothing(
    api: Api, server: Running, seats: int, players: int
) -> None:
    key = await api.call("GET", "/api/fairness/key")
    pinned = load_public_key(key["public_key_hex"])
    ledger_after_each: list[bool] = []
    joined = asyncio.Event()

    async def watch(table_id: str) -> None:
        """A spectator: after every hand's result, the ledger must balance."""
        spectator = await api.player("watcher")
        async with Client(server.url, spectator["token"], spectator["signer"]) as w:
            await w.request({"type": "join", "table_id": table_id})
            joined.set()
            seen = 0
            while seen < 2:
                results = [f for f in w.frames if f.get("type") == "result"]
                for _ in results[seen:]:
                    ledger_after_each.append((await api.call("GET", "/api/ledger"))["ok"])
                seen = len(results)
                await asyncio.sleep(0.02)

    table = await api.table(seats=seats, point_value=3, commission_bps=700, turn_seconds=20)
    watcher = asyncio.create_task(watch(table))
    await asyncio.wait_for(joined.wait(), 30)  # the spectator is in before anyone sits
    table, bots = await bot_hands(api, server, seats, players, hands=2, table=table)
    await asyncio.wait_for(watcher, 60)
    assert ledger_after_each == [True, True]
    results = bots[0].hands_seen[:2]
    assert len(results) == 2
    before = await api.call("GET", "/api/ledger", expect=200)
    for r in results:
        t = await api.call("GET", r["transcript"], expect=200)
        report = verify_transcript(t, pinned)
        assert report.ok, report.failure
        assert t["log"][0]["header"]["table_id"] == table
        # rummy-pf/v2: every seat's commit, reveal and move carries its player's signature,
        # and every ack and signed head a bot kept, the header it accepted and its player
        # item agree with the published transcript (§15).
        header = t["log"][0]["header"]
        assert {s["player_key"] for s in header["seats"]} <= {b.key.public_bytes.hex() for b in bots}
        assert all(r["psig"] for r in t["log"][4:] if r["action"]["kind"] != "timeout")
        total = 0
        for b in bots:
            assert b.player_id is not None
            total += check_frames(b.frames, b.player_id, t)
            mine = b.evidence_of(table, header["hand_no"])
            assert {e["purpose"] for e in mine} == {"ack", "head", "header", "player"}, mine[:2]
            seat = next(s["seat"] for s in header["seats"] if s["player_id"] == b.player_id)
            moved = [r for r in t["log"][4:] if r["psig"] and r["action"]["seat"] == seat]
            # The acting seat gets one frame per move (issue 20): the reply, carrying
            # the record's update; no update push of its own for that record.
            hand_no = header["hand_no"]
            for r in moved:
                pushed = [
                    f for f in b.frames if f.get("type") == "update" and (f["hand_no"], f["i"]) == (hand_no, r["i"])
                ]
                inside = [
                    f
                    for f in b.frames
                    if f.get("type") == "reply"
                    and isinstance(f.get("update"), dict)
                    and (f["update"]["hand_no"], f["update"]["i"]) == (hand_no, r["i"])
                ]
                assert (len(pushed), len(inside)) == (0, 1), (r["i"], r["action"])
            assert len([e for e in mine if e["purpose"] == "ack"]) >= 2 + len(moved)  # commit, reveal, each move
            report = verify_transcript(t, pinned, mine)
            assert report.ok, report.failure
            assert report.summary["evidence"]["checked"] == len(mine)
        assert total > 0
    # Consecutive hands at the table chain (docs/fairness.md §11).
    t1 = await api.call("GET", results[0]["transcript"])
    t2 = await api.call("GET", results[1]["transcript"])
    assert t2["log"][0]["header"]["prev_head"] == t1["head"]
    assert before["ok"] is True
    # Each bot's balance is its deposit plus what the transcripts say it won or lost.
    for b in bots:
        me = await api.call("GET", "/api/me", token=b.token)
        deltas = 0
        for r in results:
            header = (await api.call("GET", r["transcript"]))["log"][0]["header"]
            seat = next((s["seat"] for s in header["seats"] if s["player_id"] == me["id"]), None)
            if seat is not None:
                deltas += r["result"]["settlement"]["deltas"].get(str(seat), 0)
        assert me["held"] == 0 and me["available"] == 50_000 + deltas
        assert not [e for e in b.errors if e["error"]["code"] not in ("not_seated",)], b.errors


async def seat_two(api: Api, server: Running, **rules: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    table = await api.table(**{"seats": 4, "point_value": 2, "turn_seconds": 30, **rules})
    a = await api.player("ann")
    b = await api.player("bo")
    return table, a, b


async def seated(table: str, *clients: Client) -> None:
    """Each client joins the table and sits (in order)."""
    for c in clients:
        await c.request({"type": "join", "table_id": table})
        r = await c.request({"type": "sit", "table_id": table})
        assert r["type"] == "reply", r


async def through_seeds(table: str, *clients: Client) -> int:
    """Join, sit, commit and reveal (signed) for every client; returns the hand number."""
    await seated(table, *clients)
    hand = await clients[0].wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
    hand_no = hand["hand_no"]
    seeds = {}
    for c in clients:
        frame = await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        seat = c.seat_in(frame["record"])
        seeds[c] = (seat, bytes([seat + 1]) * 32)
        r = await c.commit(frame["record"], player_commit(seat, seeds[c][1]))
        assert r["type"] == "reply", r
        ack = r["result"]["ack"]
        assert ack["body"]["move"]["kind"] == "commit" and ack["body"]["outcome"] == "accepted"
    for c in clients:
        frame = await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal")
        r = await c.reveal(frame["record"], *seeds[c])
        assert r["type"] == "reply", r
    for c in clients:
        await c.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3)
    return int(hand_no)


def seat_of(c: Client) -> int:
    return int(latest_view(c)["me"]["seat"])


def result_seat(t: dict[str, Any], player: dict[str, Any]) -> int:
    return int(next(s["seat"] for s in t["log"][0]["header"]["seats"] if s["player_id"] == player["id"]))


def latest_view(c: Client) -> dict[str, Any]:
    return next(f["view"] for f in reversed(c.frames) if f.get("type") == "update")


def by_turn(ca: Client, cb: Client) -> tuple[Client, Client]:
    """The two seats' clients, the one on turn first (as ``ca``'s latest view says)."""
    view = latest_view(ca)
    return (ca, cb) if view["turn"] == view["me"]["seat"] else (cb, ca)


async def draw_and_discard(table: str, hand_no: int, ca: Client, cb: Client, turns: int) -> None:
    """``turns`` turns of a two-seat hand: the seat to move draws from the closed pile
    and discards its first card (two action records a turn)."""
    for _ in range(turns):
        c = by_turn(ca, cb)[0]
        r = await c.act(table, hand_no, seat_of(c), {"kind": "draw_closed"})
        assert r["type"] == "reply", r
        await wait_for(lambda c=c: latest_view(c)["phase"] == "discard")
        card = latest_view(c)["me"]["cards"][0]
        r = await c.act(table, hand_no, seat_of(c), {"kind": "discard", "card": card})
        assert r["type"] == "reply", r
        await wait_for(lambda: latest_view(ca)["phase"] == "draw" and latest_view(cb)["phase"] == "draw")


async def records(pool: asyncpg.Pool, table: str) -> int:
    async with pool.acquire() as conn:
        return int(
            await conn.fetchval(
                "SELECT COUNT(*) FROM hand_records r JOIN hands h ON h.id = r.hand_id WHERE h.table_id = $1", table
            )
        )


async def test_bad_messages_get_typed_errors_and_change_nothing(api: Api, server: Running) -> None:
    from service.app import POOL

    pool = server.app[POOL]
    table, a, b = await seat_two(api, server)
    async with (
        Client(server.url, a["token"], a["signer"]) as ca,
        Client(server.url, b["token"], b["signer"]) as cb,
    ):
        hand_no = await through_seeds(table, ca, cb)
        on_turn, off_turn = by_turn(ca, cb)
        n0 = await records(pool, table)
        before = latest_view(on_turn)
        header_h = next(f for f in on_turn.frames if f.get("type") == "hand")["record"]["h"]

        async def error_of(c: Client, message: dict[str, Any] | None = None, **action: Any) -> str:
            if message is None:
                r = await c.act(table, hand_no, seat_of(c), action.pop("action"), **action)
            else:
                r = await c.request(message)
            assert r["type"] == "error", r
            return str(r["error"]["code"])

        def frame(**fields: Any) -> dict[str, Any]:
            base = {"type": "action", "table_id": table, "hand_no": hand_no, "prev": on_turn.head(), "sig": "00" * 64}
            return {**base, **fields}

        # Rule errors, from well-formed signed moves.
        assert await error_of(off_turn, action={"kind": "draw_closed"}) == "not_your_turn"
        assert await error_of(on_turn, action={"kind": "discard", "card": 3}) == "must_draw_first"
        assert await error_of(on_turn, action={"kind": "draw_closed"}, prev=header_h) == "stale_head"
        assert await error_of(on_turn, frame(action={"kind": "draw_closed"})) == "bad_signature"
        wrong_key = Client(server.url, a["token"], b["signer"] if on_turn is ca else a["signer"])
        wrong_key.frames = on_turn.frames
        forged = wrong_key.sign(table, hand_no, on_turn.head(), {"kind": "draw_closed", "seat": seat_of(on_turn)})
        assert await error_of(on_turn, frame(action={"kind": "draw_closed"}, sig=forged)) == "bad_signature"
        assert await error_of(on_turn, frame(action={"kind": "draw_closed"}, hand_no=hand_no + 1)) == "wrong_hand"
        # Malformed fields: refused at the edge.
        for bad in (
            frame(action={"kind": "discard", "card": "ZZ"}),
            frame(action={"kind": "discard", "card": 9999}),
            frame(action={"kind": "discard", "card": True}),
            frame(action={"kind": "discard", "card": 3.0}),
            frame(action="draw"),
            frame(action={"kind": "fly"}),
            frame(action={"kind": "timeout"}),
            frame(action={"kind": "draw_closed", "card": 3}),
            frame(action={"kind": "draw_closed"}, sig="zz"),
            frame(action={"kind": "draw_closed"}, extra=1),
            {"type": "dance", "table_id": table},
        ):
            assert await error_of(on_turn, bad) == "bad_message", bad
        assert await error_of(on_turn, frame(table_id="t_nope", action={"kind": "draw_closed"})) == "no_such_table"
        # Malformed frames with no usable id: a typed error all the same.
        for raw in [
            "this is not json",
            "[1, 2]",
            json.dumps({"type": "ping"}),
            '{"id": "\\ud800", "type": "ping"}',  # a lone surrogate: JSON, but no text an answer can echo
            json.dumps({"id": "a\u0000b", "type": "ping"}),
            "x" * 9000,
            "[" * 2000,
            "1" * 5000,
        ]:
            n = len(on_turn.frames)
            await on_turn.send_raw(raw)
            f = await on_turn.wait_frame(lambda f: f.get("type") == "error", start=n)
            assert f["error"]["code"] in ("bad_message", "message_too_large")
        # Nothing above changed the hand, and the other seat heard of none of it.
        assert await records(pool, table) == n0
        assert latest_view(on_turn) == before
        # Errors went to the client that caused them: the other saw only its own one.
        assert [f["error"]["code"] for f in off_turn.frames if f.get("type") == "error"] == ["not_your_turn"]
        # A replayed message: the original reply, applied once.
        prev = on_turn.head()
        sig = on_turn.sign(table, hand_no, prev, {"kind": "draw_closed", "seat": seat_of(on_turn)})
        draw = frame(action={"kind": "draw_closed"}, prev=prev, sig=sig)
        first = await on_turn.request(draw, msg_id="draw-1")
        assert first["type"] == "reply" and first["result"]["ack"]["body"]["i"] == first["result"]["i"]
        assert first["result"]["ack"]["body"]["h"] == first["result"]["h"]  # the ack is the record's head
        again = await on_turn.request(draw, msg_id="draw-1")
        assert again["replayed"] is True and again["result"] == first["result"]
        await wait_for(lambda: latest_view(on_turn)["phase"] == "discard")
        assert await records(pool, table) == n0 + 1
        # Once the connection has forgotten the reply (service.replies: 5 s after sending it),
        # the same id is judged again: refused as signed over an older record (the draw
        # is made), not applied twice, and not judged by the rules in a state it was not
        # signed for.
        mover = a["id"] if on_turn is ca else b["id"]
        (held,) = [c for c in server.app[SOCKETS].values() if c.player_id == mover]
        held.replies.clear()
        late = await on_turn.request(draw, msg_id="draw-1")
        assert late["type"] == "error" and late["error"]["code"] == "stale_head" and "replayed" not in late, late
        assert await records(pool, table) == n0 + 1
        # A card in another seat's hand is not yours to discard.
        other_card = next(iter(set(range(106)) - set(latest_view(on_turn)["me"]["cards"])))
        assert await error_of(on_turn, action={"kind": "discard", "card": other_card}) == "card_not_in_hand"
        for c in (ca, cb):
            await c.leave(table, hand_no, seat_of(c))


async def test_clock_moves_then_drops(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server, turn_seconds=1, max_missed_turns=2)
    actor, clock = await clocked(server, table)  # the graces and the turns skipped, not waited for
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        await through_seeds(table, ca, cb)
        await clock.skip([actor], 120, until=lambda: any(f.get("type") == "result" for f in ca.frames))
        result = await ca.wait_frame(lambda f: f.get("type") == "result", timeout=30)
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t).ok
    kinds = [(e["kind"], e["data"]) for r in t["log"][4:] for e in r["events"]]
    assert ("clock", {"missed": 1, "phase": "draw"}) in kinds
    assert any(k == "draw" and d["by_clock"] for k, d in kinds)
    drops = [d for k, d in kinds if k == "drop"]
    assert drops and drops[0]["reason"] == "clock" and drops[0]["points"] == 40  # D16, D22
    assert t["result"]["reason"] == "last_standing"
    assert all(r["action"]["kind"] == "timeout" for r in t["log"][4:])
    # D31: the seat the clock dropped was stood up; the other is still seated.
    dropped_seat = next(e["seat"] for r in t["log"][4:] for e in r["events"] if e["kind"] == "drop")
    dropped_player = next(s["player_id"] for s in t["log"][0]["header"]["seats"] if s["seat"] == dropped_seat)
    tables = await api.call("GET", "/api/tables")
    seated = {s["player_id"] for s in next(x for x in tables["tables"] if x["id"] == table)["seated"]}
    assert dropped_player not in seated and len(seated) == 1
    for token in (a["token"], b["token"]):
        await api.call("POST", f"/api/tables/{table}/leave", token=token)


async def test_seeds_no_commit_plays_with_empty_seed(api: Api, server: Running) -> None:
    """A seat that sends no commitment takes part with an empty seed (D21)."""
    table, a, b = await seat_two(api, server, turn_seconds=1, max_missed_turns=1)
    actor, clock = await clocked(server, table)  # the windows, graces and turns skipped, not waited for
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        for c in (ca, cb):
            await c.request({"type": "join", "table_id": table})
            await c.request({"type": "sit", "table_id": table})
        await clock.skip([actor], 120, until=lambda: any(f.get("type") == "result" for f in ca.frames))
        result = await ca.wait_frame(lambda f: f.get("type") == "result", timeout=40)
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t).ok
    assert [r["status"] for r in t["log"][2]["reveals"]] == ["no_commit", "no_commit"]
    for token in (a["token"], b["token"]):
        await api.call("POST", f"/api/tables/{table}/leave", token=token)


async def test_without_enough_balance_nobody_sits(api: Api, server: Running) -> None:
    table = await api.table(seats=4, point_value=10)
    poor = await api.player("poor", deposit=1299)  # 130 × 10 = 1300 needed (D20)
    r = await api.call("POST", f"/api/tables/{table}/sit", token=poor["token"], expect=409)
    assert r["error"]["code"] == "insufficient_balance" and r["error"]["rule"] == "D20"
    async with Client(server.url, poor["token"], poor["signer"]) as c:
        await c.request({"type": "join", "table_id": table})
        e = await c.request({"type": "sit", "table_id": table})
        assert e["type"] == "error" and e["error"]["code"] == "insufficient_balance"
    tables = await api.call("GET", "/api/tables")
    assert next(t for t in tables["tables"] if t["id"] == table)["seated"] == []
    await api.call("POST", f"/api/players/{poor['id']}/deposit", body={"amount": 1}, expect=200)
    ok = await api.call("POST", f"/api/tables/{table}/sit", token=poor["token"], expect=200)
    assert ok["seat"] == 0
    await api.call("POST", f"/api/tables/{table}/leave", token=poor["token"], expect=200)


async def test_auth_and_operator_only_routes(api: Api, server: Running) -> None:
    assert (await api.call("POST", "/api/tables", token="wrong", body={}, expect=401))["error"]["code"] == (
        "unauthorized"
    )
    assert (await api.call("GET", "/api/me", token="nope", expect=401))["error"]["code"] == "unauthorized"
    p = await api.player("x")
    assert (await api.call("GET", "/api/ledger", token=p["token"], expect=401))["error"]["code"] == "unauthorized"
    bad = await api.call("POST", "/api/tables", body={"seats": 5}, expect=400)
    assert bad["error"]["code"] == "bad_table"
    bad = await api.call("POST", "/api/tables", body={"seats": 4, "rake": 3}, expect=400)
    assert bad["error"]["code"] == "bad_table"
    neg = await api.call("POST", f"/api/players/{p['id']}/deposit", body={"amount": -5}, expect=400)
    assert neg["error"]["code"] == "bad_amount"
    fl = await api.call("POST", f"/api/players/{p['id']}/deposit", body={"amount": 2.5}, expect=400)
    assert fl["error"]["code"] == "bad_amount"
    huge = await api.call("POST", f"/api/players/{p['id']}/deposit", body={"amount": 10**19}, expect=400)
    assert huge["error"]["code"] == "bad_amount"
    big_table = await api.call("POST", "/api/tables", body={"seats": 4, "point_value": 10**14}, expect=400)
    assert big_table["error"]["code"] == "bad_table"
    assert (await api.call("GET", "/api/me", token=p["token"]))["available"] == 100_000  # nothing changed


async def test_ledger_settles_once_and_balances(api: Api, server: Running) -> None:
    from service.app import POOL

    table, bots = await bot_hands(api, server, 4, 2, hands=1)
    result = bots[0].hands_seen[0]
    summary = await api.call("GET", "/api/ledger", expect=200)
    assert summary["ok"] and summary["sum_of_accounts"] == 0 and summary["negative_accounts"] == 0
    pool = server.app[POOL]
    async with pool.acquire() as conn:
        hand_id = result["hand_id"]
        holds = {
            r["seat"]: (r["player_id"], r["hold"])
            for r in await conn.fetch("SELECT seat, player_id, hold FROM hand_players WHERE hand_id = $1", hand_id)
        }
        from verifier.settle import Settlement

        s = Settlement.from_json(result["result"]["settlement"])
        async with conn.transaction():
            again = await ledger.settle(conn, hand_id, holds, s)
        assert again is False  # keyed by the hand: a retry changes nothing
    assert await api.call("GET", "/api/ledger") == summary


async def test_transcript_only_after_the_hand(api: Api, server: Running) -> None:
    from service.app import POOL

    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        mine = latest_view(ca)["me"]["cards"]
        async with server.app[POOL].acquire() as conn:
            hand_id = await conn.fetchval("SELECT id FROM hands WHERE table_id = $1", table)
            sealed = await conn.fetchrow("SELECT seed_sealed, transcript FROM hands WHERE id = $1", hand_id)
            log_text = " ".join(
                r["record"]
                for r in await conn.fetch("SELECT record::text AS record FROM hand_records WHERE hand_id = $1", hand_id)
            )
        assert sealed["transcript"] is None
        r = await api.call("GET", f"/api/hands/{hand_id}/transcript", expect=409)
        assert r["error"]["code"] == "hand_in_progress"
        assert '"server_seed"' not in log_text
        # Hidden cards at rest: the stored records show what a spectator sees, no more.
        async with server.app[POOL].acquire() as conn:
            rows = [
                json.loads(r["record"])
                for r in await conn.fetch("SELECT record::text AS record FROM hand_records WHERE hand_id = $1", hand_id)
            ]
        dealt = [e for r in rows for e in r.get("events", []) if e["kind"] == "hand"]
        assert dealt and all(e["private"] == {} for e in dealt)
        assert all(e["private"] == {} for r in rows for e in r.get("events", []))
        await ca.leave(table, hand_no, seat_of(ca))
        result = await cb.wait_frame(lambda f: f.get("type") == "result")
        await cb.leave(table)
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t).ok and t["result"]["reason"] == "last_standing"
    assert t["server_seed"] not in log_text
    published = next(e for e in t["log"][3]["events"] if e["kind"] == "hand" and e["seat"] == result_seat(t, a))
    assert published["private"]["cards"] == mine  # published in full once the hand is over


async def test_state_is_rebuilt_from_the_stored_log(api: Api, server: Running) -> None:
    from service.app import CONFIG, POOL, TABLES

    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        on_turn = by_turn(ca, cb)[0]
        r = await on_turn.act(table, hand_no, seat_of(on_turn), {"kind": "draw_open"})
        assert r["type"] == "reply", r
        await wait_for(lambda: latest_view(on_turn)["phase"] == "discard")
        card = latest_view(on_turn)["me"]["cards"][0]
        r = await on_turn.act(table, hand_no, seat_of(on_turn), {"kind": "discard", "card": card})
        assert r["type"] == "reply", r
        actor = server.app[TABLES][table]
        assert actor.hand is not None
        async with server.app[POOL].acquire() as conn:
            stored = await tablestore.load_hand(conn, table)
        assert stored is not None
        # The path a restart takes: every sealed record opened and fed through the recorder.
        restored = restore(stored, server.app[CONFIG].keys, table)
        assert restored.void_reason is None
        assert restored.run.recorder.state == actor.hand.recorder.state
        assert restored.run.recorder.records == actor.hand.recorder.records
        assert restored.run.phase == "play" and restored.run.turn_began == actor.hand.turn_began
        for c in (ca, cb):
            await c.leave(table, hand_no, seat_of(c))


async def test_one_live_connection_per_seat_and_reconnect_restores_the_view(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        # The seat on turn draws from the closed pile; the other seat sees that it drew,
        # never which card.
        on_turn = by_turn(ca, cb)[0]
        deal_i = next(f["i"] for f in ca.frames if f.get("type") == "update")
        r = await on_turn.act(table, hand_no, seat_of(on_turn), {"kind": "draw_closed"})
        assert r["type"] == "reply", r
        await ca.wait_frame(lambda f: f.get("type") == "update" and f["i"] > deal_i)
        mine = latest_view(ca)["me"]["cards"]
        pushed = [{"i": f["i"], **e} for f in ca.frames if f.get("type") == "update" for e in f["events"]]
        async with Client(server.url, a["token"], a["signer"]) as ca2:
            snap = await ca2.request({"type": "join", "table_id": table})
            assert snap["result"]["hand"]["view"]["me"]["cards"] == mine
            assert "cards" not in json.dumps(snap["result"]["hand"]["view"]["seats"])
            await ca.wait_frame(lambda f: f.get("type") == "replaced")
            hand = snap["result"]["hand"]
            # What happened while away: the events of the hand, exactly as this seat was
            # sent them (a closed draw's card only to the seat that drew it); with
            # ``since`` only those after the record named.
            assert hand["events"] == pushed and pushed[0]["kind"] == "deal"
            draws = [e for e in pushed if e["kind"] == "draw"]
            assert len(draws) == 1 and ("card" in draws[0]) == (on_turn is ca)
            again = await ca2.request({"type": "join", "table_id": table, "since": {"hand_no": hand_no, "i": deal_i}})
            assert again["result"]["hand"]["events"] == [e for e in pushed if e["i"] > deal_i] != []
            other = await ca2.request({"type": "join", "table_id": table, "since": {"hand_no": hand_no + 7, "i": 3}})
            assert other["result"]["hand"]["events"] == pushed  # another hand: all of this one
            bad = await ca2.request({"type": "join", "table_id": table, "since": {"hand_no": hand_no, "i": -1}})
            assert bad["type"] == "error" and bad["error"]["code"] == "bad_message", bad
            r = await ca2.leave(table, hand["hand_no"], hand["seat"])
            assert r["type"] == "reply" and r["result"]["charged"] is True
        await cb.leave(table)


async def test_a_slow_client_is_dropped_not_waited_for() -> None:
    dropped = []
    conn = Connection("p", 3, on_overflow=lambda: dropped.append(True))
    for n in range(3):
        conn.push({"n": n})
    assert not conn.closed
    conn.push({"n": 3})
    assert conn.closed and dropped == [True]
    conn.push({"n": 4})  # ignored once closed
    assert len(conn.outbox) <= 4


async def test_migrations_applied_twice_change_nothing(pg_dsn: str) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:

        async def schema() -> list[Any]:
            cols = await conn.fetch(
                "SELECT table_name, column_name, data_type, is_nullable, column_default FROM "
                "information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2"
            )
            cons = await conn.fetch(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2"
            )
            migs = await conn.fetch("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY 1")
            seeded = await conn.fetch("SELECT id, kind FROM accounts WHERE player_id IS NULL ORDER BY 1")
            return [list(map(tuple, cols)), list(map(tuple, cons)), list(map(tuple, migs)), list(map(tuple, seeded))]

        await migrate(conn)
        first = await schema()
        assert await migrate(conn) == []
        assert await migrate(conn) == []
        assert await schema() == first
        assert [m[0] for m in first[2]] == [m.version for m in load_migrations()] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    finally:
        await conn.close()


def test_keys_are_created_once_and_reused(tmp_path: Any) -> None:
    from service.keys import ServerKeys

    k1 = ServerKeys.load(tmp_path)
    k2 = ServerKeys.load(tmp_path)
    assert k1.signer.public_bytes == k2.signer.public_bytes and k1.seed_key == k2.seed_key
    nonce, sealed = k1.seal_seed(b"s" * 32, "t", 1)
    assert k2.open_seed(nonce, sealed, "t", 1) == b"s" * 32
    assert (tmp_path / "signing-ed25519.key").stat().st_mode & 0o077 == 0
    from cryptography.exceptions import InvalidTag

    with pytest.raises(InvalidTag):
        k2.open_seed(nonce, sealed, "t", 2)  # bound to its hand
    # One key without the other is refused, never silently remade (a new identity).
    from service.keys import SIGNING_KEY_FILE, KeyFileError

    (tmp_path / SIGNING_KEY_FILE).unlink()
    with pytest.raises(KeyFileError, match="is missing"):
        ServerKeys.load(tmp_path)
    assert not (tmp_path / SIGNING_KEY_FILE).exists()


class _LosesAResult(Bot):
    """A bot whose connection dies just as its first hand's result is on the way: it
    never gets that frame, and connects again."""

    lost: int | None = None

    async def on_message(self, m: dict[str, Any]) -> None:
        if m.get("type") == "result" and self.lost is None:
            self.lost = int(m["hand_no"])
            assert self._ws is not None
            await self._ws.close()
            return
        await super().on_message(m)


async def test_a_bot_that_missed_a_result_catches_up_and_leaves(api: Api, server: Running) -> None:
    """A result is pushed only to the sockets open as the hand ends.  A bot that lost
    its connection then reads the hand back after reconnecting, so it counts the hands it
    played: without that, once its partner had played its hands and left, it waited
    for ever for a hand a lone seat is never dealt (CI, test_workers_share...)."""
    table = await api.table(seats=4, point_value=1, turn_seconds=20)
    p, q = await api.player("steady"), await api.player("unlucky")
    steady = Bot(server.url, p["token"], table, fast=True, max_hands=2, key=p["signer"])
    unlucky = _LosesAResult(server.url, q["token"], table, fast=True, max_hands=2, key=q["signer"])
    await asyncio.wait_for(asyncio.gather(steady.run(), unlucky.run()), timeout=120)
    assert steady.left and unlucky.left
    assert unlucky.lost is not None and unlucky.connections >= 2
    by_hand = {r["hand_no"]: r for r in unlucky.hands_seen}
    assert len(by_hand) == len(unlucky.hands_seen) == 2, unlucky.hands_seen
    caught = by_hand[unlucky.lost]
    assert caught.get("caught_up") is True
    pushed = next(r for r in steady.hands_seen if r["hand_no"] == unlucky.lost)
    for k in ("hand_id", "void", "result", "server_seed", "head", "transcript"):
        assert caught[k] == pushed[k], k
    assert not [r for r in unlucky.hands_seen if r is not caught and r.get("caught_up")]


async def test_a_client_that_never_reads_does_not_stall_the_table(api: Api, server: Running) -> None:
    """A spectator joins and then stops reading; two bots play on regardless."""
    import aiohttp

    table = await api.table(seats=4, point_value=1, turn_seconds=20)
    idle = await api.player("idle")
    bots = []
    for n in range(2):
        p = await api.player(f"b{n}")
        bots.append(Bot(server.url, p["token"], table, fast=True, max_hands=2))
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(server.url + "/ws", headers={"Authorization": f"Bearer {idle['token']}"})
        await ws.send_json({"id": "j", "type": "join", "table_id": table})
        # ...and never read again.
        await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), timeout=120)
        assert all(len(b.hands_seen) >= 2 for b in bots)
        await ws.close()


async def test_a_seat_that_withholds_its_reveal_sits_out_and_pays_a_first_drop(api: Api, server: Running) -> None:
    table = await api.table(seats=4, point_value=2, turn_seconds=30)
    players = [await api.player(n) for n in ("ann", "bo", "cy")]
    async with (
        Client(server.url, players[0]["token"], players[0]["signer"]) as c0,
        Client(server.url, players[1]["token"], players[1]["signer"]) as c1,
        Client(server.url, players[2]["token"], players[2]["signer"]) as c2,
    ):
        clients = [c0, c1, c2]
        for c in clients:
            await c.request({"type": "join", "table_id": table})
            await c.request({"type": "sit", "table_id": table})
        frame = await c0.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        hand_no = frame["hand_no"]
        seats = {s["player_id"]: s["seat"] for s in frame["record"]["header"]["seats"]}
        seed = {c: bytes([n + 7]) * 32 for n, c in enumerate(clients)}
        for c, p in zip(clients, players, strict=True):
            r = await c.commit(frame["record"], player_commit(seats[p["id"]], seed[c]))
            assert r["type"] == "reply"
        reveal = await c0.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal")
        wrong = await c2.reveal(reveal["record"], seats[players[2]["id"]], b"\0" * 32)
        assert wrong["error"]["code"] == "seed_mismatch"
        for c, p in zip((c0, c1), players, strict=False):
            r = await c.reveal(reveal["record"], seats[p["id"]], seed[c])
            assert r["type"] == "reply" and r["result"]["ack"]["body"]["move"]["seed"] == seed[c].hex()
        deal = await c0.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3, timeout=15)
        assert [e["kind"] for e in deal["events"]].count("forfeit") == 1
        await c1.leave(table, hand_no, seats[players[1]["id"]])
        result = await c0.wait_frame(lambda f: f.get("type") == "result")
        for c in (c0, c2):
            await c.leave(table)
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t).ok
    statuses = {r["seat"]: r["status"] for r in t["log"][2]["reveals"]}
    cy = seats[players[2]["id"]]
    assert statuses[cy] == "withheld" and sorted(statuses.values()).count("revealed") == 2
    assert t["result"]["points"][str(cy)] == 20 and t["result"]["settlement"]["deltas"][str(cy)] == -40


async def test_settlement_retries_after_a_database_failure(api: Api, server: Running) -> None:
    """The first attempt to settle fails inside PostgreSQL (a trigger raises once);
    the table retries, the hand settles exactly once, the ledger balances."""
    from service.app import POOL

    pool = server.app[POOL]
    table, a, b = await seat_two(api, server)
    # Only this test's table's settlements count (another test's table may still settle a
    # hand in the background on this server: its clock drops the seats that left; cc63).
    async with pool.acquire() as conn:
        await conn.execute(
            f"""
            CREATE SEQUENCE test_fail_once;  -- sequences do not roll back: the failure happens once
            CREATE OR REPLACE FUNCTION test_fail_once() RETURNS trigger AS $$
            BEGIN
                IF (SELECT table_id FROM hands WHERE id = NEW.hand_id) = '{table}' THEN
                    IF nextval('test_fail_once') = 1 THEN
                        RAISE EXCEPTION 'injected failure';
                    END IF;
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER test_fail_once BEFORE INSERT ON settlements
                FOR EACH ROW EXECUTE FUNCTION test_fail_once();
            """
        )
    try:
        async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
            hand_no = await through_seeds(table, ca, cb)
            await ca.leave(table, hand_no, seat_of(ca))
            result = await cb.wait_frame(lambda f: f.get("type") == "result", timeout=20)
            await cb.leave(table)
        async with pool.acquire() as conn:
            assert await conn.fetchval("SELECT last_value FROM test_fail_once") == 2  # failed once, then settled
            n = await conn.fetchval("SELECT COUNT(*) FROM settlements WHERE hand_id = $1", result["hand_id"])
            assert n == 1
        assert (await api.call("GET", "/api/ledger"))["ok"] is True
        t = await api.call("GET", result["transcript"], expect=200)
        assert verify_transcript(t).ok
    finally:
        async with pool.acquire() as conn:
            await conn.execute(
                "DROP TRIGGER IF EXISTS test_fail_once ON settlements; DROP FUNCTION IF EXISTS test_fail_once(); "
                "DROP SEQUENCE IF EXISTS test_fail_once;"
            )


async def test_websocket_with_a_wrong_token_is_refused(server: Running, api: Api) -> None:
    import aiohttp

    p = await api.call("POST", "/api/players", body={"name": "sub"}, expect=201)
    token = p["token"]
    async with aiohttp.ClientSession() as session:
        for headers, protocols in (
            ({"Authorization": "Bearer not-a-token"}, ()),
            ({}, ()),
            ({}, ("rummy.v2", "bearer.not-a-token")),
            ({}, ("rummy.v2", f"bearer.{token}", "bearer.another")),  # two tokens: neither is taken
        ):
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:
                await session.ws_connect(server.url + "/ws", headers=headers, protocols=protocols)
            assert e.value.status == 401
        # Never from the URL, where proxies would log it.
        with pytest.raises(aiohttp.WSServerHandshakeError) as e:
            await session.ws_connect(server.url + "/ws?token=" + token)
        assert e.value.status == 401
        async with session.get(server.url + "/api/me?token=" + token) as r:
            assert r.status == 401
        # A browser's way: the token as a second subprotocol; the server picks rummy.v2.
        ws = await session.ws_connect(server.url + "/ws", protocols=("rummy.v2", f"bearer.{token}"))
        try:
            assert ws.protocol == "rummy.v2"
            hello = await ws.receive_json(timeout=5)
            assert hello["type"] == "hello" and hello["player_id"] == p["id"]
            assert hello["servers"] == []  # a server alone: no other node to go to
        finally:
            await ws.close()


async def test_migrators_started_together_on_an_empty_database_all_succeed(pg_dsn: str) -> None:
    # Three cluster nodes start at once on a new database: each runs the migrations.
    # Without the lock around CREATE TABLE schema_migrations, the second one died on
    # pg_type's unique index (seen in CI).
    async with fresh_database(pg_dsn, "mig") as dsn:
        conns = [await asyncpg.connect(dsn) for _ in range(4)]
        try:
            results = await asyncio.gather(*(migrate(c) for c in conns), return_exceptions=True)
            assert not [r for r in results if isinstance(r, BaseException)], results
            applied = sorted(v for r in results if isinstance(r, list) for v in r)
            assert applied == [m.version for m in load_migrations()]  # each applied exactly once
        finally:
            for c in conns:
                await c.close()
