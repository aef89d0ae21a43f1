"""A clock for the tables of a test's server (``Settings(clock=SkipClock())``): the
wall clock plus what the test has skipped.  A test that must let a turn, a seed
window or an outage pass skips it instead of sleeping through it; the tables see the
time go by as they would have, a beat at a time.  ``SkipClock(wall=False)`` stands
still but for what is skipped: time is the test's input alone, and a machine kept
busy by other work cannot make a gap between two steps look to the table like a node
that stood still (D37, ``freeze_ms``: every grace starts again), for a test that
skips a long grace (D34's ``away_ms``) and needs nothing else to wait for time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable

from service.app import CONFIG, POOL, TABLES
from service.startup import Running
from service.table import TableActor
from service.tablecore import io


class SkipClock:
    def __init__(self, skipped: float = 0.0, *, wall: bool = True) -> None:
        self.skipped = skipped
        self.still = None if wall else time.time()

    def __call__(self) -> float:
        return (time.time() if self.still is None else self.still) + self.skipped

    async def skip(
        self,
        tables: Iterable[TableActor],
        seconds: float,
        *,
        step: float = 0.5,
        until: Callable[[], bool] | None = None,
        bound: float = 30.0,
        store_answers: bool = True,
    ) -> float:
        """Move the clock ``seconds`` on, ``step`` at a time (under a beat, so that no
        table takes the jump for a node that stood still: D37), ticking each running
        table after each step and waiting until it has stepped at that time; stop
        early once ``until()`` holds.  Returns the seconds skipped.  ``bound`` (real
        seconds a step may take) only catches a hang.
        ``store_answers``: before each step, and at the end, each table's write in
        flight has been answered: the store is as quick as the time skipped.  Else a
        write 60 ms slow on a busy machine is, to a clock skipped 2 s in four quick
        steps, a hung store (D37), and when it answers every grace starts again (a busy
        run saw D34's stand-up come 120 s late so).  False for a test whose store is
        down or hangs on purpose, for the table to find it so."""
        actors = list(tables)

        def running() -> list[TableActor]:
            return [a for a in actors if a.task is not None and not a.task.done() and not a.core.gone]

        async def answered() -> None:
            async with asyncio.timeout(bound):
                while store_answers and any(a.core.pending is not None for a in running()):
                    await asyncio.sleep(0.01)

        done = 0.0
        while done < seconds and not (until is not None and until()):
            await answered()
            d = min(step, seconds - done)
            # a step lands on the next wake a table asked for, as the shell's timer would:
            # one past it by more than a beat's slack is a stall of the node (D37)
            now_ms = int(self() * 1000)
            asked = [a.core.armed for a in running() if a.core.armed is not None and a.core.armed > now_ms]
            if asked:
                d = min(d, (min(asked) - now_ms + 1) / 1000)
            self.skipped += d
            done += d
            target = int(self() * 1000)
            for a in running():
                a.inputs.put_nowait(io.Tick())
            async with asyncio.timeout(bound):
                # each table has stepped at that time of its clock (its own time may run ahead: D37)
                while not all((a.core.last_now or 0) - a.core.skew >= target for a in running()):
                    await asyncio.sleep(0.01)
            if until is not None:
                await asyncio.sleep(0.05)  # what the step told the clients arrives
        await answered()
        return done


async def clocked(server: Running, table: str, clock: SkipClock | None = None) -> tuple[TableActor, SkipClock]:
    """``table`` served again, on the same rows, by a task whose clock the test skips
    ahead (the path a restart takes: tests/test_recovery.py, restart_table)."""
    clock = clock or SkipClock()
    old: TableActor = server.app[TABLES][table]
    await old.stop()
    config = server.app[CONFIG]
    new = TableActor(table, server.app[POOL], config.keys, config.settings, clock=clock)
    new.start()
    server.app[TABLES][table] = new
    await asyncio.wait_for(new.loaded.wait(), 30)
    return new, clock


def skip_clock(server: Running) -> SkipClock:
    """The clock of ``server``'s tables, which the test skips (the server was started
    with ``Settings(clock=SkipClock())``, as tests/test_recovery.py's ``proxied``)."""
    clock = server.app[CONFIG].settings.clock
    assert isinstance(clock, SkipClock)
    return clock
