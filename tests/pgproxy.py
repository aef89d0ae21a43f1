"""A TCP proxy between the server and PostgreSQL that can misbehave on purpose.

It reads the PostgreSQL frontend protocol just enough to know which SQL each
connection runs (simple ``Query`` messages, and ``Parse``/``Bind`` for prepared
statements, which asyncpg uses), so a test can ask it to:

* ``drop_commit_reply(pattern)`` — let the next commit of a transaction that ran SQL
  matching ``pattern`` (an explicit ``COMMIT``, or the end of a statement that commits
  by itself) reach PostgreSQL, wait until PostgreSQL answers, then drop that answer and
  cut the connection: the commit happened, the client cannot know;
* ``hold_commit_reply(pattern, seconds)`` — the same commit's answer arrives
  ``seconds`` late (PostgreSQL hung while committing: the client's timeout fires
  first); ``hold_reply(pattern, seconds)`` — the answer to the next statement
  matching ``pattern`` arrives late (hung inside the transaction);
* ``withhold(pattern)`` — the next statement matching ``pattern`` never reaches
  PostgreSQL: the connection stalls before it (the client waits for an answer that
  cannot come) until ``let_go()``, which cuts that connection, so the statement is
  never run whatever became of the client;
* ``withhold(pattern, forward=True)`` — the same stall, but ``let_go()`` sends the
  statement on to PostgreSQL, late (a frozen node's write that reaches the database
  after its table was taken over); ``late_answers`` counts such statements PostgreSQL has finished with;
* ``skip=N`` (``hold_commit_reply``, ``withhold``): the first ``N`` matches pass
  untouched and the trap takes the one after them (a table's second write of
  records, where the first is the seed that leads to it);
* ``hang()`` — PostgreSQL hangs: nothing goes either way on any connection, old or
  new, until ``let_go()``;
* ``let_go()`` — every answer held back goes on at once;
* ``cut()`` — close every connection at once (PostgreSQL went away);
* ``refuse = True`` — close new connections at once (PostgreSQL is still away).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field


def _after(skip: int) -> Callable[[], bool]:
    """A trap's ``when``, asked at each match: false for the first ``skip``, then true."""
    seen = itertools.count()
    return lambda: next(seen) >= skip


@dataclass(eq=False)
class _Conn:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    statements: dict[str, str] = field(default_factory=dict)  # prepared statement name -> SQL
    in_tx: list[str] = field(default_factory=list)  # SQL run since the transaction began
    explicit: bool = False  # inside BEGIN … COMMIT
    doomed: bool = False  # the COMMIT went through: drop the answer and cut
    hold: float = 0.0  # seconds the next answer is held back
    withheld: bool = False  # a statement the proxy will not forward: stall, then cut
    late: bool = False  # … or stall, then forward it (withhold(forward=True))
    sent_late: bool = False  # the stalled statement went on: its end (ReadyForQuery) is counted


class PgProxy:
    """Listens on a Unix socket in a directory of its own and forwards to the real
    server's socket (the embedded PostgreSQL listens on a Unix socket: a DSN
    ``…?host=DIR`` means ``DIR/.s.PGSQL.5432``)."""

    SOCKET = ".s.PGSQL.5432"

    def __init__(self, target_dsn: str, listen_dir: str) -> None:
        m = re.search(r"host=([^&]+)", target_dsn)
        assert m, "the proxy forwards to a Unix-socket DSN (…?host=DIR)"
        self.target_dsn = target_dsn
        self.target = f"{m.group(1)}/{self.SOCKET}"
        self.listen_dir = listen_dir
        self.conns: set[_Conn] = set()
        self.refuse = False
        self.commit_traps: list[tuple[re.Pattern[str], Callable[[], bool], float]] = []  # (…, hold: 0 drops)
        self.statement_holds: list[tuple[re.Pattern[str], float]] = []
        self.withholds: list[tuple[re.Pattern[str], Callable[[], bool], bool]] = []  # (…, forward at let_go)
        self.late_answers = 0  # statements withheld, then forwarded, that PostgreSQL has finished with
        self.dropped: list[str] = []  # the transactions whose COMMIT answer was dropped
        self._held: set[asyncio.Future[None]] = set()  # answers being held back (let_go ends them)
        self._hung: asyncio.Future[None] | None = None  # hang(): nothing goes either way until it is done
        self._hung_waiting = 0  # the sides of connections waiting on it
        self._server: asyncio.Server | None = None

    async def start(self) -> PgProxy:
        self._server = await asyncio.start_unix_server(self._accept, f"{self.listen_dir}/{self.SOCKET}")
        return self

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def holding(self) -> int:
        """What is being held back now: answers, withheld statements, and the sides of
        connections with something to send while PostgreSQL hangs."""
        return len(self._held) + self._hung_waiting

    def dsn(self, database: str | None = None) -> str:
        """The target DSN pointed at the proxy (and at ``database`` if given)."""
        out = re.sub(r"host=[^&]+", f"host={self.listen_dir}", self.target_dsn)
        if database:
            out = re.sub(r"/[^/?]*\?", f"/{database}?", out, count=1)
        return out

    def drop_commit_reply(self, pattern: str, when: Callable[[], bool] = lambda: True) -> None:
        """Arm a trap: the next COMMIT of a transaction that ran SQL matching
        ``pattern``, at a moment when ``when()`` holds, loses its answer."""
        self.commit_traps.append((re.compile(pattern, re.IGNORECASE), when, 0.0))

    def hold_commit_reply(self, pattern: str, seconds: float, skip: int = 0) -> None:
        """The next COMMIT of a transaction that ran SQL matching ``pattern`` (after
        ``skip`` such commits) reaches PostgreSQL; its answer reaches the client
        ``seconds`` later."""
        self.commit_traps.append((re.compile(pattern, re.IGNORECASE), _after(skip), seconds))

    def hold_reply(self, pattern: str, seconds: float) -> None:
        """The answer to the next statement matching ``pattern`` is ``seconds`` late."""
        self.statement_holds.append((re.compile(pattern, re.IGNORECASE), seconds))

    def withhold(self, pattern: str, skip: int = 0, *, forward: bool = False) -> None:
        """The next statement matching ``pattern`` (after ``skip`` such statements) is
        not sent to PostgreSQL; its connection stalls (counted in ``holding``) until
        ``let_go()``, which cuts it (the statement never runs) or, with ``forward``,
        sends the statement on and lets the connection go on."""
        self.withholds.append((re.compile(pattern, re.IGNORECASE), _after(skip), forward))

    def hang(self) -> None:
        """From now on nothing is forwarded either way (counted in ``holding``, one a
        side that has something to send) until ``let_go()``."""
        if self._hung is None or self._hung.done():
            self._hung = asyncio.get_running_loop().create_future()

    def let_go(self) -> None:
        """Every answer being held back goes on now."""
        for f in self._held:
            if not f.done():
                f.set_result(None)
        if self._hung is not None and not self._hung.done():
            self._hung.set_result(None)

    async def _unless_hung(self) -> None:
        hung = self._hung
        if hung is not None and not hung.done():
            self._hung_waiting += 1
            try:
                await asyncio.shield(hung)
            finally:
                self._hung_waiting -= 1

    def cut(self) -> None:
        for c in list(self.conns):
            for w in (c.client, c.server):
                with contextlib.suppress(Exception):
                    w.transport.abort()
        self.conns.clear()

    async def _accept(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        if self.refuse:
            cw.transport.abort()
            return
        try:
            sr, sw = await asyncio.open_unix_connection(self.target)
        except OSError:
            cw.transport.abort()
            return
        conn = _Conn(cw, sw)
        self.conns.add(conn)
        pumps = [
            asyncio.create_task(self._client_to_server(conn, cr)),
            asyncio.create_task(self._server_to_client(conn, sr)),
        ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)  # one side closed: close both
        for p in pumps:
            p.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        self.conns.discard(conn)
        for w in (cw, sw):
            with contextlib.suppress(Exception):
                w.transport.abort()

    async def _client_to_server(self, conn: _Conn, reader: asyncio.StreamReader) -> None:
        # Untyped start-up messages first (SSLRequest, then StartupMessage).
        while True:
            head = await reader.readexactly(4)
            (length,) = struct.unpack(">I", head)
            body = await reader.readexactly(length - 4)
            conn.server.write(head + body)
            code = struct.unpack(">I", body[:4])[0] if len(body) >= 4 else 0
            if code != 80877103:  # not an SSLRequest: that was the StartupMessage
                break
        while True:
            kind = await reader.readexactly(1)
            head = await reader.readexactly(4)
            (length,) = struct.unpack(">I", head)
            body = await reader.readexactly(length - 4)
            self._note(conn, kind, body)
            if conn.withheld:  # stall until let go, then cut the connection or send it on late
                stalled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._held.add(stalled)
                try:
                    await stalled
                finally:
                    self._held.discard(stalled)
                if not conn.late:
                    return
                conn.withheld = conn.late = False
                conn.sent_late = True
            await self._unless_hung()
            conn.server.write(kind + head + body)
            await conn.server.drain()

    def _note(self, conn: _Conn, kind: bytes, body: bytes) -> None:
        """Follow the transactions: an explicit one ends at COMMIT; outside one, each
        statement commits by itself at the Sync that ends it (autocommit)."""
        sql: str | None = None
        if kind == b"Q":
            sql = body.rstrip(b"\0").decode(errors="replace")
        elif kind == b"P":
            name, rest = body.split(b"\0", 1)
            query = rest.split(b"\0", 1)[0].decode(errors="replace")
            conn.statements[name.decode()] = query
        elif kind == b"B":
            parts = body.split(b"\0", 2)
            sql = conn.statements.get(parts[1].decode(errors="replace"))
        elif kind == b"S" and not conn.explicit and conn.in_tx:
            self._commit(conn)  # an implicit transaction ends at Sync
            return
        if sql is None:
            return
        text = sql.strip().rstrip(";").upper()
        if text.startswith("BEGIN") or text.startswith("START TRANSACTION"):
            conn.in_tx = []
            conn.explicit = True
        elif text.startswith("COMMIT"):
            self._commit(conn)
            conn.explicit = False
        elif text.startswith("ROLLBACK") and not text.startswith("ROLLBACK TO"):
            conn.in_tx = []
            conn.explicit = False
        else:
            for w in self.withholds:
                if w[0].search(sql) and w[1]():
                    self.withholds.remove(w)
                    conn.withheld, conn.late = True, w[2]
                    if not conn.late:
                        return
                    break
            conn.in_tx.append(sql)
            for hold in self.statement_holds:
                if hold[0].search(sql):
                    self.statement_holds.remove(hold)
                    conn.hold = hold[1]
                    break
            if kind == b"Q" and not conn.explicit:
                self._commit(conn)  # a simple query outside a transaction commits at once

    def _commit(self, conn: _Conn) -> None:
        ran = "\n".join(conn.in_tx)
        for trap in self.commit_traps:
            if trap[0].search(ran) and trap[1]():
                self.commit_traps.remove(trap)
                if trap[2]:
                    conn.hold = trap[2]
                else:
                    self.dropped.append(ran)
                    conn.doomed = True
                break
        conn.in_tx = []

    async def _server_to_client(self, conn: _Conn, reader: asyncio.StreamReader) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            if conn.sent_late and data[-6:-1] == b"Z\x00\x00\x00\x05":  # ReadyForQuery: the statement is over
                conn.sent_late = False
                self.late_answers += 1
            if conn.doomed:  # PostgreSQL answered the COMMIT: it is done; the client never hears
                conn.client.transport.abort()
                conn.server.transport.abort()
                return
            if conn.hold:  # PostgreSQL answered; the client hears it late (or at let_go)
                hold, conn.hold = conn.hold, 0.0
                held: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._held.add(held)
                try:
                    await asyncio.wait([held], timeout=hold)
                finally:
                    self._held.discard(held)
            await self._unless_hung()
            conn.client.write(data)
            await conn.client.drain()
