"""A background task for as long as a block runs (an application's ``cleanup_ctx``:
the reply sweep, the memory trim, the stall meter)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


@contextlib.asynccontextmanager
async def running(coro: Coroutine[Any, Any, object], name: str) -> AsyncIterator[asyncio.Task[object]]:
    """``coro`` as a task named ``name`` until the block ends; then cancelled, and
    waited for."""
    task = asyncio.create_task(coro, name=name)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
