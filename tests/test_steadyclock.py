"""The tables' clock (D37, service/steadyclock.py): a step of the system clock does not
move it, and the sockets' ``hello`` tells the time of the same clock, so that the
deadlines a client counts down and the time it counts from agree."""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime

import pytest

from service.app import CONFIG
from service.startup import Running
from service.steadyclock import STEADY, SteadyClock
from service.table import Settings
from tests.conftest import Api, wait_for
from tests.skipclock import SkipClock
from tests.wsclient import Client


class Reading:
    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self) -> float:
        return self.value


def test_a_step_of_the_system_clock_does_not_move_it() -> None:
    wall, mono = Reading(1_800_000_000.0), Reading(50.0)
    clock = SteadyClock(wall, mono)
    assert clock() == 1_800_000_000.0
    mono.value += 2.5
    assert clock() == 1_800_000_002.5
    wall.value -= 3600  # set back an hour
    assert clock() == 1_800_000_002.5
    wall.value += 7200  # and on two
    mono.value += 1.0
    assert clock() == 1_800_000_003.5


def test_the_tables_run_on_it_unless_told_otherwise() -> None:
    assert Settings().clock is STEADY
    assert Settings(clock=time.time).clock is time.time


async def test_hello_tells_the_time_of_the_tables_clock(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = await api.player("timely")
    config = server.app[CONFIG]
    monkeypatch.setattr(config, "settings", dataclasses.replace(config.settings, clock=SkipClock(-3600.0)))
    async with Client(server.url, p["token"], p["signer"]) as c:
        await wait_for(lambda: any(f.get("type") == "hello" for f in c.frames))
        hello = next(f for f in c.frames if f.get("type") == "hello")
    told = datetime.fromisoformat(hello["now"]).timestamp()
    assert abs(told - (time.time() - 3600)) < 60, hello["now"]  # the tables' clock, not the system's
