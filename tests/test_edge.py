"""Hostile input at the edges (issue 8): every input the fault-and-fuzz run found gets
a typed refusal, changes nothing and logs no traceback; a fuzz run of generated and
mutated frames and bodies against a live server (1,000 in the fast suite, ≥ 10,000 in
the drill); memory that comes back when clients leave.

The module has a server of its own on a database of its own: its tests fingerprint the
whole database and count every socket, which the session server's other tables (still
playing whatever ran before) would move."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.app import POOL, SOCKETS, TABLES
from service.appkeys import CONFIG
from service.startup import Running
from service.telling import Connection
from tests.conftest import OPERATOR, Api, server_of_its_own, wait_for
from tests.test_server import seat_of, seat_two, through_seeds
from tests.wsclient import Client
from verifier.transcript import verify_transcript


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def server(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    """This module's server (the ``api`` fixture follows it)."""
    async with server_of_its_own(pg_dsn, tmp_path_factory.mktemp("edge"), "edge") as running:
        yield running


class Tracebacks(logging.Handler):
    """Every log record at ERROR or above, or carrying a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


@pytest.fixture
def tracebacks() -> Iterator[Tracebacks]:
    h = Tracebacks()
    root = logging.getLogger()
    root.addHandler(h)
    try:
        yield h
    finally:
        root.removeHandler(h)


async def fingerprint(server: Running) -> tuple[Any, ...]:
    """Counts and sums that any change of state would move."""
    async with server.app[POOL].acquire() as conn:
        row = await conn.fetchrow(
            "SELECT (SELECT COUNT(*) FROM players) AS players, (SELECT COUNT(*) FROM tables) AS tables,"
            " (SELECT COUNT(*) FROM seats) AS seats, (SELECT COUNT(*) FROM hands) AS hands,"
            " (SELECT COUNT(*) FROM hand_records) AS records, (SELECT COUNT(*) FROM hand_seeds) AS seeds,"
            " (SELECT COUNT(*) FROM ledger_tx) AS txs,"
            " (SELECT COALESCE(SUM(balance), 0) FROM accounts WHERE kind = 'available') AS available,"
            " (SELECT string_agg(encode(COALESCE(public_key, ''), 'hex'), ',' ORDER BY id) FROM players) AS keys"
        )
    assert row is not None
    return tuple(row)


async def raw_http(server: Running, raw: bytes) -> bytes:
    host, port = server.url.removeprefix("http://").split(":")
    r, w = await asyncio.open_connection(host, int(port))
    w.write(raw)
    await w.drain()
    data = await asyncio.wait_for(r.read(4096), 10)
    w.close()
    return data


# ----------------------------------------------------------------------------- the inputs under Why
async def test_every_hostile_rest_input_gets_a_typed_refusal(api: Api, server: Running, tracebacks: Tracebacks) -> None:
    p = await api.player("target")
    table = await api.table(seats=4)
    before = await fingerprint(server)
    deep = "[" * 3000 + "]" * 3000
    big = "9" * 5000
    cases: list[tuple[str, str, str | None, Any]] = [
        ("POST", "/api/players", OPERATOR, deep),
        ("POST", "/api/players", OPERATOR, '{"name": "x", "deposit": ' + big + "}"),
        ("POST", f"/api/players/{p['id']}/deposit", OPERATOR, '{"amount": ' + deep + "}"),
        ("POST", f"/api/players/{p['id']}/deposit", OPERATOR, '{"amount": ' + big + "}"),
        ("POST", "/api/tables", OPERATOR, deep),
        ("POST", "/api/tables", OPERATOR, '{"seats": ' + big + "}"),
        ("POST", f"/api/tables/{table}/sit", p["token"], deep),
        ("POST", f"/api/tables/{table}/sit", p["token"], '{"seat": ' + big + "}"),
        ("POST", "/api/players", OPERATOR, '{"name": "a\\ud800b"}'),  # a lone surrogate
        ("POST", "/api/players", OPERATOR, '{"name": "a\\u0000b"}'),  # a NUL
        # ...as a key, which a refusal's message echoes into the audit log (the drill
        # fuzz found the INSERT refused, and a 500)
        ("POST", "/api/players", OPERATOR, '{"\\u0000": null}'),
        ("POST", f"/api/players/{p['id']}/deposit", OPERATOR, '{"\\ud800": 1}'),
        ("POST", "/api/tables", OPERATOR, '{"max_missed_turns": 2147483648}'),
        ("POST", "/api/tables", OPERATOR, '{"seats": 6.0}'),
        ("POST", "/api/tables", OPERATOR, '{"commission_bps": true}'),
        ("POST", "/api/tables", OPERATOR, '{"seats": 4, "seats": 6}'),
        ("POST", "/api/players", OPERATOR, '{"name": "half", "deposit": -1}'),  # refused: not half created
        ("POST", "/api/players", OPERATOR, '{"name": "half", "deposit": 1.5}'),
        ("POST", "/api/players", OPERATOR, '{"name": "nan", "deposit": NaN}'),
        ("GET", "/api/hands/9223372036854775808/transcript", None, None),
        ("GET", "/api/hands/-1/transcript", None, None),
        ("POST", "/api/hands/99999999999999999999/void", OPERATOR, '{"reason": "x"}'),
        ("POST", f"/api/players/{'x' * 200}/deposit", OPERATOR, '{"amount": 1}'),
        ("PUT", "/api/me/key", p["token"], '{"public_key": "ZZ"}'),
        ("GET", "/api/no/such/route", None, None),
        ("DELETE", "/api/tables", OPERATOR, None),
    ]
    for method, path, token, body in cases:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with api.session.request(method, api.base + path, data=body, headers=headers) as r:
            assert 400 <= r.status < 500, (path, body if body is None else body[:60], r.status)
            data = await r.json()
            assert set(data["error"]) >= {"code", "message"}, data
    # A bearer token of raw bytes that are not ASCII: 401, no traceback.
    reply = await raw_http(server, b"GET /api/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\x80\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 401")
    # Over-long headers and a bad Content-Length: refused by aiohttp, logged as one line.
    assert (await raw_http(server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")).startswith(
        b"HTTP/1.0 400"
    )
    assert (await raw_http(server, b"POST /api/tables HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")).startswith(
        b"HTTP/1.0 400"
    )
    assert await fingerprint(server) == before, "a refused request changed something"
    assert tracebacks.records == [], [r.getMessage() for r in tracebacks.records]
    async with server.app[POOL].acquire() as conn:
        outcomes = [r["outcome"] for r in await conn.fetch("SELECT outcome FROM audit_log")]
    assert any("\\u0000" in o for o in outcomes) and any("\\ud800" in o for o in outcomes), outcomes[-6:]


async def test_hostile_frames_get_typed_errors_and_the_socket_stays_open(
    api: Api, server: Running, tracebacks: Tracebacks
) -> None:
    p = await api.player("frames")
    async with Client(server.url, p["token"], p["signer"]) as c:
        for raw in (
            '{"id": "d", "type": "ping", "x": ' + "[" * 1000 + "]" * 1000 + "}",
            '{"id": "d", "type": "ping", "x": ' + '{"a":' * 1000 + "1" + "}" * 1000 + "}",
            '{"id": "i", "type": "ping", "x": ' + "7" * 4301 + "}",
            '{"id": "s", "type": "join", "table_id": "\\ud800"}',
            '{"id": "n", "type": "join", "table_id": "a\\u0000"}',
        ):
            n = len(c.frames)
            await c.send_raw(raw)
            f = await c.wait_frame(lambda f: f.get("type") == "error", start=n)
            assert f["error"]["code"] == "bad_message"
            assert (await c.request({"type": "ping"}))["result"] == {"pong": True}  # still open
    assert tracebacks.records == []


# ----------------------------------------------------------------------------- fuzz (item 5)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["00" * 32, "00" * 64, "t_x", "draw_closed", "discard", "\x00", "\ud800", "JK", "7H"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
KEYS = ["id", "type", "table_id", "hand_no", "commit", "seed", "sig", "prev", "action", "seat", "kind", "card", "hint"]
TYPES = ["ping", "join", "sit", "leave", "commit", "reveal", "action", "dance", ""]


def frames(table: str, hand_no: int) -> st.SearchStrategy[str]:
    """Valid-looking frames, mutated: a field dropped, retyped or added, and junk text."""
    base = st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=8),
            "type": st.sampled_from(TYPES),
            "table_id": st.sampled_from([table, "t_nope", ""]),
            "hand_no": st.sampled_from([hand_no, hand_no + 1, 0, -1, 2**63]),
        },
        optional={
            "action": st.fixed_dictionaries(
                {"kind": st.sampled_from(["draw_closed", "draw_open", "drop", "discard", "declare", "timeout"])},
                optional={"card": st.integers(-5, 200), "hint": JSON},
            ),
            "prev": st.sampled_from(["00" * 32, "zz", ""]),
            "sig": st.sampled_from(["00" * 64, "ab" * 64, ""]),
            "commit": st.sampled_from(["00" * 32, "0"]),
            "seed": st.sampled_from(["11" * 32, ""]),
            "seat": st.integers(-2, 9),
        },
    )
    mutated = st.tuples(base, st.lists(st.tuples(st.sampled_from(KEYS), JSON | st.just(...)), max_size=3)).map(
        lambda t: {**{k: v for k, v in t[0].items()}, **{k: v for k, v in t[1] if v is not ...}}
    )
    return st.one_of(
        mutated.map(lambda d: json.dumps(d)),
        JSON.map(lambda d: json.dumps(d)),
        st.text(max_size=40),
    )


REST_PATHS = [
    ("POST", "/api/players"),
    ("POST", "/api/players/{player}/deposit"),
    ("POST", "/api/tables"),
    ("POST", "/api/tables/{table}/sit"),
    ("POST", "/api/tables/{table}/leave"),
    ("PUT", "/api/me/key"),
    ("POST", "/api/hands/{hand}/void"),
    ("GET", "/api/hands/{hand}/transcript"),
]


class Stopped(Exception):
    """The test is over (failed or timed out): the fuzz thread stops drawing."""


@pytest.mark.parametrize(
    ("n_frames", "n_bodies"),
    [
        pytest.param(800, 200, id="1000"),
        pytest.param(8000, 2000, id="10000", marks=[pytest.mark.drill, pytest.mark.timeout(1800)]),
    ],
)
async def test_fuzz_frames_and_bodies(
    api: Api, server: Running, tracebacks: Tracebacks, n_frames: int, n_bodies: int
) -> None:
    table, a, b = await seat_two(api, server, turn_seconds=3600)
    loop = asyncio.get_running_loop()
    counts = {"frames": 0, "bodies": 0, "2xx": 0}
    stop = threading.Event()  # Hypothesis draws in a thread: it must not outlive the test
    # The fuzzing socket sends its frames as fast as they are answered, a flood by
    # service.pace's measure: its sockets are read unpaced, as test_pace shows the pace.
    config = server.app[CONFIG]
    paced = config.message_rate, config.message_burst
    config.message_rate, config.message_burst = 1e9, 10**9
    try:
        async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
            hand_no = await through_seeds(table, ca, cb)
            async with server.app[POOL].acquire() as conn:
                hand_id = await conn.fetchval(
                    "SELECT id FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no
                )
            before = await fingerprint(server)

            async def one_frame(text: str) -> None:
                n = len(ca.frames)
                await ca.send_raw(text)
                await ca.wait_frame(lambda f: f.get("type") in ("error", "reply"), start=n, timeout=60)

            @settings(
                max_examples=n_frames,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(frames(table, hand_no))
            def fuzz_frames(text: str) -> None:
                if stop.is_set():
                    raise Stopped()
                asyncio.run_coroutine_threadsafe(one_frame(text), loop).result(60)
                counts["frames"] += 1

            await asyncio.to_thread(fuzz_frames)
            assert await fingerprint(server) == before, "a refused frame changed something"
            assert (await ca.request({"type": "ping"}))["result"] == {"pong": True}

            async def one_body(method: str, path: str, token: str, body: str) -> None:
                state = await fingerprint(server)
                url = server.url + path.format(player=a["id"], table=table, hand=hand_id)
                headers = {"Authorization": f"Bearer {token}"}
                async with api.session.request(
                    method, url, data=body.encode("utf-8", "surrogatepass"), headers=headers
                ) as r:
                    assert r.status < 500, (method, path, body[:80], r.status, await r.text())
                    data = await r.json()
                    if r.status >= 400:
                        assert "code" in data["error"]
                        assert await fingerprint(server) == state, ("refused, yet changed", method, path, body[:80])
                    else:
                        counts["2xx"] += 1

            @settings(
                max_examples=n_bodies,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(
                st.sampled_from(REST_PATHS),
                st.sampled_from([OPERATOR, "x", ""]) | st.just(a["token"]),
                JSON.map(json.dumps) | st.text(max_size=30),
            )
            def fuzz_bodies(route: tuple[str, str], token: str, body: str) -> None:
                if stop.is_set():
                    raise Stopped()
                asyncio.run_coroutine_threadsafe(one_body(route[0], route[1], token, body), loop).result(60)
                counts["bodies"] += 1

            await asyncio.to_thread(fuzz_bodies)
            assert counts["frames"] + counts["bodies"] >= n_frames + n_bodies, counts
            # The hand is still playable and finishes: the socket was usable throughout.
            hand = server.app[TABLES][table].hand
            assert hand is not None and hand.hand_no == hand_no
            await ca.leave(table, hand_no, seat_of(ca))
            result = await cb.wait_frame(lambda f: f.get("type") == "result", timeout=30)
            await cb.leave(table)
    finally:
        config.message_rate, config.message_burst = paced
        stop.set()
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t).ok
    assert tracebacks.records == [], [r.getMessage() for r in tracebacks.records][:5]


# ----------------------------------------------------------------------------- memory (item 3)
def live_connections() -> list[Connection]:
    return [o for o in gc.get_objects() if isinstance(o, Connection)]


@pytest.mark.drill  # a soak: 200 clients at once under tracemalloc
@pytest.mark.timeout(600)
async def test_memory_comes_back_when_clients_leave(api: Api, server: Running) -> None:
    table = await api.table(seats=4)
    players = [await api.player(f"m{n}") for n in range(200)]

    async def visit(p: dict[str, Any]) -> None:
        for attempt in range(20):
            try:
                async with Client(server.url, p["token"], p["signer"]) as c:
                    await c.request({"type": "join", "table_id": table})
                    for _ in range(10):
                        await c.request({"type": "ping"})
                return
            except aiohttp.WSServerHandshakeError as e:
                # 200 handshakes at once on a busy machine: the server answers 503 "busy"
                # when its pool cannot serve one in time; a client tries again, as bots do.
                assert e.status == 503 and attempt < 19, e
                await asyncio.sleep(0.2 * (attempt + 1))

    await visit(players[0])  # warm every code path once
    gc.collect()
    tracemalloc.start(8)
    try:
        base = tracemalloc.take_snapshot()
        await asyncio.gather(*(visit(p) for p in players))
        _, peak = tracemalloc.get_traced_memory()
        actor = server.app[TABLES][table]
        await wait_for(lambda: not actor.watchers.by_player and not server.app[SOCKETS], timeout=30)
        # closing handshakes and handler tasks finish: every Connection is gone (not a
        # fixed pause, which a busy machine may outlast)
        await wait_for(lambda: gc.collect() >= 0 and not live_connections(), timeout=60, interval=0.2)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    server_side = [tracemalloc.Filter(False, "*/tests/*"), tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = after.filter_traces(server_side).compare_to(base.filter_traces(server_side), "filename")
    grown = sum(d.size_diff for d in diff)
    assert peak > 1_000_000, "the visits should have cost memory while they lasted"
    # Nothing of a connection outlives it: no Connection object, no remembered reply.
    assert not live_connections()
    # What stays is the size the runtime grew to (sets, buffers, one more pool connection),
    # not a cost per client: the old per-player reply cache alone kept ~0.66 KB per message,
    # 200 × 11 messages ≈ 1.4 MB.
    top = [(str(d.traceback), d.size_diff) for d in diff[:5]]
    assert grown < 600_000, f"{grown} bytes stayed after 200 clients left (peak {peak}); top: {top}"
