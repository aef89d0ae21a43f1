"""A bot that makes no move of its own until the test says ``go``.

For tests that need something to happen between a turn coming to a bot and the bot's
move (the database cut, a page that must see the bot on turn): a think time raced the
test, and a busy machine lost the race (the test starved of CPU for longer than the
bot thought).  Only the seat's own turn is held; commits, reveals and joins go on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from service.bots import Bot


@dataclass
class HeldBot(Bot):
    go: asyncio.Event = field(default_factory=asyncio.Event)

    async def _maybe_act(self, view: dict[str, Any] | None, hand_no: int | None) -> None:
        if view and "me" in view and view.get("turn") == view["me"].get("seat"):
            await self.go.wait()
        await super()._maybe_act(view, hand_no)
