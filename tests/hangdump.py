"""What a hung test was awaiting: shortly before pytest-timeout stops a test, every
asyncio task of the loop running it is written to stderr, and the await chains of the
test's own tasks.

pytest-timeout prints the threads' stacks, and a test on the suite's one event loop
shows only the loop's ``select()`` there: the coroutine that waits for ever is a task's
frame, not a thread's.  A timer thread sends SIGUSR2 to the process ``LEAD`` seconds
before the test's bound (a quarter of a shorter one); Python runs the handler in the
main thread (the signal wakes the loop's ``select()``), where the running loop and its
tasks are at hand.  Diagnostics only: nothing is changed, and
a test that ends first cancels its timer."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

#: seconds before the test's timeout at which its tasks are written out (a quarter of a
#: shorter bound)
LEAD = 15.0


def _chain(task: asyncio.Task[object]) -> list[str]:
    """Where the task waits: its coroutine and each one it awaits in turn (a
    suspended coroutine's frame has no ``f_back``; the chain is ``cr_await``)."""
    out: list[str] = []
    awaited: object = task.get_coro()
    while awaited is not None and len(out) < 40:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:  # a future, a task, or a coroutine of C code: named, not walked
            out.append(f"  awaiting {awaited!r}"[:400])
            break
        out.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return out


def _dump(test_file: str) -> None:
    """Every task of the running loop, one line each, then the test's own tasks (its
    coroutine in ``test_file``) with their await chains: written last, nearest the end
    of the report, which a CI log may cut from the top."""
    loop = asyncio._get_running_loop()
    out = sys.stderr
    if loop is None:
        print("hangdump: no event loop running in the main thread", file=out)
        return
    chains = {task.get_name(): _chain(task) for task in asyncio.all_tasks(loop)}
    print(f"hangdump: {len(chains)} asyncio tasks on the test's loop", file=out)
    for name, chain in sorted(chains.items()):
        print(f"- {name}: " + " <- ".join(line.strip() for line in chain[:3]), file=out)
    for name, chain in sorted(chains.items()):
        if any(line.strip().startswith(test_file) for line in chain):
            print(f"hangdump: the test's task {name}, awaiting (outermost first):", file=out)
            print("\n".join(chain), file=out)
    out.flush()


def _bound(item: pytest.Item) -> float | None:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    value = item.config.getini("timeout")
    return float(value) if value else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    bound = _bound(item)
    if not bound or threading.current_thread() is not threading.main_thread():
        return (yield)
    test_file = str(item.path)
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: _dump(test_file))
    timer = threading.Timer(bound - min(LEAD, bound / 4), os.kill, (os.getpid(), signal.SIGUSR2))
    timer.daemon = True
    timer.start()
    try:
        return (yield)
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR2, previous)
