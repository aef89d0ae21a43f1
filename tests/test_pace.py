"""A socket's pace (service.pace): a burst at once, then a rate; a message beyond it is
read late, never refused or lost.  The bucket on a virtual clock, then a real server's
socket flooded with pings (bench/flood.py measures what the pace saves)."""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp
import pytest

from service.appkeys import CONFIG, METRICS, Config
from service.keys import ServerKeys
from service.pace import Pace
from service.startup import Running
from tests.conftest import Api
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


def _slowed(server: Running) -> float:
    return server.app[METRICS].registry.get_sample_value("rummy_ws_messages_slowed_total") or 0.0


async def test_a_flood_of_pings_is_read_at_the_pace_and_every_one_answered(server: Running, api: Api) -> None:
    config = server.app[CONFIG]
    kept = config.message_rate, config.message_burst
    config.message_rate, config.message_burst = 100.0, 5  # read when the socket opens
    try:
        before = _slowed(server)
        got, seconds = await _pings(server, api, 25)
    finally:
        config.message_rate, config.message_burst = kept
    # nothing refused, nothing lost, in order
    assert [(m["type"], m["id"], m["result"]) for m in got] == [("reply", f"m{k}", {"pong": True}) for k in range(25)]
    # the 25th could not be read before 20 more tokens had come, at 100 a second (a
    # lower bound: a busy machine is only slower)
    assert seconds >= 0.9 * (25 - 5) / 100.0
    assert _slowed(server) - before >= 1


async def test_a_socket_within_its_burst_is_never_held(server: Running, api: Api) -> None:
    before = _slowed(server)
    got, _ = await _pings(server, api, 20)  # the default burst is far above 20
    assert [m["id"] for m in got] == [f"m{k}" for k in range(20)]
    assert _slowed(server) == before
