"""The load client of ``bench/load.py``: one process, one asyncio loop, many WebSockets.

``worker_main(spec, conn)`` is started by ``bench/load.py`` in a process of its own
(several of them for one measurement point).  It drives ``spec.tables`` tables of six
seats, every seat on its own WebSocket, and answers the parent over ``conn`` (a
``multiprocessing`` pipe): a status about four times a second, then the figures of the
measurement window the parent names.

**Project mode** — each seat is a real player: created by the operator with a
deposit, its own Ed25519 key registered with ``PUT /api/me/key``, it joins and sits
over the socket, commits and reveals a fresh seed in every hand (signed, docs/fairness.md
§9) and, on its turn, plays the cheapest legal simple move: draw from the closed pile,
then discard the card just drawn, signed over the newest record's ``h``.  A hand
ends because every seat drops at its first turn after turn ``L``, with ``L`` drawn for
each table and hand from ``[hand_turns / 2, 3 × hand_turns / 2]`` (all six seats,
whatever process they are in, derive the same ``L``); the last seat in wins it.  The
full strategy (``service/bots.py``) is never used: its scoring would eat the client's
CPU.  ``stale_head`` is signed again over the newest head, ``wrong_node`` follows the
redirect, a lost socket reconnects and goes on from the server's snapshot.

**Floor modes** — the same six sockets a table, the same turn order and pacing, but
against ``bench/floor.py``: the seat on turn sends an action-sized message (signed the
same way) and waits for its reply, twice a turn (the draw and the discard), then the
turn passes to the next seat.  ``floor`` (the bare floor): signed over a made-up head,
no pushes, no hands.  ``floor_like`` (the like-for-like floor): each socket names its
table, seat and key in the query string; moves are signed over the head the floor
returned, which verifies them, signs the new head and pushes it to the table's other
sockets.

Latency is from the client's send of an ``action`` to its ``reply`` (the server
replies after the commit).  An action is measured when it is sent inside the window;
the throughput counts the action replies received inside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import resource
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from service import views
from verifier.chain import commit_move, move_body, reveal_move
from verifier.fairness import player_commit
from verifier.record import PROTOCOL
from verifier.signing import Signer

SEATS = 6
DEPOSIT = 10**9
STATUS_EVERY = 0.25
BACKOFF_FIRST, BACKOFF_MAX = 0.2, 5.0
RETRY_AFTER = 0.3  # seconds before a join, sit or action refused as unavailable or busy is tried again
INF = float("inf")


def raise_nofile() -> int:
    """Soft file-descriptor limit up to the hard one; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def count_wire(ws: aiohttp.ClientWebSocketResponse, st: Stats) -> None:
    """Count the bytes this socket reads in the window, as they crossed the wire (after
    the upgrade: frame headers and, where the server took it up, compressed payloads)."""
    if ws.compress:
        st.deflated += 1
    conn = getattr(ws, "_conn", None)
    proto = getattr(conn, "protocol", None)
    if proto is None:
        return
    inner = proto.data_received

    def data_received(data: bytes) -> None:
        if st.t0 <= time.time() < st.t1:
            st.rx_wire += len(data)
        inner(data)

    proto.data_received = data_received


def frame_kind(m: Any) -> str:
    """A received frame's kind for the byte breakdown: its ``type``, a reply that
    carries the mover's update counted apart."""
    if not isinstance(m, dict):
        return "other"
    kind = str(m.get("type"))
    if kind == "reply" and isinstance(m.get("update"), dict):  # the mover's update rides beside the result
        return "reply+update"
    if kind == "hand":
        return f"hand:{m.get('phase')}"
    return kind


def dumps(m: dict[str, Any]) -> str:
    return json.dumps(m, separators=(",", ":"))


@dataclass
class Spec:
    mode: str  # "project", "floor" or "floor_like"
    url: str  # http://host:port
    operator: str  # the operator token (project mode)
    tables: int
    worker_no: int
    think: tuple[float, float] | None  # seconds before each action, uniform; None: no think time
    hand_turns: int = 30
    turn_seconds: int = 60
    seed: int = 1
    setup_concurrency: int = 8  # tables being created and seated at once
    connect_concurrency: int = 48  # sockets connecting at once
    compress: int = 0  # offer permessage-deflate with this window (15: as browsers do); 0: offer none


@dataclass
class Stats:
    t0: float = INF  # the window (time.time())
    t1: float = INF
    lat: list[float] = field(default_factory=list)  # ms, actions sent in the window
    seed_lat: list[float] = field(default_factory=list)  # ms, commits and reveals sent in the window
    acks: int = 0  # action replies received in the window
    seed_acks: int = 0
    sent: int = 0  # actions sent in the window
    open: int = 0  # actions sent in the window and not answered yet
    lost: int = 0  # actions sent in the window whose socket closed before the reply
    total_acks: int = 0  # since the start (progress)
    kinds: Counter[str] = field(default_factory=Counter)  # acknowledged actions by kind, in the window
    errors: Counter[str] = field(default_factory=Counter)
    reconnects: int = 0
    clock_moves: int = 0  # the server moved for a seat (its clock ran out)
    hands_ended: int = 0  # results seen (once a table)
    key_mismatch: int = 0
    rx_msgs: int = 0  # frames received in the window, and their bytes
    rx_bytes: int = 0
    rx_kinds: Counter[str] = field(default_factory=Counter)  # bytes received in the window by frame kind
    rx_wire: int = 0  # bytes read from the sockets in the window (frame headers, compression: what crossed)
    deflated: int = 0  # sockets on which the server took up permessage-deflate
    handshakes: int = 0  # WebSocket handshakes tried and failed, since the start (set-up included)
    handshakes_failed: int = 0

    def in_window(self, t: float) -> bool:
        return self.t0 <= t < self.t1


class Worker:
    def __init__(self, spec: Spec, conn: Any) -> None:
        self.spec = spec
        self.conn = conn
        self.stats = Stats()
        self.rng = random.Random(spec.seed * 1000 + spec.worker_no)
        self.session: aiohttp.ClientSession | None = None
        self.seats: list[Any] = []
        self.tables_dealt: set[str] = set()
        self.tables_made = 0
        self.setup_errors: list[str] = []
        self.stopping = False
        self.setup_sem = asyncio.Semaphore(spec.setup_concurrency)
        self.connect_sem = asyncio.Semaphore(spec.connect_concurrency)
        self.tasks: list[asyncio.Task[Any]] = []
        self.acting: set[asyncio.Future[Any]] = set()  # delayed actions (think time) being sent
        self.result_sent = False

    # -- the parent ----------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {
            "worker": self.spec.worker_no,
            "tables": self.spec.tables,
            "tables_made": self.tables_made,
            "tables_dealt": len(self.tables_dealt),
            "seats": len(self.seats),
            "connected": sum(1 for s in self.seats if s.connected),
            "seated": sum(1 for s in self.seats if s.seated and s.connected),
            "ready": self.ready(),
            "acks": self.stats.total_acks,
            "handshakes_failed": self.stats.handshakes_failed,
            "errors": dict(self.stats.errors),
            "setup_errors": self.setup_errors[:3],
        }

    def ready(self) -> bool:
        want = self.spec.tables * SEATS
        if self.spec.mode.startswith("floor"):
            return sum(1 for s in self.seats if s.connected) >= want
        return (
            sum(1 for s in self.seats if s.seated and s.connected) >= want
            and len(self.tables_dealt) >= self.spec.tables
        )

    def result(self) -> dict[str, Any]:
        s = self.stats
        return {
            "worker": self.spec.worker_no,
            "lat": s.lat,
            "seed_lat": s.seed_lat,
            "acks": s.acks,
            "seed_acks": s.seed_acks,
            "sent": s.sent,
            "unanswered": s.open,
            "lost": s.lost,
            "kinds": dict(s.kinds),
            "errors": dict(s.errors),
            "reconnects": s.reconnects,
            "clock_moves": s.clock_moves,
            "hands_ended": s.hands_ended,
            "key_mismatch": s.key_mismatch,
            "rx_msgs": s.rx_msgs,
            "rx_bytes": s.rx_bytes,
            "rx_kinds": dict(s.rx_kinds),
            "rx_wire": s.rx_wire,
            "deflated": s.deflated,
            "handshakes": s.handshakes,
            "handshakes_failed": s.handshakes_failed,
            "connected": sum(1 for x in self.seats if x.connected),
            "seated": sum(1 for x in self.seats if x.seated and x.connected),
            "tables_dealt": len(self.tables_dealt),
        }

    async def control(self) -> None:
        """Statuses to the parent; the window and the stop from it."""
        drain_until = INF
        while True:
            while self.conn.poll():
                msg = self.conn.recv()
                if msg[0] == "window":
                    self.stats.t0, self.stats.t1 = float(msg[1]), float(msg[2])
                    drain_until = self.stats.t1 + float(msg[3])
                elif msg[0] == "stop":
                    self.stopping = True
                    return
            now = time.time()
            if not self.result_sent and now >= self.stats.t1 and (self.stats.open == 0 or now >= drain_until):
                self.conn.send(("result", self.result()))
                self.result_sent = True
            self.conn.send(("status", self.status()))
            await asyncio.sleep(STATUS_EVERY)

    # -- life ----------------------------------------------------------------------------
    async def run(self) -> None:
        raise_nofile()
        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            self.session = session
            control = asyncio.create_task(self.control())
            for n in range(self.spec.tables):
                self.tasks.append(asyncio.create_task(self.table(n)))
            await control
            for t in self.tasks:
                t.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            for s in self.seats:
                await s.close()

    async def table(self, n: int) -> None:
        if self.spec.mode.startswith("floor"):
            await self.floor_table(n)
        else:
            await self.project_table(n)

    async def rest(self, method: str, path: str, token: str, body: Any) -> Any:
        assert self.session is not None
        for attempt in range(5):
            try:
                async with self.session.request(
                    method, self.spec.url + path, json=body, headers={"Authorization": f"Bearer {token}"}
                ) as r:
                    data = await r.json(content_type=None)
                    if r.status >= 400:
                        raise RuntimeError(f"{method} {path}: {r.status} {data}")
                    return data
            except (aiohttp.ClientError, OSError, TimeoutError):
                if attempt == 4:
                    raise
                await asyncio.sleep(0.5 * (attempt + 1))
        return None  # pragma: no cover

    # -- project mode ------------------------------------------------------------------------
    async def project_table(self, n: int) -> None:
        spec = self.spec
        seats: list[ProjectSeat] = []
        async with self.setup_sem:
            try:
                t = await self.rest(
                    "POST",
                    "/api/tables",
                    spec.operator,
                    {"seats": SEATS, "point_value": 1, "turn_seconds": spec.turn_seconds, "min_players": SEATS},
                )
                for k in range(SEATS):
                    key = Signer.generate()
                    p = await self.rest(
                        "POST",
                        "/api/players",
                        spec.operator,
                        {
                            "name": f"load-{spec.worker_no}-{n}-{k}",
                            "deposit": DEPOSIT,
                            "bot": True,
                            "public_key": key.public_bytes.hex(),  # one request, not two
                        },
                    )
                    seats.append(ProjectSeat(self, t["id"], p["id"], p["token"], key))
            except Exception as e:
                self.setup_errors.append(f"{type(e).__name__}: {e}")
                return
            self.tables_made += 1
            self.seats.extend(seats)
            runs = [asyncio.create_task(s.run()) for s in seats]
            # Hold the slot until every seat has sat: the next table's set-up waits.
            waits = [asyncio.ensure_future(s.sat.wait()) for s in seats]
            try:
                await asyncio.wait(waits, timeout=120)
            finally:
                for f in waits:
                    f.cancel()
        try:
            await asyncio.gather(*runs)
        finally:
            for r in runs:
                r.cancel()
            await asyncio.gather(*runs, return_exceptions=True)

    # -- floor mode ----------------------------------------------------------------------------
    async def floor_table(self, n: int) -> None:
        table_id = f"floor-{self.spec.worker_no}-{n}"
        seats = [FloorSeat(self, table_id, k) for k in range(SEATS)]
        self.seats.extend(seats)
        self.tables_made += 1
        runs = [asyncio.create_task(s.run()) for s in seats]
        try:
            for s in seats:
                await s.sat.wait()
            self.tables_dealt.add(table_id)
            turn, i = 0, 0
            head = "0" * 64 if self.spec.mode == "floor_like" else secrets.token_hex(32)
            while not self.stopping:
                seat = seats[turn]
                for kind in ("draw_closed", "discard"):
                    if self.spec.think is not None:
                        await asyncio.sleep(self.rng.uniform(*self.spec.think))
                    action: dict[str, Any] = {"kind": kind} if kind == "draw_closed" else {"kind": kind, "card": 17}
                    head = await seat.act(i, head, action)
                    i += 1
                turn = (turn + 1) % SEATS
        finally:
            for r in runs:
                r.cancel()
            await asyncio.gather(*runs, return_exceptions=True)


class Reconnect(Exception):
    pass


class Handshake(Exception):
    """The WebSocket handshake failed (counted); wait and try again."""


class Socket:
    """One WebSocket, reconnected with backoff; subclasses handle its messages."""

    def __init__(self, w: Worker) -> None:
        self.w = w
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.url = w.spec.url
        self.connected = False
        self.seated = False
        self.sat = asyncio.Event()
        self.n = 0
        self.pending: dict[str, tuple[str, str, float, bool, asyncio.Future[Any] | None]] = {}

    def headers(self) -> dict[str, str]:
        return {}

    def path(self) -> str:
        return "/ws"

    async def on_open(self) -> None:
        pass

    async def on_message(self, m: dict[str, Any]) -> None:
        raise NotImplementedError

    async def run(self) -> None:
        backoff = BACKOFF_FIRST
        w = self.w
        assert w.session is not None
        first = True
        while not w.stopping:
            try:
                async with w.connect_sem:
                    w.stats.handshakes += 1
                    try:
                        ws = await w.session.ws_connect(
                            self.url + self.path(),
                            headers=self.headers(),
                            autoping=True,
                            max_msg_size=1 << 20,
                            compress=w.spec.compress,
                        )
                    except (aiohttp.ClientError, OSError, TimeoutError) as e:
                        w.stats.handshakes_failed += 1
                        status = getattr(e, "status", None)
                        w.stats.errors[f"handshake:{type(e).__name__}" + (f":{status}" if status else "")] += 1
                        raise Handshake() from e
                self.ws = ws
                count_wire(ws, w.stats)
                if not first:
                    w.stats.reconnects += 1
                first = False
                try:
                    self.connected = True
                    await self.on_open()
                    backoff = BACKOFF_FIRST
                    st = w.stats
                    async for msg in ws:
                        if msg.type != aiohttp.WSMsgType.TEXT:
                            break
                        body = json.loads(msg.data)
                        if st.t0 <= time.time() < st.t1:
                            st.rx_msgs += 1
                            st.rx_bytes += len(msg.data)
                            st.rx_kinds[frame_kind(body)] += len(msg.data)
                        await self.on_message(body)
                finally:
                    self.connected = False
                    self.ws = None
                    self.forget_pending()
                    await ws.close()
            except Reconnect:
                continue
            except Handshake:
                pass
            except (aiohttp.ClientError, OSError, TimeoutError) as e:
                w.stats.errors[f"socket:{type(e).__name__}"] += 1
            if w.stopping:
                break
            await asyncio.sleep(backoff * (0.5 + w.rng.random()))
            backoff = min(BACKOFF_MAX, backoff * 2)

    def forget_pending(self) -> None:
        for kind, _sub, _t, inwin, fut in self.pending.values():
            if inwin and kind == "action":
                self.w.stats.open -= 1
                self.w.stats.lost += 1
            if fut is not None and not fut.done():
                fut.set_exception(ConnectionError("socket closed"))
        self.pending.clear()

    async def send(
        self, kind: str, message: dict[str, Any], fut: asyncio.Future[Any] | None = None, sub: str = ""
    ) -> str | None:
        """Send one message with a fresh id; None when the socket is not open."""
        ws = self.ws
        if ws is None or ws.closed:
            return None
        self.n += 1
        msg_id = f"m{self.n}"
        st = self.w.stats
        inwin = st.in_window(time.time())
        if kind == "action" and inwin:
            st.sent += 1
            st.open += 1
        self.pending[msg_id] = (kind, sub, time.perf_counter(), inwin, fut)
        try:
            await ws.send_str(dumps({"id": msg_id, **message}))
        except (ConnectionError, RuntimeError, aiohttp.ClientError):
            if self.pending.pop(msg_id, None) is not None and kind == "action" and inwin:
                st.open -= 1
                st.lost += 1
            return None
        return msg_id

    def answered(self, msg_id: Any, ok: bool) -> str | None:
        """Account for a reply or an error to one of our messages; returns its kind."""
        entry = self.pending.pop(msg_id, None) if isinstance(msg_id, str) else None
        if entry is None:
            return None
        kind, sub, t_send, inwin, _fut = entry
        st = self.w.stats
        if kind == "action":
            if inwin:
                st.open -= 1
                if ok:
                    st.lat.append((time.perf_counter() - t_send) * 1000)
            if ok:
                st.total_acks += 1
                if st.in_window(time.time()):
                    st.acks += 1
                    st.kinds[sub] += 1
        elif kind in ("commit", "reveal") and ok:
            if inwin:
                st.seed_lat.append((time.perf_counter() - t_send) * 1000)
            if st.in_window(time.time()):
                st.seed_acks += 1
        return kind

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()


class ProjectSeat(Socket):
    def __init__(self, w: Worker, table_id: str, player_id: str, token: str, key: Signer) -> None:
        super().__init__(w)
        self.table_id = table_id
        self.player_id = player_id
        self.token = token
        self.key = key
        self.pub = key.public_bytes.hex()
        self.seat: int | None = None
        self.hand_no: int | None = None
        self.i = -1  # the newest record of the hand we know, and its link
        self.h: str | None = None
        self.view: dict[str, Any] | None = None
        self.view_i = -1  # the record the view is of
        self.acted_on: str | None = None
        self.seeds: dict[int, bytes] = {}

    def path(self) -> str:
        # the table in the URL: a server of several workers hands the socket to the
        # one that serves it (service/handover.py), as the page and the bots do
        return f"/ws?table={self.table_id}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def on_open(self) -> None:
        self.acted_on = None
        await self.send("join", {"type": "join", "table_id": self.table_id})

    def note(self, hand_no: int, i: int, h: str) -> None:
        if hand_no != self.hand_no:
            self.hand_no, self.i, self.h, self.view, self.acted_on = hand_no, -1, None, None, None
            self.view_i = -1
        if i > self.i:
            self.i, self.h = i, h

    def changed(self, m: dict[str, Any]) -> None:
        """The view after an update: its whole view (before issue 20, and at the deal),
        or the view we had with its changes; after a gap, a join for a snapshot."""
        if "view" in m:
            self.view, self.view_i = m["view"], m["i"]
        elif self.view is not None and self.view_i >= m["i"]:
            pass  # the snapshot held this record already
        elif self.view is not None and self.view_i == m["i"] - 1:
            self.view, self.view_i = views.apply(self.view, m.get("changes") or {}), m["i"]
        else:
            self.view, self.view_i = None, -1
            self.w.stats.errors["view_gap"] += 1
            task = asyncio.ensure_future(self.send("join", {"type": "join", "table_id": self.table_id}))
            self.w.acting.add(task)
            task.add_done_callback(self.w.acting.discard)

    async def on_message(self, m: dict[str, Any]) -> None:
        t = m.get("type")
        if t == "reply" and isinstance(m.get("update"), dict):
            await self.on_message(m["update"])  # a move's update comes with its reply
        if t == "update":
            self.note(m["hand_no"], m["i"], m["h"])
            self.changed(m)
            for e in m.get("events", ()):
                if e.get("kind") == "clock" and e.get("seat") == self.seat:
                    self.w.stats.clock_moves += 1
            if self.view is not None and self.view.get("phase") != "ended":
                self.w.tables_dealt.add(self.table_id)
            await self.maybe_act()
        elif t == "reply":
            kind = self.answered(m.get("id"), True)
            result = m.get("result") or {}
            if kind == "join":
                await self.from_snapshot(result)
            elif kind == "sit":
                self.seat, self.seated = result.get("seat"), True
                self.sat.set()
            elif kind == "action" and self.hand_no is not None and isinstance(result.get("i"), int):
                self.note(self.hand_no, result["i"], result["h"])
        elif t == "error":
            kind = self.answered(m.get("id"), False)
            err = m.get("error") or {}
            code = err.get("code", "?")
            if code == "wrong_node" and err.get("redirect"):
                self.url = str(err["redirect"]).rstrip("/")
                raise Reconnect()
            self.w.stats.errors[f"{kind}:{code}"] += 1
            if kind in ("join", "sit"):  # the table is between workers or busy: ask again shortly
                await asyncio.sleep(RETRY_AFTER * (0.5 + self.w.rng.random()))
                self.url = self.w.spec.url
                raise Reconnect()
            if kind == "action":  # stale_head and the like: sign again over what we see now
                self.acted_on = None
                if code in ("unavailable", "busy"):
                    asyncio.get_running_loop().call_later(RETRY_AFTER, self._retry)
                else:
                    await self.maybe_act()
        elif t == "hand":
            await self.on_hand(m)
        elif t == "result":
            if self.seat == 0:
                self.w.stats.hands_ended += 1
            self.view, self.view_i, self.acted_on = None, -1, None
        elif t == "table":
            mine = [int(s) for s, p in (m.get("seats") or {}).items() if p == self.player_id]
            if mine:
                self.seat, self.seated = mine[0], True
                self.sat.set()
        elif t == "resumed" and isinstance(m.get("snapshot"), dict):
            await self.from_snapshot(m["snapshot"])
        elif t == "moved":  # the table went to another worker or node: ask home where it is now
            self.url = self.w.spec.url
            self.w.stats.errors["moved"] += 1
            raise Reconnect()
        elif t in ("shutdown", "replaced"):
            raise Reconnect()

    async def from_snapshot(self, snap: dict[str, Any]) -> None:
        mine = [int(s) for s, p in (snap.get("seats") or {}).items() if p == self.player_id]
        if mine:
            self.seat, self.seated = mine[0], True
            self.sat.set()
        else:
            await self.send("sit", {"type": "sit", "table_id": self.table_id})
        hand = snap.get("hand")
        if not isinstance(hand, dict):
            return
        self.note(hand["hand_no"], int(hand["i"]), str(hand["h"]))
        if hand["phase"] == "commit" and hand.get("committed") is False:
            await self.commit(hand["hand_no"], hand["header"])
        elif hand["phase"] == "reveal" and hand.get("committed") and hand.get("revealed") is False:
            await self.reveal(hand["hand_no"], hand["commitments"])
        elif hand["phase"] == "play":
            self.view, self.view_i = hand.get("view"), int(hand["i"])
            self.w.tables_dealt.add(self.table_id)
            await self.maybe_act()

    async def on_hand(self, m: dict[str, Any]) -> None:
        rec = m["record"]
        self.note(m["hand_no"], int(rec["i"]), str(rec["h"]))
        if m.get("phase") == "commit":
            await self.commit(m["hand_no"], rec)
        elif m.get("phase") == "reveal":
            await self.reveal(m["hand_no"], rec)

    def sign(self, hand_no: int, prev: str, move: dict[str, Any]) -> str:
        return self.key.sign("move", move_body(self.table_id, hand_no, prev, move), PROTOCOL)

    async def commit(self, hand_no: int, record: dict[str, Any]) -> None:
        entry = next((s for s in record["header"]["seats"] if s["player_id"] == self.player_id), None)
        if entry is None:
            return  # not dealt in
        if entry.get("player_key") != self.pub:
            self.w.stats.key_mismatch += 1
            return
        self.seat = entry["seat"]
        seed = self.seeds.setdefault(hand_no, secrets.token_bytes(32))
        self.seeds.pop(hand_no - 2, None)
        c = player_commit(entry["seat"], seed)
        sig = self.sign(hand_no, record["h"], commit_move(entry["seat"], c))
        msg = {"type": "commit", "table_id": self.table_id, "hand_no": hand_no, "commit": c.hex(), "sig": sig}
        await self.send("commit", msg)

    async def reveal(self, hand_no: int, record: dict[str, Any]) -> None:
        seed = self.seeds.get(hand_no)
        commits = {c["seat"]: c["commit"] for c in record["commitments"]["commits"]}
        if seed is None or self.seat is None or commits.get(self.seat) != player_commit(self.seat, seed).hex():
            return
        sig = self.sign(hand_no, record["h"], reveal_move(self.seat, seed))
        msg = {"type": "reveal", "table_id": self.table_id, "hand_no": hand_no, "seed": seed.hex(), "sig": sig}
        await self.send("reveal", msg)

    def limit(self, hand_no: int) -> int:
        """The turn after which every seat drops, the same in every process."""
        hand_turns = self.w.spec.hand_turns
        digest = hashlib.sha256(f"{self.table_id}/{hand_no}".encode()).digest()
        return hand_turns // 2 + int.from_bytes(digest[:4], "big") % (hand_turns + 1)

    def on_turn(self) -> bool:
        v = self.view
        if v is None or self.h is None or v.get("phase") == "ended":
            return False
        me = v.get("me")
        return bool(me) and v.get("turn") == me["seat"] and me.get("status") == "playing"

    async def maybe_act(self) -> None:
        if not self.on_turn() or self.acted_on == self.h:
            return
        self.acted_on = self.h
        think = self.w.spec.think
        if think is None:
            await self.act()
        else:
            asyncio.get_running_loop().call_later(self.w.rng.uniform(*think), self._act_later, self.h)

    def _retry(self) -> None:
        if self.acted_on is None and self.on_turn():
            task = asyncio.ensure_future(self.maybe_act())
            self.w.acting.add(task)
            task.add_done_callback(self.w.acting.discard)

    def _act_later(self, h: str | None) -> None:
        if self.h == h and self.acted_on == h and self.on_turn():
            task = asyncio.ensure_future(self.act())
            self.w.acting.add(task)
            task.add_done_callback(self.w.acting.discard)

    async def act(self) -> None:
        v, h, hand_no = self.view, self.h, self.hand_no
        assert v is not None and h is not None and hand_no is not None
        me = v["me"]
        action: dict[str, Any]
        if v["phase"] == "draw":
            action = {"kind": "drop"} if v["turn_no"] > self.limit(hand_no) else {"kind": "draw_closed"}
        else:
            card = me.get("drawn_this_turn")
            action = {"kind": "discard", "card": card if card is not None else me["cards"][-1]}
        sig = self.sign(hand_no, h, {**action, "seat": me["seat"]})
        msg = {"type": "action", "table_id": self.table_id, "hand_no": hand_no, "action": action, "prev": h, "sig": sig}
        await self.send("action", msg, sub=action["kind"])


class FloorSeat(Socket):
    """A socket on the floor server: one message at a time, on its table's turn."""

    def __init__(self, w: Worker, table_id: str, k: int) -> None:
        super().__init__(w)
        self.table_id = table_id
        self.k = k
        self.key = Signer.generate()

    def path(self) -> str:
        if self.w.spec.mode != "floor_like":
            return "/ws"
        return f"/ws?table={self.table_id}&seat={self.k}&key={self.key.public_bytes.hex()}"

    async def on_open(self) -> None:
        self.seated = True
        self.sat.set()

    async def on_message(self, m: dict[str, Any]) -> None:
        msg_id = m.get("id")
        entry = self.pending.get(msg_id) if isinstance(msg_id, str) else None
        ok = m.get("type") == "reply"
        self.answered(msg_id, ok)
        if entry is not None and entry[4] is not None and not entry[4].done():
            entry[4].set_result(m)

    async def act(self, i: int, head: str, action: dict[str, Any]) -> str:
        """Send one action-sized message and wait for its reply; a lost socket is
        waited out.  Returns the new head: the floor's (like-for-like), or a made-up one."""
        while not self.w.stopping:
            move = {**action, "seat": self.k}
            sig = self.key.sign("move", move_body(self.table_id, 1, head, move), PROTOCOL)
            msg = {
                "type": "action",
                "table_id": self.table_id,
                "hand_no": 1,
                "action": action,
                "prev": head,
                "sig": sig,
            }
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            if await self.send("action", msg, fut, sub=action["kind"]) is None:
                await asyncio.sleep(0.1)
                continue
            try:
                reply = await fut
            except ConnectionError:
                continue
            if reply.get("type") == "reply":
                h = (reply.get("result") or {}).get("h")
                return h if isinstance(h, str) else hashlib.sha256(f"{head}{i}".encode()).hexdigest()
            err = reply.get("error") or {}
            self.w.stats.errors[f"floor:{err.get('code') if isinstance(err, dict) else err}"] += 1
            if isinstance(err, dict) and isinstance(err.get("h"), str):  # stale_head: sign over the floor's
                head = err["h"]
            else:
                await asyncio.sleep(0.1)
        return head


def worker_main(spec: Spec, conn: Any) -> None:
    """A client process: run until the parent says stop."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(Worker(spec, conn).run())
    with contextlib.suppress(Exception):
        conn.send(("exit", None))
        conn.close()
