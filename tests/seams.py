"""Helpers of the seams audits (tests/test_audit_seams_db_hang*.py): a player whose
way back to the table a database hang holds (its new socket's handshake looks its
token up), and the sockets such a test opens and must close whatever happens."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any

from tests.conftest import wait_for
from tests.pgproxy import PgProxy
from tests.wsclient import Client
from verifier.fairness import player_commit


class Sockets:
    """The sockets a test opens (``open``), and the one new socket of a player that a
    database hang may hold (``reconnect``, then ``through`` once it gets through).
    Leaving the ``async with`` is the tear-down: the hang let go if it still holds
    that socket, then every socket closed (closing one already closed does nothing)."""

    def __init__(self, proxy: PgProxy) -> None:
        self.proxy = proxy
        self.opened: list[Client] = []
        self.held: asyncio.Task[Client] | None = None

    async def __aenter__(self) -> Sockets:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.held is not None:
            self.proxy.let_go()
            with contextlib.suppress(Exception):
                self.opened.append(await asyncio.wait_for(self.held, 60))
        for c in self.opened:
            with contextlib.suppress(Exception):
                await c.__aexit__(None, None, None)

    async def open(self, base: str, player: dict[str, Any], *, table: str | None = None) -> Client:
        """A socket of ``player``'s, open."""
        c = await Client(base, player["token"], player["signer"], table=table).__aenter__()
        self.opened.append(c)
        return c

    def reconnect(self, base: str, player: dict[str, Any], *, table: str | None = None) -> asyncio.Task[Client]:
        """The player opens a new socket: its handshake, under way."""
        self.held = asyncio.create_task(Client(base, player["token"], player["signer"], table=table).__aenter__())
        return self.held

    async def held_by_the_hang(self, base: str, player: dict[str, Any]) -> asyncio.Task[Client]:
        """The player opens a new socket while PostgreSQL hangs: its handshake waits on
        the proxy (its token's lookup)."""
        reconnect = self.reconnect(base, player)
        await wait_for(lambda: self.proxy.holding > 0, timeout=30)
        return reconnect

    async def through(self) -> Client:
        """The new socket, once its handshake has got through (within 60 s)."""
        assert self.held is not None
        back = await asyncio.wait_for(self.held, 60)
        self.held = None
        self.opened.append(back)
        return back


async def hang_ends(proxy: PgProxy, watcher: Client) -> None:
    """PostgreSQL answers again; the table tells ``watcher`` ``resumed``."""
    proxy.let_go()
    await watcher.wait_frame(lambda f: f.get("type") == "resumed", timeout=30)


async def to_the_reveal(ca: Client, cb: Client) -> tuple[int, dict[Client, tuple[int, bytes]], dict[str, Any]]:
    """Both seated players commit their seeds (:func:`both_commit`) and ``ca`` reveals
    its own.  The hand's number, each player's (seat, seed), and the reveal phase's
    frame as ``ca`` got it."""
    hand_no, seeds, frame = await both_commit(ca, cb)
    assert (await ca.reveal(frame["record"], *seeds[ca]))["type"] == "reply"
    return hand_no, seeds, frame


async def both_commit(ca: Client, cb: Client) -> tuple[int, dict[Client, tuple[int, bytes]], dict[str, Any]]:
    """Both seated players commit their seeds (seat ``s``'s seed: 32 bytes of ``s +
    1``).  The hand's number, each player's (seat, seed), and the reveal phase's frame
    as ``ca`` got it."""
    seeds: dict[Client, tuple[int, bytes]] = {}
    hand_no = 0
    for sitter in (ca, cb):
        frame = await sitter.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        hand_no = int(frame["hand_no"])
        seat = sitter.seat_in(frame["record"])
        seeds[sitter] = (seat, bytes([seat + 1]) * 32)
        assert (await sitter.commit(frame["record"], player_commit(seat, seeds[sitter][1])))["type"] == "reply"
    frame = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal")
    return hand_no, seeds, frame
