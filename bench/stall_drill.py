"""The short-stall drill (D37, ``_settle``): is a move that waited, unread, in the
server's socket while the server stood still across a turn's deadline taken, or is
the seat charged by the clock?

A real ``rummy-table serve`` (one worker, its own embedded PostgreSQL in a temporary
data directory) runs from the source tree given by ``--tree`` (``PYTHONPATH=TREE``),
with a table of short turns.  Two players sit, commit and reveal over real
WebSockets (the client of ``tests/wsclient.py`` of this script's own repository: only
the server comes from ``--tree``), and every turn is a trial of one setting
``(A, B, D)``, the settings taken in turn round after round:

* at ``deadline - A`` the process that runs the table gets SIGSTOP;
* at ``deadline - B`` (``B < A``: it is stopped) the player on turn sends its signed
  ``draw_closed``, which lands in the kernel's socket buffer;
* at ``deadline - A + D`` it gets SIGCONT: the stop lasted ``D`` ms and ended
  ``D - A`` ms after the deadline (``D = 0``: no stop at all, a control).

The drill then waits for the draw's answer: ``reply`` (taken: the seat then discards
at once) or an error and its code (``stale_head`` when the clock drew for the seat
first), and for the turn to pass; the clock moved for the seat when an update told a
``clock`` event of its seat.  A trial is *taken* (the draw answered ``reply`` and no
clock event before it), *charged* (a clock event for the seat before its draw was
answered) or *other*; *discard late* counts taken draws whose turn the clock ended
all the same (the discard came after what the seat kept).  Signal moments are on
``time.monotonic`` with asyncio sleeps; every stop's length is measured and
reported, with the 1-minute load average before and after.

Between two trials a spacer turn (``--phase random``, the default): the next seat
draws and discards at a random moment of its turn.  Without it (``--phase locked``)
every turn begins a few ms after the last trial's SIGCONT, where the server's stall
meter (service/stallmeter.py, a tick every 0.1 s) also woke and restarted its ticks:
its tick then falls within a few ms of every later deadline, and it counts each stop
as about as long as the table's own late wake (``D - A``) instead of anything from
``D - 100`` to ``D``.  A real stop comes at a random moment of the meter's tick; the
spacer gives it one.  The late wakes the server logged are shown per setting.

    python bench/stall_drill.py --tree /tmp/before     # e.g. git archive 80f0f95 | tar -x -C /tmp/before
    python bench/stall_drill.py --tree /work/main --trials 10 --setting 60,30,160 --json out.json

Not a test: it asserts nothing about time (README, "No clock in an assertion"); it
prints what it measured.  The server's log (``-v``) is kept in the work directory
(``--keep``); ``--show-log`` prints every trial with the table's lines about late
wakes, and for a trial not taken the frames the seat's client was sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import free_port, serve_command  # noqa: E402
from tests.wsclient import Client  # noqa: E402
from verifier.fairness import player_commit  # noqa: E402
from verifier.signing import Signer  # noqa: E402

OPERATOR_TOKEN_VARIABLE = "RUMMY_OPERATOR_TOKEN"  # service/envnames.py, in both trees
OPERATOR = "stall-drill-" + secrets.token_hex(6)

TURN_SECONDS = 3  # the table's turn clock: short, so a trial takes a few seconds
MAX_MISSED_TURNS = 100  # the most a table allows: a seat charged in every trial is never dropped
TABLE_SEATS = 4
POINT_VALUE = 1
DEPOSIT = 10_000_000  # HT minor units each player gets: many hands' holds

START_BOUND_S = 180.0  # the server answers /healthz within this (a first embedded PostgreSQL start)
ANSWER_BOUND_S = 15.0  # any reply waited for at most this long
TURN_BOUND_S = 3 * TURN_SECONDS + 5.0  # a turn passes within this, whoever ends it
POLL_S = 0.05  # how often the server's start, and a turn, are polled
SPIN_S = 0.003  # a signal's moment: asyncio sleeps to this much before it, then reads the clock until it
STOP_BOUND_S = 30.0  # SIGTERM to exit
MS = 1000.0

DEFAULT_TRIALS = 10
SPACER_MIN_S = 0.2  # a spacer turn's move comes this long after its turn began ...
SPACER_SPAN_S = 0.5  # ... plus up to this much more: several of the stall meter's 0.1 s ticks
#: (A, B, D) in ms: stop at deadline - A, draw at deadline - B, continue at deadline - A + D
DEFAULT_SETTINGS = (
    (60, 30, 0),  # control: no stop at all
    (60, 30, 40),  # control: the stop ends 20 ms before the deadline
    (60, 30, 65),  # ends 5 ms after: within jitter_ms (10) on HEAD, on time by rule
    (60, 30, 160),  # ends 100 ms after
    (60, 30, 210),  # ends 150 ms after
    (60, 30, 300),  # ends 240 ms after: under stall_ms (250) by the table's wake
    (60, 30, 400),  # ends 340 ms after: a stall by the table's own wake (held before too)
)
#: the server's log lines about a late wake or a stall (service/tablecore/core.py)
LATE_LINE = re.compile(r"late|stall|no beat|grace", re.IGNORECASE)
LATE_MS = re.compile(r"woke (\d+) ms late")


@dataclass(frozen=True)
class Setting:
    a_ms: int
    b_ms: int
    d_ms: int

    @property
    def label(self) -> str:
        if self.d_ms == 0:
            return f"no stop (draw at -{self.b_ms})"
        return f"A={self.a_ms} B={self.b_ms} D={self.d_ms} (ends {self.d_ms - self.a_ms:+d})"

    def check(self) -> None:
        if self.d_ms and not (self.a_ms > self.b_ms > self.a_ms - self.d_ms):
            raise SystemExit(f"{self.label}: the draw must be sent while the server is stopped (A > B > A - D)")


@dataclass
class Trial:
    setting: Setting
    seat: int
    outcome: str = "other"  # taken | charged | other
    draw: str = ""  # "reply" or the error's code
    clock_moved: bool = False  # a clock event for the seat in this turn
    discard: str = ""  # "reply", the error's code, or "" (not sent)
    stop_ms: float = 0.0  # SIGSTOP to SIGCONT, measured
    stop_at_ms: float = 0.0  # each moment relative to the deadline, measured
    draw_at_ms: float = 0.0
    cont_at_ms: float = 0.0
    stopped_at_draw: bool | None = None  # /proc said the process was stopped as the draw was sent
    arrived_ms: float | None = None  # the ack's arrival time relative to the deadline
    log: list[str] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)  # what the seat's client was sent, in short

    @property
    def late_logged(self) -> list[int]:
        """How late the table said it woke (``_stalled``'s and ``_settle``'s lines), ms."""
        return [int(m.group(1)) for line in self.log for m in LATE_MS.finditer(line)]

    @property
    def discard_late(self) -> bool:
        return self.outcome == "taken" and self.clock_moved


# -- the server ------------------------------------------------------------------------


@dataclass
class Server:
    tree: Path
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "server.log"

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(self.tree), OPERATOR_TOKEN_VARIABLE: OPERATOR, "PYTHONUNBUFFERED": "1"}
        env.pop("DATABASE_URL", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                serve_command(self.port, self.workdir / "data", None, verbose=True),
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=log,
            )

    async def wait_ready(self, session: aiohttp.ClientSession) -> None:
        end = time.monotonic() + START_BOUND_S
        while time.monotonic() < end:
            assert self.proc is not None and self.proc.poll() is None, f"serve exited; see {self.log_path}"
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(self.url + "/healthz", timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(POLL_S)
        raise RuntimeError(f"the server did not start; see {self.log_path}")

    def table_pid(self) -> int:
        """The process that runs the tables: a forked worker of ``serve`` if it has one
        (a Python child running the service), else ``serve`` itself (``--workers 1``)."""
        assert self.proc is not None
        for pid in children(self.proc.pid):
            if "service" in cmdline(pid) and "postgres" not in cmdline(pid):
                return pid
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        for pid in {self.table_pid(), self.proc.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)  # never leave one stopped
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def log_since(self, offset: int) -> list[str]:
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        return [line for line in text.splitlines() if LATE_LINE.search(line)]


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    return ""


def is_stopped(pid: int) -> bool:
    """/proc's state of ``pid`` is T (stopped by a signal)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


# -- the players and the table ---------------------------------------------------------


async def operator(session: aiohttp.ClientSession, url: str, path: str, body: Any) -> Any:
    headers = {"Authorization": f"Bearer {OPERATOR}"}
    async with session.post(url + path, json=body, headers=headers) as r:
        data = await r.json()
        if r.status >= 400:
            raise RuntimeError(f"POST {path}: {r.status} {data}")
        return data


async def new_player(session: aiohttp.ClientSession, url: str, name: str) -> dict[str, Any]:
    signer = Signer.generate()
    body = {"name": name, "deposit": DEPOSIT, "public_key": signer.public_bytes.hex()}
    player: dict[str, Any] = await operator(session, url, "/api/players", body)
    player["signer"] = signer
    return player


async def new_table(session: aiohttp.ClientSession, url: str) -> str:
    rules = {
        "seats": TABLE_SEATS,
        "point_value": POINT_VALUE,
        "turn_seconds": TURN_SECONDS,
        "max_missed_turns": MAX_MISSED_TURNS,
    }
    return str((await operator(session, url, "/api/tables", rules))["id"])


def is_hand_frame(phase: str, hand_no: int) -> Any:
    return lambda f: f.get("type") == "hand" and f.get("phase") == phase and f.get("hand_no") == hand_no


async def through_seeds(clients: list[Client], hand_no: int) -> None:
    """Every client commits, then reveals, in hand ``hand_no`` (tests/test_server.py's
    ``through_seeds``); returns once the deal's update has reached each."""
    seeds: dict[Client, tuple[int, bytes]] = {}
    for c in clients:
        frame = await c.wait_frame(is_hand_frame("commit", hand_no), timeout=ANSWER_BOUND_S)
        seat = c.seat_in(frame["record"])
        seeds[c] = (seat, secrets.token_bytes(32))
        r = await c.commit(frame["record"], player_commit(seat, seeds[c][1]))
        assert r["type"] == "reply", r
    for c in clients:
        frame = await c.wait_frame(is_hand_frame("reveal", hand_no), timeout=ANSWER_BOUND_S)
        r = await c.reveal(frame["record"], *seeds[c])
        assert r["type"] == "reply", r
    for c in clients:
        await c.wait_frame(is_update_of(hand_no), timeout=ANSWER_BOUND_S)


def is_update_of(hand_no: int) -> Any:
    return lambda f: f.get("type") == "update" and f.get("hand_no") == hand_no and f.get("view") is not None


def latest_update(c: Client) -> dict[str, Any] | None:
    return next((f for f in reversed(c.frames) if f.get("type") == "update" and f.get("view") is not None), None)


def latest_view(c: Client) -> dict[str, Any]:
    u = latest_update(c)
    assert u is not None, "no update yet"
    return dict(u["view"])


def newest_hand_no(c: Client) -> int:
    return max((int(f["hand_no"]) for f in c.frames if f.get("type") == "hand"), default=0)


# -- time ------------------------------------------------------------------------------


def deadline_monotonic(deadline: str) -> float:
    """A deadline the server told (ISO 8601 on its clock: the wall clock, run on by the
    monotonic one, on this very machine) on this process's monotonic clock."""
    return datetime.fromisoformat(deadline).timestamp() - time.time() + time.monotonic()


async def sleep_until(at: float) -> float:
    """Sleep until ``at`` (monotonic s), the last ``SPIN_S`` on the clock itself (an
    asyncio timer may fire a millisecond or two late); the moment woken."""
    left = at - SPIN_S - time.monotonic()
    if left > 0:
        await asyncio.sleep(left)
    while (now := time.monotonic()) < at:
        pass
    return now


# -- one trial -------------------------------------------------------------------------


@dataclass
class Table:
    server: Server
    table_id: str
    clients: list[Client]
    hand_no: int = 0

    async def on_turn(self) -> tuple[Client, dict[str, Any]]:
        """The client whose draw phase begins now, and its update; a hand that ended
        is followed by the next one's seed phases."""
        while True:
            newest = newest_hand_no(self.clients[0])
            if newest > self.hand_no:
                self.hand_no = newest
                await through_seeds(self.clients, newest)
            for c in self.clients:
                u = latest_update(c)
                view = None if u is None else u["view"]
                if u is None or view is None or u["hand_no"] != self.hand_no:
                    continue
                if view["phase"] == "draw" and view["turn"] == view["me"]["seat"]:
                    return c, u
            await asyncio.sleep(POLL_S)

    async def turn_passed(self, c: Client, seat: int, turn_no: int) -> None:
        """The turn of ``seat`` (``turn_no``) is over: another turn, or the hand ended."""
        end = time.monotonic() + TURN_BOUND_S
        while time.monotonic() < end:
            view = latest_view(c)
            moved_on = view["turn_no"] != turn_no or view["phase"] not in ("draw", "discard")
            if moved_on or newest_hand_no(c) > self.hand_no:
                return
            await asyncio.sleep(POLL_S)
        raise RuntimeError(f"seat {seat}'s turn {turn_no} did not pass within {TURN_BOUND_S} s")

    async def spacer(self, rng: random.Random) -> None:
        """A turn played at a random moment: the next trial's deadline falls at a random
        point of the stall meter's tick (the module's docstring)."""
        c, update = await self.on_turn()
        view = update["view"]
        seat, turn_no = int(view["me"]["seat"]), int(view["turn_no"])
        await asyncio.sleep(SPACER_MIN_S + rng.random() * SPACER_SPAN_S)
        r = await c.act(self.table_id, self.hand_no, seat, {"kind": "draw_closed"}, timeout=ANSWER_BOUND_S)
        if r["type"] == "reply":
            await discard_first(c, self, seat)
        await self.turn_passed(c, seat, turn_no)


def signed_draw(c: Client, table_id: str, hand_no: int, seat: int) -> tuple[str, dict[str, Any]]:
    """The draw's message id and message, signed over the newest record ``c`` holds."""
    prev = c.head()
    sig = c.sign(table_id, hand_no, prev, {"kind": "draw_closed", "seat": seat})
    msg_id = "draw-" + secrets.token_hex(4)
    action = {"kind": "draw_closed"}
    message = {"type": "action", "table_id": table_id, "hand_no": hand_no, "action": action}
    return msg_id, {**message, "prev": prev, "sig": sig}


async def send_now(c: Client, msg_id: str, message: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
    """Write ``message`` to the socket at once; the future of its answer."""
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    c._replies[msg_id] = fut
    await c.ws.send_str(json.dumps({"id": msg_id, **message}))
    return fut


def clock_events(c: Client, seat: int, since: int) -> list[tuple[int, dict[str, Any]]]:
    """(frame index, event) of every clock event for ``seat`` in ``c``'s frames from ``since``."""
    return [
        (n, e)
        for n, f in enumerate(c.frames[since:], since)
        if f.get("type") == "update"
        for e in f.get("events", ())
        if e.get("kind") == "clock" and e.get("seat") == seat
    ]


def answer_index(c: Client, msg_id: str) -> int | None:
    return next((n for n, f in enumerate(c.frames) if f.get("id") == msg_id), None)


def code_of(answer: dict[str, Any]) -> str:
    if answer.get("type") == "reply":
        return "reply"
    error = answer.get("error")
    return str(error.get("code") if isinstance(error, dict) else answer.get("code", answer.get("type")))


async def discard_first(c: Client, table: Table, seat: int) -> str:
    card = latest_view(c)["me"]["cards"][0]
    with contextlib.suppress(TimeoutError):
        r = await c.act(table.table_id, table.hand_no, seat, {"kind": "discard", "card": card}, timeout=ANSWER_BOUND_S)
        return code_of(r)
    return "no answer"


async def stop_window(pid: int, s: Setting, dl: float, c: Client, draw: tuple[str, dict[str, Any]], t: Trial) -> Any:
    """SIGSTOP at ``dl - A``, the draw at ``dl - B``, SIGCONT at ``dl - A + D``; the
    moments measured into ``t``.  Returns the draw's answer future."""
    stopping = s.d_ms > 0
    if stopping:
        at = await sleep_until(dl - s.a_ms / MS)
        os.kill(pid, signal.SIGSTOP)
        t.stop_at_ms = (at - dl) * MS
    try:
        at = await sleep_until(dl - s.b_ms / MS)
        if stopping:
            t.stopped_at_draw = is_stopped(pid)
        fut = await send_now(c, *draw)
        t.draw_at_ms = (at - dl) * MS
    finally:
        if stopping:
            at = await sleep_until(dl + (s.d_ms - s.a_ms) / MS)
            os.kill(pid, signal.SIGCONT)
            t.cont_at_ms = (at - dl) * MS
            t.stop_ms = t.cont_at_ms - t.stop_at_ms
    return fut


def arrival(answer: dict[str, Any], deadline: str) -> float | None:
    """The ack's arrival time (the table's clock, ms) relative to the told deadline."""
    result = answer.get("result") or answer.get("error") or {}
    ack = result.get("ack") if isinstance(result, dict) else None
    arrived = ack.get("body", {}).get("arrived") if isinstance(ack, dict) else None
    if not isinstance(arrived, int):
        return None
    return arrived - datetime.fromisoformat(deadline).timestamp() * MS


async def trial(table: Table, s: Setting) -> Trial:
    c, update = await table.on_turn()
    view = update["view"]
    seat, turn_no = int(view["me"]["seat"]), int(view["turn_no"])
    t = Trial(s, seat)
    dl = deadline_monotonic(update["deadline"])
    draw = signed_draw(c, table.table_id, table.hand_no, seat)
    since, log_at = len(c.frames), table.server.log_size()
    pid = table.server.table_pid()
    fut = await stop_window(pid, s, dl, c, draw, t)
    try:
        answer = await asyncio.wait_for(fut, ANSWER_BOUND_S)
    except TimeoutError:
        answer = {"type": "error", "error": {"code": "no answer"}}
    t.draw, t.arrived_ms = code_of(answer), arrival(answer, update["deadline"])
    if t.draw == "reply":
        t.discard = await discard_first(c, table, seat)
    await table.turn_passed(c, seat, turn_no)
    classify(t, c, seat, since, answer_index(c, draw[0]))
    t.frames = [short(f) for f in c.frames[since:]]
    t.log = table.server.log_since(log_at)
    return t


def short(f: dict[str, Any]) -> str:
    """A frame in a few words: an update's record and events, a reply's or error's id."""
    if f.get("type") == "update":
        events = ", ".join(f"{e.get('kind')}(seat {e.get('seat')})" for e in f.get("events", ()))
        return f"update i={f.get('i')}{' via reply' if f.get('via') else ''}: {events}"
    if f.get("type") in ("reply", "error"):
        return f"{f['type']} {f.get('id')} {code_of(f)}"
    return str(f.get("type"))


def classify(t: Trial, c: Client, seat: int, since: int, answered_at: int | None) -> None:
    moves = clock_events(c, seat, since)
    t.clock_moved = bool(moves)
    before = [n for n, _ in moves if answered_at is None or n < answered_at]
    if before:
        t.outcome = "charged"
    elif t.draw == "reply":
        t.outcome = "taken"


# -- the run ---------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def seated_table(server: Server, session: aiohttp.ClientSession) -> Any:
    a = await new_player(session, server.url, "ann")
    b = await new_player(session, server.url, "bo")
    table_id = await new_table(session, server.url)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        for c in (ca, cb):
            await c.request({"type": "join", "table_id": table_id})
            r = await c.request({"type": "sit", "table_id": table_id})
            assert r["type"] == "reply", r
        yield Table(server, table_id, [ca, cb])


@dataclass(frozen=True)
class Plan:
    settings: list[Setting]
    trials: int
    spacers: bool
    seed: int
    verbose: bool


async def run(tree: Path, workdir: Path, plan: Plan) -> list[Trial]:
    server = Server(tree, workdir)
    server.start()
    done: list[Trial] = []
    try:
        async with aiohttp.ClientSession() as session:
            await server.wait_ready(session)
            serve_pid = server.proc.pid if server.proc else "?"
            print(f"serve from {tree}: pid {serve_pid}, tables in pid {server.table_pid()}", flush=True)
            rng = random.Random(plan.seed)
            async with seated_table(server, session) as table:
                for n in range(plan.trials):
                    for s in plan.settings:
                        t = await trial(table, s)
                        done.append(t)
                        if plan.verbose:
                            say_trial(n, t)
                        if plan.spacers:
                            await table.spacer(rng)
    finally:
        server.stop()
    return done


def say_trial(n: int, t: Trial) -> None:
    arrived = "-" if t.arrived_ms is None else f"{t.arrived_ms:+.0f}"
    print(
        f"  #{n} {t.setting.label}: seat {t.seat} {t.outcome} (draw {t.draw}, discard {t.discard or '-'},"
        f" clock {'moved' if t.clock_moved else 'still'}); stop {t.stop_at_ms:+.1f}..{t.cont_at_ms:+.1f}"
        f" = {t.stop_ms:.1f} ms, draw sent {t.draw_at_ms:+.1f} (stopped: {t.stopped_at_draw}), ack arrived {arrived}",
        flush=True,
    )
    for line in t.log:
        print("      log:", line)
    if t.outcome != "taken":
        for frame in t.frames:
            print("      frame:", frame)


def report(trials: list[Trial], settings: list[Setting]) -> None:
    head = f"{'setting':<36} {'trials':>6} {'taken':>6} {'charged':>8} {'other':>6} {'discard late':>13}"
    head += f"  {'stop ms (min..max)':>20}  {'draw sent vs deadline':>22}  {'not stopped at draw':>19}"
    print(head + f"  {'late logged ms (n: min..max)':>28}")
    for s in settings:
        mine = [t for t in trials if t.setting == s]
        count = {k: sum(1 for t in mine if t.outcome == k) for k in ("taken", "charged", "other")}
        late = sum(1 for t in mine if t.discard_late)
        stops = [t.stop_ms for t in mine if s.d_ms]
        span = f"{min(stops):.1f}..{max(stops):.1f}" if stops else "-"
        sent = [t.draw_at_ms for t in mine]
        sent_span = f"{min(sent):+.1f}..{max(sent):+.1f}" if sent else "-"
        running = sum(1 for t in mine if t.stopped_at_draw is False)
        logged = [max(t.late_logged) for t in mine if t.late_logged]
        logged_span = f"{len(logged)}: {min(logged)}..{max(logged)}" if logged else "0"
        print(
            f"{s.label:<36} {len(mine):>6} {count['taken']:>6} {count['charged']:>8} {count['other']:>6}"
            f" {late:>13}  {span:>20}  {sent_span:>22}  {running:>19}  {logged_span:>28}"
        )
    others = [t for t in trials if t.outcome == "other"]
    for t in others:
        print(f"  other: {t.setting.label}: draw {t.draw}, clock moved {t.clock_moved}")


def parse_setting(text: str) -> Setting:
    a, b, d = (int(x) for x in text.split(","))
    s = Setting(a, b, d)
    s.check()
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the source tree the server runs from (default: this one)")
    ap.add_argument("--trials", type=int, default=DEFAULT_TRIALS, help="trials of each setting")
    ap.add_argument("--setting", action="append", type=parse_setting, help="A,B,D in ms (repeat; default: a set)")
    ap.add_argument(
        "--phase",
        choices=("random", "locked"),
        default="random",
        help="random: a spacer turn at a random moment between trials (default); locked: none",
    )
    ap.add_argument("--seed", type=int, default=1, help="the spacers' random moments")
    ap.add_argument("--json", type=Path, default=None, help="write every trial to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (the server's log)")
    ap.add_argument("--show-log", action="store_true", help="print every trial, with its late-wake log lines")
    args = ap.parse_args(argv)
    settings = args.setting or [Setting(*x) for x in DEFAULT_SETTINGS]
    plan = Plan(settings, args.trials, args.phase == "random", args.seed, args.show_log)
    tree = args.tree.resolve()
    workdir = Path(tempfile.mkdtemp(prefix="stall-drill-"))
    load_before, began = os.getloadavg()[0], time.monotonic()
    try:
        trials = asyncio.run(run(tree, workdir, plan))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work directory kept: {workdir}")
    print(
        f"tree {tree}; {len(trials)} trials in {time.monotonic() - began:.0f} s; turn {TURN_SECONDS} s;"
        f" phase {args.phase} (seed {args.seed})"
    )
    print(f"1-minute load: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    report(trials, settings)
    if args.json is not None:
        rows = [{**asdict(t), "setting": asdict(t.setting), "label": t.setting.label} for t in trials]
        meta = {"tree": str(tree), "phase": args.phase, "seed": args.seed}
        args.json.write_text(json.dumps({**meta, "trials": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
