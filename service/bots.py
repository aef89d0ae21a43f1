"""Bots that play over the real WebSocket with the strategy of verifier.strategy.

A bot is a normal player: it authenticates with its bearer token, joins a table,
sits, sends its seed commitment and reveal, and answers its turns.  Its view of the
hand is only what the server sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from verifier import strategy
from verifier.fairness import player_commit
from verifier.hand import HandState, Phase, Seat, Status, TableRules, action_to_json

log = logging.getLogger("rummy.bots")


@dataclass
class Bot:
    server: str  # http://host:port
    token: str
    table_id: str
    fast: bool = True
    seat: int | None = None
    player_id: str | None = None  # from the server's hello
    hands_seen: list[dict[str, Any]] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)  # every frame received (tests inspect them)
    keep_frames: bool = False
    max_hands: int | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    _n: int = 0
    _seed: bytes = b""
    _acting_on: tuple[int, int, str] | None = None
    _leaving: bool = False

    def _id(self) -> str:
        self._n += 1
        return f"m{self._n}"

    async def run(self, stop: asyncio.Event | None = None) -> None:
        url = self.server.rstrip("/") + "/ws"
        headers = {"Authorization": f"Bearer {self.token}"}
        async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=headers, heartbeat=20) as ws:
            self.ws = ws
            await self.send({"type": "join", "table_id": self.table_id})
            await self.send({"type": "sit", "table_id": self.table_id})
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                data = msg.json()
                if self.keep_frames:
                    self.frames.append(data)
                await self.on_message(data)
                if stop is not None and stop.is_set():
                    break
                if self.max_hands is not None and len(self.hands_seen) >= self.max_hands:
                    await self.send({"type": "leave", "table_id": self.table_id})
                    self.max_hands = None
                    self._leaving = True
                    continue
                if self._leaving and data.get("type") in ("reply", "error") and data.get("id") == f"m{self._n}":
                    break

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_json({"id": self._id(), **message})

    async def on_message(self, m: dict[str, Any]) -> None:
        t = m.get("type")
        if t == "hello":
            self.player_id = m.get("player_id")
        elif t == "reply" and isinstance(m.get("result"), dict) and "seat" in m["result"] and "table_id" in m["result"]:
            self.seat = m["result"]["seat"]
        elif t == "error":
            self.errors.append(m)
            log.info("bot got an error: %s", m.get("error"))
        elif t == "hand" and m.get("phase") == "commit":
            header = m["record"]["header"]
            seat = next((s["seat"] for s in header["seats"] if self._mine(s)), None)
            if seat is not None:
                self.seat = seat
                self._seed = secrets.token_bytes(32)
                await self.send(
                    {
                        "type": "commit",
                        "table_id": self.table_id,
                        "hand_no": m["hand_no"],
                        "commit": player_commit(seat, self._seed).hex(),
                    }
                )
        elif t == "hand" and m.get("phase") == "reveal":
            commits = {c["seat"]: c["commit"] for c in m["record"]["commitments"]["commits"]}
            if self.seat is not None and commits.get(self.seat):
                await self.send(
                    {"type": "reveal", "table_id": self.table_id, "hand_no": m["hand_no"], "seed": self._seed.hex()}
                )
        elif t == "update":
            await self.maybe_act(m)
        elif t == "result":
            self.hands_seen.append(m)

    def _mine(self, seat_entry: dict[str, Any]) -> bool:
        return self.seat is not None and seat_entry["seat"] == self.seat

    async def maybe_act(self, m: dict[str, Any]) -> None:
        view = m.get("view")
        if not view or view.get("phase") == "ended" or "me" not in view:
            return
        me = view["me"]
        if view["turn"] != me["seat"] or me["status"] != "playing":
            return
        key = (m["hand_no"], view["turn_no"], view["phase"])
        if self._acting_on == key:
            return
        self._acting_on = key
        if not self.fast:
            await asyncio.sleep(0.3 + secrets.randbelow(1200) / 1000)  # think time
        action = choose_from_view(view)
        await self.send({"type": "action", "table_id": self.table_id, "action": action})


def state_from_view(view: dict[str, Any]) -> HandState:
    """A HandState with only what the view shows (own cards, the open pile), for the
    strategy; the hidden parts stay empty."""
    rules = TableRules.from_json(view["rules"])
    me = view["me"]
    seats = tuple(
        Seat(s["seat"], s["player_id"], Status(s["status"]), tuple(me["cards"]), drawn_any=me["drawn_any"])
        if s["seat"] == me["seat"]
        else Seat(s["seat"], s["player_id"], Status(s["status"]))
        for s in view["seats"]
    )
    return HandState(
        rules=rules,
        seats=seats,
        dealer=view["dealer"],
        wild_indicator=view["wild_indicator"],
        closed=(),
        open=tuple(view["open"]),
        turn=view["turn"],
        phase=Phase(view["phase"]),
        turn_no=view["turn_no"],
    )


def choose_from_view(view: dict[str, Any]) -> dict[str, Any]:
    """The strategy's move (verifier.strategy.choose), as an action message."""
    action = action_to_json(strategy.choose(state_from_view(view), view["me"]["seat"]))
    del action["seat"]  # the server knows whose seat it is
    return action


async def create_bots(
    session: aiohttp.ClientSession,
    server: str,
    operator_token: str,
    table_id: str,
    count: int,
    *,
    deposit: int,
    fast: bool,
    hands: int | None,
) -> list[Bot]:
    """``count`` new bot players, each with a deposit, ready to join ``table_id``."""
    bots = []
    for n in range(count):
        async with session.post(
            f"{server.rstrip('/')}/api/players",
            json={"name": f"bot-{n + 1}", "deposit": deposit, "bot": True},
            headers={"Authorization": f"Bearer {operator_token}"},
        ) as r:
            body = await r.json()
            if r.status != 201:
                raise RuntimeError(f"could not create a bot player: {body}")
        bots.append(Bot(server, body["token"], table_id, fast=fast, max_hands=hands))
    return bots


async def play(bots: list[Bot], timeout: float | None = None) -> None:
    """Run the bots until each has played its hands (or forever), then stop them."""
    tasks = [asyncio.create_task(b.run()) for b in bots]
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), timeout)
    finally:
        for t in tasks:
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def run_bots(
    server: str, operator_token: str, table_id: str, count: int, *, fast: bool, deposit: int, hands: int | None = None
) -> list[Bot]:
    """Create ``count`` bot players (with a deposit each), seat them and play."""
    async with aiohttp.ClientSession() as session:
        bots = await create_bots(
            session, server, operator_token, table_id, count, deposit=deposit, fast=fast, hands=hands
        )
    await play(bots)
    return bots
