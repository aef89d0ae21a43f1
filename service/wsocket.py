"""The server's WebSocket response: aiohttp's, with what its heartbeat adds held in slots.

CPython (3.11 on) keeps an object's attributes in a compact array beside the object,
and builds a real ``__dict__`` for it only when it needs one — among other cases
when the object holds more attributes than its class's shared keys can take (30).
An aiohttp ``WebSocketResponse`` holds 28 after ``prepare`` (two of them its
heartbeat's, ``_heartbeat_cb`` and ``_heartbeat_when``); the heartbeat's first ping (a
socket that has not heard from its client for 20 s) brings it to 31
(``_pong_response_cb``, ``_ping_task``, ...), and from then on the socket carries a
dict of 31 keys, about 1.5 KB.
At human pace every socket pings in its first minute: 1,998 seats grew a server by
about 3 MB after set-up, part of item 4's warm-up (docs/benchmarks.md).

:class:`TableSocket` gives those four attributes slots of their own, set to the
defaults aiohttp's class declares before aiohttp's ``__init__`` runs, so the
attributes left stay within the compact array.  Nothing else changes: the same
heartbeat, the same pong deadline (``tests/test_wsocket.py`` checks both and that no
dict is built).  If aiohttp renames them, the slots stand unused and the dict comes
back, no worse than before.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

#: the attributes aiohttp's heartbeat sets on a socket after its handshake
HEARTBEAT_ATTRIBUTES = ("_heartbeat_cb", "_heartbeat_when", "_ping_task", "_pong_response_cb")


class TableSocket(web.WebSocketResponse):
    """``web.WebSocketResponse`` whose heartbeat's attributes live in slots."""

    __slots__ = HEARTBEAT_ATTRIBUTES

    def __init__(self, **options: Any) -> None:
        for name in HEARTBEAT_ATTRIBUTES:  # aiohttp's class defaults: a slot has none
            setattr(self, name, getattr(web.WebSocketResponse, name, None))
        super().__init__(**options)
