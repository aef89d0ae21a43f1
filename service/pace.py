"""How fast one socket's messages are read: a token bucket, time as an input.

Every message a client sends costs the server work before anything can refuse it (the
frame read and parsed, a move's signature checked, the answer written), and a socket's
messages are taken one at a time as they come: with nothing to hold it back, one
authenticated client sending pings or bad moves as fast as it can took the worker's
CPU from the tables of everyone else (bench/flood.py: four such sockets took a worker
from 15 % of a core to all of it; paced, sixteen cost it about a tenth).

A socket may send ``burst`` messages at once, and then ``rate`` a second: a message
beyond that is read only when its turn comes (the handler waits before taking it, so
the socket's unread frames fill aiohttp's buffer and then TCP's window, and the client
is slowed at its own end).  Nothing is refused or lost, every message is answered in
order per table; a person at a table, a bot, or the page after a reconnect sends a
handful a second and is never held back.

A pace per socket bounds a player only if the player's sockets are bounded too: a
process serves at most ``SOCKETS_PER_PLAYER`` open sockets of one player
(:class:`PlayerSockets`), and refuses one more at its handshake (``429
too_many_sockets``), so one token costs a worker at most that many times the pace.  A
person plays a few tables from a few tabs; a socket whose network went away is
closed by the heartbeat within about 30 s and frees its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: messages a second a socket may keep sending (docs/api.md)
RATE: Final = 50.0
#: messages a socket may send at once before the rate applies
BURST: Final = 100
#: open sockets of one player a process serves at once
SOCKETS_PER_PLAYER: Final = 16


@dataclass(slots=True)
class Pace:
    """One socket's bucket: ``take`` a token for each message read."""

    rate: float
    burst: float
    tokens: float
    at: float  # the clock's time of the last take (seconds, monotonic)

    @classmethod
    def full(cls, now: float, rate: float = RATE, burst: float = BURST) -> Pace:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a socket's pace needs a rate above 0 and a burst of at least 1, not {rate}, {burst}")
        return cls(rate, float(burst), float(burst), now)

    def take(self, now: float) -> float:
        """A message arrived at ``now``: how long to wait before reading it (0: at once).
        The caller waits that long before it takes the message; the token is counted
        as taken now."""
        if now > self.at:
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
        self.tokens -= 1.0
        return 0.0 if self.tokens >= 0.0 else -self.tokens / self.rate


class PlayerSockets:
    """The open sockets of each player in this process, at most ``limit`` each."""

    def __init__(self, limit: int = SOCKETS_PER_PLAYER) -> None:
        if limit < 1:
            raise ValueError(f"a player needs room for at least one socket, not {limit}")
        self.limit = limit
        self._open: dict[str, int] = {}

    def add(self, player_id: str) -> bool:
        """One more socket of ``player_id``: False (and nothing counted) when it has
        ``limit`` open already."""
        n = self._open.get(player_id, 0)
        if n >= self.limit:
            return False
        self._open[player_id] = n + 1
        return True

    def discard(self, player_id: str) -> None:
        """A socket ``add`` counted has closed."""
        n = self._open.get(player_id, 0) - 1
        if n > 0:
            self._open[player_id] = n
        else:
            self._open.pop(player_id, None)

    def of(self, player_id: str) -> int:
        return self._open.get(player_id, 0)
