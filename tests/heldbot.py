"""A bot that makes no move of its own until the test says ``go``; bots that do not
declare until the test says so (:func:`no_declares`).

For tests that need something to happen between a turn coming to a bot and the bot's
move (the database cut, a page that must see the bot on turn): a think time raced the
test, and a busy machine lost the race (the test starved of CPU for longer than the
bot thought).  Only the seat's own turn is held; commits, reveals and joins go on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import service.bots
from service.bots import Bot


@dataclass
class HeldBot(Bot):
    go: asyncio.Event = field(default_factory=asyncio.Event)

    async def _maybe_act(self, view: dict[str, Any] | None, hand_no: int | None) -> None:
        if view and "me" in view and view.get("turn") == view["me"].get("seat"):
            await self.go.wait()
        await super()._maybe_act(view, hand_no)


def no_declares(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Until the returned ``release()``, every bot discards where it would declare.

    A bot's strategy declares at its first turn in about 1 deal of 100-110: the hand
    ends about half a second after the deal.  A test that needs the hand still going
    later (a person to sit down in it, a signal to arrive in it, the clock to drop a
    seat in it) holds the declares back, for the whole test or until ``release()``."""
    choose = service.bots.choose_from_view
    holding = [True]

    def no_declare(view: dict[str, Any], *, allow_drop: bool = True) -> dict[str, Any]:
        action = choose(view, allow_drop=allow_drop)
        if holding[0] and action["kind"] == "declare":
            return {"kind": "discard", "card": action["card"]}
        return action

    def release() -> None:
        holding[0] = False

    monkeypatch.setattr(service.bots, "choose_from_view", no_declare)
    return release
