"""A socket's pace (service.pace): a burst at once, then a rate; a message beyond it is
read late, never refused or lost.  The bucket on a virtual clock, then a real server's
socket flooded with pings (bench/flood.py measures what the pace saves).  And a
player's sockets: at most so many open in a process, one more refused at its
handshake."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from service.appkeys import CONFIG, METRICS, PLAYER_SOCKETS, Config
from service.keys import ServerKeys
from service.pace import Pace, PlayerSockets
from service.startup import Running
from tests.conftest import Api, wait_for
from verifier.signing import Signer


def test_a_burst_passes_at_once_and_then_the_rate_holds() -> None:
    p = Pace.full(100.0, rate=10.0, burst=5)
    assert [p.take(100.0) for _ in range(5)] == [0.0] * 5
    assert p.take(100.0) == pytest.approx(0.1)  # the sixth: its turn comes a tenth of a second later
    # a reader that waits each time as told is held to the rate exactly
    now, waits = 100.1, []
    for _ in range(20):
        w = p.take(now)
        waits.append(w)
        now += w
    assert waits == [pytest.approx(0.1)] * 20
    assert now == pytest.approx(102.1)  # 5 at once, then 21 more at 10 a second


def test_an_idle_socket_gets_its_burst_back_and_no_more() -> None:
    p = Pace.full(0.0, rate=10.0, burst=5)
    for _ in range(5):
        p.take(0.0)
    assert p.take(60.0) == 0.0  # a minute later: refilled, but only to the burst
    assert [p.take(60.0) for _ in range(4)] == [0.0] * 4
    assert p.take(60.0) > 0.0


def test_a_clock_that_stands_or_steps_back_adds_nothing() -> None:
    p = Pace.full(10.0, rate=10.0, burst=2)
    p.take(10.0)
    p.take(10.0)
    assert p.take(9.0) == pytest.approx(0.1)  # earlier than the last take: no tokens from it


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 10), (-1.0, 10), (10.0, 0)])
def test_a_pace_that_would_refuse_everything_is_refused_at_start(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="pace"):
        Pace.full(0.0, rate=rate, burst=burst)


def test_a_server_configured_with_such_a_pace_does_not_start() -> None:
    with pytest.raises(ValueError, match="pace"):
        Config(dsn="postgresql://nowhere/x", keys=ServerKeys(Signer.generate(), bytes(32)), message_rate=0.0)


async def _pings(server: Running, api: Api, n: int) -> tuple[list[dict[str, Any]], float]:
    """``n`` pings sent at once on a new socket: the replies and the seconds from the
    first send to the last reply."""
    p = await api.player("flood")
    t = await api.table()
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(f"{server.url}/ws?table={t}", headers={"Authorization": f"Bearer {p['token']}"}) as ws,
    ):
        assert json.loads((await ws.receive()).data)["type"] == "hello"
        started = time.monotonic()
        for k in range(n):
            await ws.send_str(json.dumps({"id": f"m{k}", "type": "ping"}))
        got = []
        while len(got) < n:
            got.append(json.loads((await ws.receive(timeout=30)).data))
        return got, time.monotonic() - started


#: the headers of a WebSocket upgrade, sent as a plain GET to read the refusal
UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def _counted(server: Running, name: str) -> float:
    return server.app[METRICS].registry.get_sample_value(f"rummy_ws_{name}_total") or 0.0


@contextlib.contextmanager
def _paced(server: Running, rate: float, burst: int) -> Iterator[None]:
    """The server's pace set for the sockets opened meanwhile (read when one opens)."""
    config = server.app[CONFIG]
    kept = config.message_rate, config.message_burst
    config.message_rate, config.message_burst = rate, burst
    try:
        yield
    finally:
        config.message_rate, config.message_burst = kept


async def test_a_flood_of_pings_is_read_at_the_pace_and_every_one_answered(server: Running, api: Api) -> None:
    with _paced(server, 100.0, 5):
        before = _counted(server, "messages_slowed")
        got, seconds = await _pings(server, api, 25)
    # nothing refused, nothing lost, in order
    assert [(m["type"], m["id"], m["result"]) for m in got] == [("reply", f"m{k}", {"pong": True}) for k in range(25)]
    # the 25th could not be read before 20 more tokens had come, at 100 a second (a
    # lower bound: a busy machine is only slower)
    assert seconds >= 0.9 * (25 - 5) / 100.0
    assert _counted(server, "messages_slowed") - before >= 1


async def test_a_flood_of_control_pings_is_read_at_the_pace_too_and_every_one_answered(
    server: Running, api: Api
) -> None:
    """WebSocket PING control frames are messages like any other: aiohttp's autoping
    answered them inside ``receive``, past the pace, and a batch of them without giving
    the loop back (one flooding socket held every table of its worker ~0.6 s at a time)."""
    p = await api.player("pinger")
    with _paced(server, 100.0, 5):
        before = _counted(server, "messages_slowed")
        async with (
            aiohttp.ClientSession() as s,
            s.ws_connect(f"{server.url}/ws", headers={"Authorization": f"Bearer {p['token']}"}, autoping=False) as ws,
        ):
            assert json.loads((await ws.receive()).data)["type"] == "hello"
            started = time.monotonic()
            for k in range(25):
                await ws.ping(f"p{k}".encode())
            pongs = []
            while len(pongs) < 25:
                m = await ws.receive(timeout=30)
                assert m.type == aiohttp.WSMsgType.PONG, m
                pongs.append(m.data)
            seconds = time.monotonic() - started
            await ws.send_str(json.dumps({"id": "after", "type": "ping"}))
            after = json.loads((await ws.receive(timeout=30)).data)
    assert pongs == [f"p{k}".encode() for k in range(25)]  # every one answered, in order
    assert seconds >= 0.9 * (25 - 5) / 100.0  # a lower bound: a busy machine is only slower
    assert _counted(server, "messages_slowed") - before >= 1
    assert after["id"] == "after" and after["result"] == {"pong": True}


async def test_a_socket_within_its_burst_is_never_held(server: Running, api: Api) -> None:
    before = _counted(server, "messages_slowed")
    got, _ = await _pings(server, api, 20)  # the default burst is far above 20
    assert [m["id"] for m in got] == [f"m{k}" for k in range(20)]
    assert _counted(server, "messages_slowed") == before


def test_a_players_sockets_are_counted_up_to_the_limit_and_freed_as_they_close() -> None:
    socks = PlayerSockets(limit=2)
    assert socks.add("a") and socks.add("a")
    assert not socks.add("a")  # the third is refused, and not counted
    assert socks.add("b")  # another player has room of its own
    socks.discard("a")
    assert socks.of("a") == 1 and socks.add("a")
    for _ in range(2):
        socks.discard("a")
    assert socks.of("a") == 0 and socks._open == {"b": 1}  # nothing kept for a player with none open
    with pytest.raises(ValueError, match="at least one socket"):
        PlayerSockets(limit=0)


async def test_one_socket_beyond_a_players_share_is_refused_before_the_upgrade(server: Running, api: Api) -> None:
    socks = server.app[PLAYER_SOCKETS]
    limit = socks.limit
    p, other = await api.player("many"), await api.player("other")
    auth = {"Authorization": f"Bearer {p['token']}"}
    refused = _counted(server, "refused_too_many_sockets")
    async with aiohttp.ClientSession() as s:
        opened = [await s.ws_connect(f"{server.url}/ws", headers=auth) for _ in range(limit)]
        try:
            assert socks.of(p["id"]) == limit
            async with s.get(f"{server.url}/ws", headers={**auth, **UPGRADE}) as r:
                assert r.status == 429
                assert r.headers["Retry-After"]
                assert (await r.json())["error"]["code"] == "too_many_sockets"
            assert socks.of(p["id"]) == limit  # the refused one is not counted
            # another player is not held by this one's share
            async with s.ws_connect(f"{server.url}/ws", headers={"Authorization": f"Bearer {other['token']}"}) as ws:
                assert json.loads((await ws.receive()).data)["type"] == "hello"
            # every socket counted still serves
            for ws in opened:
                await ws.send_str(json.dumps({"id": "x", "type": "ping"}))
                assert json.loads((await ws.receive()).data)["type"] == "hello"
                assert json.loads((await ws.receive(timeout=30)).data)["result"] == {"pong": True}
            await opened.pop().close()
            await wait_for(lambda: socks.of(p["id"]) == limit - 1)  # a closed socket frees its place
            async with s.ws_connect(f"{server.url}/ws", headers=auth) as ws:
                assert json.loads((await ws.receive()).data)["type"] == "hello"
        finally:
            for ws in opened:
                await ws.close()
    await wait_for(lambda: socks.of(p["id"]) == 0)
    assert _counted(server, "refused_too_many_sockets") == refused + 1
