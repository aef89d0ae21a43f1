"""The loop's stall meter (service/stallmeter.py): what it counts, and that a real
stall of the loop is counted."""

from __future__ import annotations

import asyncio
import time

from service.stallmeter import KEPT_SECONDS, SLACK_SECONDS, StallMeter


def test_a_late_wake_is_a_stall_and_the_longest_since_a_moment_is_told() -> None:
    m = StallMeter()
    m.note(10.0, 10.0 + SLACK_SECONDS / 2)  # jitter: nothing
    assert m.longest_since(0.0) == 0.0
    m.note(20.0, 21.5)
    m.note(30.0, 30.4)
    assert m.longest_since(0.0) == 1.5
    assert abs(m.longest_since(21.5) - 0.4) < 1e-9  # the 1.5 s one ended at 21.5, not after
    assert m.longest_since(30.4) == 0.0
    m.note(30.0 + KEPT_SECONDS + 1, 30.0 + KEPT_SECONDS + 1)  # the old ones are forgotten
    assert m.longest_since(0.0) == 0.0


async def test_a_loop_held_still_is_counted() -> None:
    loop = asyncio.get_running_loop()
    m = StallMeter()
    task = asyncio.create_task(m.run(loop))
    try:
        await asyncio.sleep(0.25)
        before = loop.time()
        time.sleep(0.6)
        await asyncio.sleep(0.25)
        assert m.longest_since(before) >= 0.45
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
