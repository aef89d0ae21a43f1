"""A table's inbox (service/inbox.py): first in, first out; a wait ends at the first
item or at its deadline; nothing is lost when the reader is cancelled; and the idle
tables of a server wake a slot at a time on the beat's grid (service/table.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from service.app import CONFIG, TABLES
from service.inbox import TIMEOUT, Inbox
from service.startup import Running
from service.table import BEAT_SLOTS, beat_offset
from tests.conftest import Api


async def test_items_come_out_in_the_order_they_went_in() -> None:
    box: Inbox[int] = Inbox()
    for i in range(5):
        box.put_nowait(i)
    assert len(box) == 5
    assert [await box.get(0) for _ in range(5)] == [0, 1, 2, 3, 4]
    assert len(box) == 0


async def test_a_wait_ends_at_its_deadline_with_timeout_when_nothing_comes() -> None:
    box: Inbox[str] = Inbox()
    assert await box.get(0) is TIMEOUT
    assert await box.get(0.01) is TIMEOUT


async def test_an_item_put_while_the_reader_waits_wakes_it_before_the_deadline() -> None:
    box: Inbox[str] = Inbox()
    reader = asyncio.ensure_future(box.get(3600))
    await asyncio.sleep(0)
    assert not reader.done()
    box.put_nowait("move")
    # a bound only a hang reaches: the deadline is an hour away
    assert await asyncio.wait_for(reader, 30) == "move"


async def test_a_cancelled_reader_loses_nothing_and_the_next_reader_gets_it() -> None:
    box: Inbox[str] = Inbox()
    reader = asyncio.ensure_future(box.get(3600))
    await asyncio.sleep(0)
    reader.cancel()
    box.put_nowait("kept")  # put as the cancellation lands: the item stays
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert await box.get(0) == "kept"


async def test_two_readers_at_once_is_a_mistake_said_at_once() -> None:
    box: Inbox[str] = Inbox()
    first = asyncio.ensure_future(box.get(3600))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="one reader"):
        await box.get(1)
    box.put_nowait("x")
    assert await first == "x"


async def test_idle_tables_beat_on_one_grid(server: Running, api: Api) -> None:
    """Each table's task beats at least once a ``beat_seconds``; a server's idle tables
    wake a slot at a time, not each on its own (200 idle tables cost 7.6 % of a core
    before, about 1 % after: docs/benchmarks.md).  Every wait of an idle table ends on
    the loop clock's grid of ``beat_seconds``, shifted by its slot, at most one beat
    away."""
    beat = server.app[CONFIG].settings.beat_seconds
    loop = asyncio.get_running_loop()
    dues: dict[str, list[tuple[float, float]]] = {}
    spied: list[Any] = []
    # the loop clock's last reading: the one the table's wait was counted from (read
    # again in the spy, a process preempted between the two readings, as a busy
    # machine's is, put the wait that much off the grid)
    read = [0.0]
    clock, own = loop.time, vars(loop).get("time")

    def reading() -> float:
        read[0] = clock()
        return read[0]

    loop.time = reading  # type: ignore[method-assign]
    for _ in range(3):
        table_id = await api.table(seats=4)
        actor = server.app[TABLES][table_id]
        await asyncio.wait_for(actor.loaded.wait(), 30)
        real = actor.inputs.get
        seen: list[tuple[float, float]] = []
        dues[table_id] = seen

        async def spy(timeout: float, real: Any = real, seen: list[tuple[float, float]] = seen) -> Any:
            seen.append((timeout, read[0] + timeout))
            return await real(timeout)

        actor.inputs.get = spy
        spied.append(actor)
    try:
        # a bound only a hang reaches: each idle table waits again within a beat
        async with asyncio.timeout(60):
            while not all(len(waits) >= 3 for waits in dues.values()):
                await asyncio.sleep(0.1)
    finally:
        for actor in spied:
            del actor.inputs.get  # the class's own again
        if own is None:
            del loop.time  # the class's own again
        else:
            loop.time = own  # type: ignore[method-assign]
    for table_id, waits in dues.items():
        for timeout, due in waits:
            off = (due - beat_offset(table_id, beat)) % beat
            assert 0 <= timeout <= beat and min(off, beat - off) < 1e-3, (table_id, waits)


def test_the_tables_spread_over_the_beats_slots() -> None:
    beat = 1.0
    offsets = [beat_offset(f"t{i}", beat) for i in range(400)]
    slots = {round(o * BEAT_SLOTS / beat) for o in offsets}
    assert slots == set(range(BEAT_SLOTS))
    assert all(0 <= o < beat for o in offsets)
