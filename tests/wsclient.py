"""A WebSocket test client: sends messages with ids, waits for their replies,
and keeps every frame it receives."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

import aiohttp


class Client:
    _ids = itertools.count(1)

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.frames: list[dict[str, Any]] = []
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._new = asyncio.Event()

    async def __aenter__(self) -> Client:
        self.session = aiohttp.ClientSession()
        self.ws = await self.session.ws_connect(self.base + "/ws", headers={"Authorization": f"Bearer {self.token}"})
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
            data = json.loads(msg.data)
            self.frames.append(data)
            self._new.set()
            fut = self._replies.get(str(data.get("id")))
            if fut is not None and not fut.done() and data.get("type") in ("reply", "error"):
                fut.set_result(data)

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
