"""Runs that SIGINT or SIGTERM interrupt cleanly: ``bots`` and ``demo``."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable

from service.errors import EXIT_INTERRUPTED

PROG = "rummy-table"


# ----------------------------------------------------------------------------- interruptible runs
class Interrupt:
    """Set by SIGINT/SIGTERM, which also cancel the run once (cleanup in ``finally``
    blocks runs to its end; a second signal is ignored)."""

    def __init__(self) -> None:
        self.signalled = False


def run_interruptible(main: Callable[[Interrupt], Awaitable[int]]) -> int:
    async def runner() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        state = Interrupt()

        def on_signal() -> None:
            if not state.signalled:
                state.signalled = True
                task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            return await main(state)
        except asyncio.CancelledError:
            if not state.signalled:
                raise
            task.uncancel()
            print(f"{PROG}: interrupted", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    return asyncio.run(runner())
