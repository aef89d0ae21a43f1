"""The replies a connection remembers for repeated message ids (:mod:`service.replies`):
each bound (count, characters, age after the answer or after the sending) with the
clock as an input."""

from __future__ import annotations

import asyncio
from typing import Any

from service.replies import REPLY_BYTES, REPLY_SECONDS, SENT_SECONDS, SWEEP_SECONDS, ReplyMemory, sweep_every


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def answered(memory: ReplyMemory, msg_id: str, text: str) -> asyncio.Future[dict[str, Any]]:
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    memory.remember(msg_id, fut, lambda: text)
    fut.set_result({"ok": True})
    return fut


async def settle() -> None:
    await asyncio.sleep(0)  # a future's done callbacks run on the loop's next turn


async def test_a_reply_is_the_future_until_answered_then_its_text_built_once() -> None:
    clock = Clock()
    memory = ReplyMemory(clock)
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    built: list[int] = []

    def text() -> str:
        built.append(1)
        return "the reply"

    memory.remember("m1", fut, text)
    pending = memory.recall("m1")
    assert pending is not None and pending.future is fut and pending.text is None and memory.bytes == 0
    fut.set_result({"ok": True})
    await settle()
    kept = memory.recall("m1")
    assert kept is not None and kept.future is None and kept.text == "the reply" and built == [1]
    assert memory.bytes == len("the reply") and memory.recall("m2") is None


async def test_an_answered_reply_is_forgotten_its_seconds_after_the_answer() -> None:
    clock = Clock()
    memory = ReplyMemory(clock)
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    memory.remember("slow", fut, lambda: "late answer")
    clock.t += 10 * REPLY_SECONDS  # a table that takes long: the pending reply is kept
    assert memory.recall("slow") is not None
    fut.set_result({})
    await settle()
    clock.t += REPLY_SECONDS - 0.001  # counted from the answer, not from the message
    assert memory.recall("slow") is not None and memory.recall("slow").text == "late answer"  # type: ignore[union-attr]
    clock.t += 0.001
    assert memory.recall("slow") is None and memory.bytes == 0 and len(memory) == 0


async def test_the_count_and_the_characters_are_bounds_oldest_first() -> None:
    clock = Clock()
    memory = ReplyMemory(clock, count=3)
    for n in range(5):
        answered(memory, f"m{n}", "x" * 10)
    await settle()
    assert [m for m in ("m0", "m1", "m2", "m3", "m4") if memory.recall(m)] == ["m2", "m3", "m4"]
    assert memory.bytes == 30
    big = ReplyMemory(clock)
    part = REPLY_BYTES // 4
    for n in range(6):
        answered(big, f"m{n}", "y" * part)
        await settle()
        assert big.bytes <= REPLY_BYTES
    assert [m for m in (f"m{n}" for n in range(6)) if big.recall(m)] == ["m2", "m3", "m4", "m5"]


async def test_an_id_remembered_again_replaces_the_old_reply() -> None:
    memory = ReplyMemory(Clock())
    answered(memory, "m", "first")
    await settle()
    answered(memory, "m", "second, longer")
    await settle()
    again = memory.recall("m")
    assert again is not None and again.text == "second, longer" and memory.bytes == len("second, longer")
    memory.clear()
    assert memory.recall("m") is None and memory.bytes == 0


async def test_a_sent_reply_is_kept_its_sent_seconds_from_the_sending() -> None:
    clock = Clock()
    memory = ReplyMemory(clock)
    answered(memory, "m", "sent a second after its answer")
    await settle()
    clock.t += 1
    memory.delivered("m")
    kept = memory.recall("m")
    assert kept is not None and kept.sent and kept.until == clock.t + SENT_SECONDS < clock.t - 1 + REPLY_SECONDS
    clock.t += SENT_SECONDS - 0.001
    assert memory.recall("m") is not None
    clock.t += 0.001
    assert memory.recall("m") is None and memory.bytes == 0 and len(memory) == 0
    memory.delivered("m")  # forgotten: nothing to mark, nothing made
    assert len(memory) == 0


async def test_a_reply_sent_as_it_is_answered_is_kept_its_sent_seconds_from_the_answer() -> None:
    """The table sends its reply and answers the future in one step; the memory hears
    of the sending first or second, and keeps the reply its sent seconds either way."""
    for sent_first in (True, False):
        clock = Clock()
        memory = ReplyMemory(clock)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        memory.remember("m", fut, lambda: "answer")
        if sent_first:
            memory.delivered("m")
            clock.t += 10 * REPLY_SECONDS  # still pending: never forgotten for its age
            assert memory.recall("m") is not None
        fut.set_result({})
        await settle()
        if not sent_first:
            memory.delivered("m")
        kept = memory.recall("m")
        assert kept is not None and kept.text == "answer" and kept.until == clock.t + SENT_SECONDS, sent_first


async def test_sending_never_keeps_a_reply_longer() -> None:
    clock = Clock()
    memory = ReplyMemory(clock)
    answered(memory, "m", "told busy, asked again late")
    await settle()
    answer_until = clock.t + REPLY_SECONDS
    clock.t += REPLY_SECONDS - 1
    memory.delivered("m")
    kept = memory.recall("m")
    assert kept is not None and kept.until == answer_until
    clock.t += 1
    assert memory.recall("m") is None


async def test_the_sweep_trims_every_memory_after_each_wait() -> None:
    """A connection that sends nothing more still forgets its replies on time."""
    clock = Clock()
    quiet, other = ReplyMemory(clock), ReplyMemory(clock)
    answered(quiet, "m", "a turn's reply")
    answered(other, "n", "another's")
    await settle()
    quiet.delivered("m")
    waits: list[float] = []
    woke = asyncio.Event()
    proceed = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        woke.set()
        await proceed.wait()
        proceed.clear()

    task = asyncio.create_task(sweep_every(SWEEP_SECONDS, lambda: [quiet, other], sleep))
    try:
        await woke.wait()
        woke.clear()
        clock.t += SENT_SECONDS  # the sent one's time is up, not the other's
        proceed.set()
        await woke.wait()
        assert len(quiet) == 0 and quiet.bytes == 0 and len(other) == 1
        woke.clear()
        clock.t += REPLY_SECONDS
        proceed.set()
        await woke.wait()
        assert len(other) == 0 and waits == [SWEEP_SECONDS] * 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
