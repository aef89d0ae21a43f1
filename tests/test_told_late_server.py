"""D35, told late, end to end (tests/test_told_late.py has the table core's side): the
seat on turn discards; PostgreSQL commits the discard and the connection is cut before
its answer comes back (the commit happened; the server cannot know), and PostgreSQL
stays away for 20 s of a 10 s turn (resume_grace 1 s).  When it is back the table
reloads, finds the discard stored and tells everyone ``resumed``: only then does the
next seat learn that it is on turn, and its turn is whole from then.  Before
(2026-12-07, an audit) the ``resumed`` gave it the grace, and the clock moved for it
a second later."""

from __future__ import annotations

import asyncio
from datetime import datetime

import aiohttp

from service.app import CONFIG, TABLES
from service.startup import Running
from tests.conftest import Api, wait_for
from tests.pgproxy import PgProxy
from tests.skipclock import SkipClock
from tests.test_recovery import proxied  # noqa: F401 - a fixture
from tests.test_server import by_turn, latest_view, seat_of, seat_two, through_seeds
from tests.wsclient import Client

TURN = 10


async def test_a_turn_whose_record_was_stored_as_the_database_went_away_is_whole_from_resumed(
    proxied: tuple[Running, PgProxy],  # noqa: F811
) -> None:
    server, proxy = proxied
    clock = server.app[CONFIG].settings.clock
    assert isinstance(clock, SkipClock)
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        table, a, b = await seat_two(api, server, turn_seconds=TURN, max_missed_turns=3)
        async with (
            Client(server.url, a["token"], a["signer"]) as ca,
            Client(server.url, b["token"], b["signer"]) as cb,
        ):
            hand_no = await through_seeds(table, ca, cb)
            c, other = by_turn(ca, cb)
            assert (await c.act(table, hand_no, seat_of(c), {"kind": "draw_closed"}))["type"] == "reply"
            await wait_for(lambda: latest_view(c)["phase"] == "discard")
            card = latest_view(c)["me"]["cards"][0]

            def doom() -> bool:
                proxy.refuse = True  # PostgreSQL goes away with the discard's COMMIT answer
                return True

            proxy.drop_commit_reply(r"FOR KEY SHARE OF l", when=doom)  # the group writer's statement: a move
            discard = asyncio.create_task(
                c.act(table, hand_no, seat_of(c), {"kind": "discard", "card": card}, timeout=60)
            )
            await other.wait_frame(lambda f: f.get("type") == "paused", timeout=20)
            assert len(proxy.dropped) == 1, "the discard's COMMIT answer was not the one lost"
            proxy.cut()
            await clock.skip(server.app[TABLES].values(), 20, store_answers=False)
            proxy.refuse = False
            back = clock()
            resumed = await other.wait_frame(lambda f: f.get("type") == "resumed", timeout=30)
            answer = await discard
            assert answer["type"] == "reply", answer  # the discard was stored: the reload adopts it
            hand = resumed["snapshot"]["hand"]
            assert hand["view"]["turn"] == seat_of(other), "the next seat is on turn"
            deadline = datetime.fromisoformat(hand["deadline"]).timestamp()
            assert deadline >= back + TURN - 0.1, (
                f"the next seat learns it is on turn from the `resumed` (sent after the database came back at "
                f"{back:.1f}) and is given at most {deadline - back:.1f} s of its {TURN} s turn"
            )
            for x in (ca, cb):
                await x.leave(table)
