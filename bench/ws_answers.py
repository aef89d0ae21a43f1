"""What telling a socket's answer through ``service.api_ws.Answers`` costs, against
awaiting it in the reader as before ``4af887f`` (docs/benchmarks.md, "A socket's
answers told in order per table").

    python -m bench.ws_answers [--messages 50000] [--rounds 2]

Each message's answer is a future the loop answers one turn after it is asked (as a
table answers a move), and the reader then turns the loop three times more (reading
the next frame); the two ways are alternated in one process and timed with
``time.process_time()``, microseconds of CPU a message.  The difference is what the
task a message costs; it prints the load average beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from service.api_ws import Answers, _wait_telling


class _Quiet:
    """A connection that drops what it is told (``waiting`` never comes here)."""

    def push(self, message: dict[str, Any]) -> None:
        pass


async def _reader_turns() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def awaited(n: int) -> None:
    loop, conn = asyncio.get_running_loop(), _Quiet()
    for _ in range(n):
        answer = loop.create_future()
        loop.call_soon(answer.set_result, {"ok": True})
        await _wait_telling(conn, "m", answer, 30.0)  # type: ignore[arg-type]
        await _reader_turns()


async def through_answers(n: int) -> None:
    loop, conn, answers = asyncio.get_running_loop(), _Quiet(), Answers()
    for _ in range(n):
        await answers.room()
        answer = loop.create_future()
        loop.call_soon(answer.set_result, {"ok": True})

        async def tell(answer: asyncio.Future[Any] = answer) -> None:
            await _wait_telling(conn, "m", answer, 30.0)  # type: ignore[arg-type]

        answers.after("t", tell)
        await _reader_turns()
    await answers.close()


async def main(messages: int, rounds: int) -> None:
    ways: list[tuple[str, Callable[[int], Awaitable[None]]]] = [
        ("awaited in the reader", awaited),
        ("through Answers", through_answers),
    ]
    print(f"load {os.getloadavg()[0]:.2f}; {messages} messages a way a round")
    for r in range(1, rounds + 1):
        for name, way in ways:
            t0 = time.process_time()
            await way(messages)
            us = (time.process_time() - t0) / messages * 1e6
            print(f"round {r}: {name}: {us:.1f} µs of CPU a message")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    asyncio.run(main(args.messages, args.rounds))
