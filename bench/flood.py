"""What a few flooding sockets cost everyone else (service.pace).

    python bench/flood.py                          # 4 tables, 4 flooding sockets of pings
    python bench/flood.py --kind move --flooders 8

One server in this process with the load client of ``bench/action_profile.py`` playing
``--tables`` six-seat tables as fast as they are acknowledged (the honest players).  A
second process, at the lowest CPU priority (``nice 19``, so that on a small machine it
takes no CPU the server, PostgreSQL or the honest client would use), opens
``--flooders`` sockets of authenticated players joined to a table of their own, and
sends on each, without waiting for answers, ``ping`` frames or (``--kind move``)
actions whose signature does not verify.  Windows, in this order:

- ``quiet``: no flood;
- ``flood, paced``: the server as configured (``Config.message_rate``, ``message_burst``);
- ``flood, unpaced``: the same server with the pace lifted (a rate and a burst of a
  billion), as every socket was read before service.pace;
- ``quiet`` again.

With ``--kind rest`` each flooding player sends four ``GET /api/me/hands`` at a time
instead (REST is not paced: both flood windows are the same).  Each window prints the
honest tables' stored actions a second, the server's CPU (this process: the server's
threads, not the clients', not PostgreSQL's) as a share of a core, the flood's frames
(or responses) answered a second, how long a new socket of another player took from
its upgrade request to the server's hello (one every half second, from this process),
and the machine's load.  The figures move
with the machine's load: compare the windows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the tree of PYTHONPATH wins, else this one
    here = str(Path(__file__).resolve().parent.parent)
    if here not in sys.path:
        sys.path.append(here)

import aiohttp

from bench.action_profile import OPERATOR, Client, actions_stored, bench_server
from service.appkeys import CONFIG


async def _rest(url: str, token: str, answered: Any) -> None:
    """Four requests at a time, each sent as the last is answered: ``GET /api/me/hands``."""
    async with aiohttp.ClientSession() as s:

        async def one_after_another() -> None:
            while True:
                async with s.get(f"{url}/api/me/hands", headers={"Authorization": f"Bearer {token}"}) as r:
                    await r.read()
                with answered.get_lock():
                    answered.value += 1

        await asyncio.gather(*(one_after_another() for _ in range(4)))


async def _flood(url: str, token: str, table_id: str, kind: str, answered: Any) -> None:
    if kind == "rest":
        await _rest(url, token, answered)
        return
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(
            f"{url}/ws?table={table_id}", headers={"Authorization": f"Bearer {token}"}, max_msg_size=1 << 20
        ) as ws,
    ):
        await ws.send_str(json.dumps({"id": "j", "type": "join", "table_id": table_id}))

        async def read() -> None:
            async for _ in ws:
                with answered.get_lock():
                    answered.value += 1

        reader = asyncio.create_task(read())
        n = 0
        while not reader.done():
            for _ in range(50):
                n += 1
                msg: dict[str, Any] = {"id": f"f{n}", "type": "ping"}
                if kind == "join":  # a snapshot of the table each time
                    msg.update(type="join", table_id=table_id)
                elif kind == "move":
                    msg.update(
                        type="action",
                        table_id=table_id,
                        hand_no=1,
                        action={"kind": "draw_closed"},
                        prev="0" * 64,
                        sig="0" * 128,
                    )
                await ws.send_str(json.dumps(msg))
            await asyncio.sleep(0)


def flood_main(url: str, tokens: list[str], table_id: str, kind: str, answered: Any) -> None:
    os.nice(19)

    async def every() -> None:
        await asyncio.gather(*(_flood(url, t, table_id, kind, answered) for t in tokens))

    asyncio.run(every())


async def handshakes(url: str, token: str, seconds: float) -> list[float]:
    """A new socket every half second for ``seconds``: ms from the upgrade's request
    to the server's hello (a player coming back to its table meets this)."""
    took: list[float] = []
    end = time.monotonic() + seconds
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < end:
            t0 = time.monotonic()
            async with s.ws_connect(f"{url}/ws", headers={"Authorization": f"Bearer {token}"}) as ws:
                await ws.receive(timeout=60)
                took.append(1000 * (time.monotonic() - t0))
            await asyncio.sleep(0.5)
    return took


async def run(args: argparse.Namespace) -> None:
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="flood-") as tmp:
        running = await bench_server(Path(tmp) / "data", None)
        client = Client(running.url, args.tables, args.seed)
        config = running.app[CONFIG]
        paced = (config.message_rate, config.message_burst)
        try:
            await client.until_ready(args.setup_timeout)
            await client.idle(args.warmup)
            async with aiohttp.ClientSession() as s:
                auth = {"Authorization": f"Bearer {OPERATOR}"}
                async with s.post(f"{running.url}/api/tables", json={"seats": 6, "point_value": 1}, headers=auth) as r:
                    table = await r.json()
                async with s.post(
                    f"{running.url}/api/players", json={"name": "probe", "deposit": 1000}, headers=auth
                ) as r:
                    spare = (await r.json())["token"]
                tokens = []
                for k in range(args.flooders):
                    body = {"name": f"flood-{k}", "deposit": 1000}
                    async with s.post(f"{running.url}/api/players", json=body, headers=auth) as r:
                        tokens.append((await r.json())["token"])
            print(
                f"{args.tables} honest six-seat tables; {args.flooders} flooding sockets of {args.kind}s;"
                f" the pace: {paced[0]:g} a second after a burst of {paced[1]}"
            )
            for label in ("quiet", "flood, paced", "flood, unpaced", "quiet"):
                config.message_rate, config.message_burst = (1e9, 10**9) if label.endswith("unpaced") else paced
                answered = ctx.Value("q", 0)
                proc = None
                if label.startswith("flood"):
                    proc = ctx.Process(target=flood_main, args=(running.url, tokens, table["id"], args.kind, answered))
                    proc.daemon = True
                    proc.start()
                await client.idle(2)  # the flood under way (and the sockets paced afresh)
                load = os.getloadavg()[0]
                a0, c0, w0, f0 = actions_stored(running.app), time.process_time(), time.monotonic(), answered.value
                probe = asyncio.create_task(handshakes(running.url, spare, args.seconds))
                await client.idle(args.seconds)
                a1, c1, w1, f1 = actions_stored(running.app), time.process_time(), time.monotonic(), answered.value
                took = await probe
                if proc is not None:
                    proc.kill()
                    proc.join()
                wall = w1 - w0
                print(
                    f"{label:>15}: honest {(a1 - a0) / wall:5.0f} actions/s, server CPU {100 * (c1 - c0) / wall:3.0f} %"
                    f" of a core, flood answered {(f1 - f0) / wall:6.0f}/s, a handshake {statistics.median(took):.0f}"
                    f" (max {max(took):.0f}) ms; load {load:.1f}->"
                    f"{os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        finally:
            client.stop()
            await running.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=4, help="honest six-seat tables (default 4)")
    ap.add_argument("--flooders", type=int, default=4, help="flooding sockets (default 4)")
    ap.add_argument(
        "--kind",
        choices=("ping", "move", "join", "rest"),
        default="ping",
        help="what they send (default ping; rest: four GET /api/me/hands at a time each, not paced)",
    )
    ap.add_argument("--seconds", type=float, default=8.0, help="each window (default 8)")
    ap.add_argument("--warmup", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--setup-timeout", type=float, default=120.0)
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
