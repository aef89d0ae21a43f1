"""A WebSocket test client: sends messages with ids, waits for their replies, keeps
every frame it receives, and signs its moves with its player key (rummy-pf/v2).

Slim pushes (docs/api.md): an ``update`` carries the view's ``changes`` and the head's
signature; the client keeps each table's view and adds to every update frame it keeps
the whole ``view`` those changes make (None after a gap) and the signed ``head`` item
its fields make, so tests read updates as before.  The mover's update comes inside the
reply to its move: it is kept as a frame of its own (``"via": "reply"``) before the
reply."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

import aiohttp

from service import views
from verifier.chain import commit_move, move_body, reveal_move
from verifier.fairness import PROTOCOL_V2
from verifier.signing import Signer


class Client:
    _ids = itertools.count(1)

    def __init__(self, base: str, token: str, signer: Signer | None = None, *, table: str | None = None) -> None:
        """``table``: open ``/ws?table=ID``, which a server of several workers hands to
        the worker that serves that table (docs/api.md)."""
        self.base, self.token, self.signer = base, token, signer
        self.path = "/ws" if table is None else f"/ws?table={table}"
        self.frames: list[dict[str, Any]] = []
        self.texts: list[str] = []  # every text the server sent, as it came
        self.views: dict[str, tuple[int, int, dict[str, Any] | None]] = {}  # table -> (hand_no, i, view)
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._new = asyncio.Event()

    async def __aenter__(self) -> Client:
        self.session = aiohttp.ClientSession()
        try:
            self.ws = await self.session.ws_connect(
                self.base + self.path, headers={"Authorization": f"Bearer {self.token}"}
            )
        except BaseException:
            # A refused handshake must not leave its session to the garbage collector:
            # its ResourceWarning would fail whichever test runs when it is collected.
            await self.session.close()
            raise
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self.session.close()

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            self.texts.append(msg.data)
            data = json.loads(msg.data)
            if isinstance(data.get("update"), dict):
                self.frames.append({**self._materialise(data["update"]), "via": "reply"})
            elif data.get("type") == "update":
                data = self._materialise(data)
            self._snapshot(data)
            self.frames.append(data)
            self._new.set()
            fut = self._replies.get(str(data.get("id")))
            if fut is not None and not fut.done() and data.get("type") in ("reply", "error"):
                fut.set_result(data)

    def _materialise(self, u: dict[str, Any]) -> dict[str, Any]:
        """An update as the full-view pushes were: with ``view`` and ``head``."""
        table = str(u["table_id"])
        out = dict(u)
        out["head"] = {
            "purpose": "head",
            "body": {"table_id": table, "hand_no": u["hand_no"], "i": u["i"], "h": u["h"]},
            "sig": u["head_sig"],
        }
        if "view" in u:
            view = u["view"]
        else:
            hand_no, i, base = self.views.get(table, (None, None, None))
            if base is not None and hand_no == u["hand_no"] and i is not None and i >= u["i"]:
                out["view"] = base  # a snapshot already held this record
                return out
            ok = base is not None and hand_no == u["hand_no"] and i == u["i"] - 1
            view = views.apply(base, u["changes"]) if ok and base is not None else None
            out["view"] = view
        self.views[table] = (u["hand_no"], u["i"], view)
        return out

    def _snapshot(self, data: dict[str, Any]) -> None:
        """A snapshot (the reply to a join, or in ``resumed``) resets the view kept."""
        snap = data.get("snapshot") if data.get("type") == "resumed" else data.get("result")
        if not isinstance(snap, dict) or "table_id" not in snap or "hand" not in snap:
            return
        hand = snap["hand"]
        if hand is None:
            self.views.pop(str(snap["table_id"]), None)
        else:
            self.views[str(snap["table_id"])] = (hand["hand_no"], hand["i"], hand.get("view"))

    async def send_raw(self, text: str) -> None:
        await self.ws.send_str(text)

    async def request(self, message: dict[str, Any], msg_id: str | None = None, timeout: float = 15) -> dict[str, Any]:
        msg_id = msg_id or f"c{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[msg_id] = fut
        await self.ws.send_str(json.dumps({"id": msg_id, **message}))
        return await asyncio.wait_for(fut, timeout)

    async def wait_frame(self, pred: Any, timeout: float = 20, start: int = 0) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        seen = start
        while True:
            for f in self.frames[seen:]:
                if pred(f):
                    return f
            seen = len(self.frames)
            self._new.clear()
            left = end - loop.time()
            if left <= 0:
                raise AssertionError(f"no such frame; last frames: {self.frames[-3:]}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._new.wait(), left)

    # -- signed moves (docs/fairness.md §9) ------------------------------------------
    @property
    def player_id(self) -> str:
        return str(next(f for f in self.frames if f.get("type") == "hello")["player_id"])

    def head(self) -> str:
        """The newest record link this client was sent."""
        for f in reversed(self.frames):
            if f.get("type") in ("update", "hand") and isinstance(f.get("head"), dict):
                return str(f["head"]["body"]["h"])
            if f.get("type") == "reply" and isinstance(f.get("result"), dict) and "hand" in f["result"]:
                hand = f["result"]["hand"]
                if hand:
                    return str(hand["h"])
        raise AssertionError("no record seen yet")

    def sign(self, table_id: str, hand_no: int, prev: str, move: dict[str, Any]) -> str:
        assert self.signer is not None, "this client has no player key"
        return self.signer.sign("move", move_body(table_id, hand_no, prev, move), PROTOCOL_V2)

    def seat_in(self, header_record: dict[str, Any]) -> int:
        return int(next(s["seat"] for s in header_record["header"]["seats"] if s["player_id"] == self.player_id))

    async def commit(self, header_record: dict[str, Any], commit: bytes) -> dict[str, Any]:
        h = header_record["header"]
        seat = self.seat_in(header_record)
        sig = self.sign(h["table_id"], h["hand_no"], header_record["h"], commit_move(seat, commit))
        return await self.request(
            {"type": "commit", "table_id": h["table_id"], "hand_no": h["hand_no"], "commit": commit.hex(), "sig": sig}
        )

    async def reveal(self, commitments_record: dict[str, Any], seat: int, seed: bytes) -> dict[str, Any]:
        c = commitments_record["commitments"]
        sig = self.sign(c["table_id"], c["hand_no"], commitments_record["h"], reveal_move(seat, seed))
        return await self.request(
            {"type": "reveal", "table_id": c["table_id"], "hand_no": c["hand_no"], "seed": seed.hex(), "sig": sig}
        )

    async def act(
        self,
        table_id: str,
        hand_no: int,
        seat: int,
        action: dict[str, Any],
        prev: str | None = None,
        timeout: float = 15,
    ) -> dict[str, Any]:
        prev = prev or self.head()
        sig = self.sign(table_id, hand_no, prev, {**action, "seat": seat})
        return await self.request(
            {"type": "action", "table_id": table_id, "hand_no": hand_no, "action": action, "prev": prev, "sig": sig},
            timeout=timeout,
        )

    async def leave(self, table_id: str, hand_no: int | None = None, seat: int | None = None) -> dict[str, Any]:
        msg: dict[str, Any] = {"type": "leave", "table_id": table_id}
        if hand_no is not None and seat is not None:
            prev = self.head()
            sig = self.sign(table_id, hand_no, prev, {"kind": "leave", "seat": seat})
            msg.update(hand_no=hand_no, prev=prev, sig=sig)
        return await self.request(msg)
