"""D37: when the clock may charge a seat, and the backoff after repeated failures.

The house is at fault while the table cannot store (the store unreachable, hung — a
write unanswered for ``hung_ms`` — or refusing), while it reloads, while its node
stood still (no beat for ``freeze_ms``) and while the table moves between nodes.
No clock runs then.  When the fault is over (at ``recovered_at``) each seat's grace
is counted from the moment it could reach the table's owner again: at once for a
player connected then, from its reconnection for one that comes back later, and —
so that an absent player cannot hold the table for ever — at most ``reach_ms`` after
the recovery.  A seat is charged by the clock (a timeout, a null commitment, a
withheld reveal, a clock drop) only after its deadline *and* a full ``grace_ms`` from
that moment; the deadline of a window or turn the fault cut into is its ordinary end
plus ``grace_ms`` (D32, :meth:`service.tablecore.steps.Steps.after_fault`).  A
player's own disconnections during normal play change nothing (D16: the clock moves
for an absent seat).

D34: at a table too few are connected to deal at, a seat away for ``away_ms`` is
stood up; its time away counts from its disconnection (or its sitting down with no
connection), and never from before the last fault's end.  So is a connected seat that
could not cover its hold at every deal tried for ``away_ms`` when too few could for a
hand to be dealt.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection
from dataclasses import dataclass, field

from service.tablecore.state import CoreConfig

#: how soon after a fault's end the owner learns of a connection lost during it (the
#: notices a frozen node's loop had queued come in its first moments back)
NOTICE_MS = 1000


@dataclass
class Reachability:
    recovered_at: int = 0  # when the house's last fault ended (ms)
    connected: set[str] = field(default_factory=set)
    #: since the last fault: the moment each player could reach the owner again
    reach: dict[str, int] = field(default_factory=dict)
    #: D35: when the house last refused a player's move (it keeps its whole window from then)
    refused: dict[str, int] = field(default_factory=dict)
    #: D34: since the last fault, when a seated player's connection went, or when a player
    #: with none sat down (absent from then; no entry: absent since the fault's end)
    left: dict[str, int] = field(default_factory=dict)
    #: D34: since the last fault, when a connected seat was first found unable to cover
    #: its hold at a deal no hand came of (and has been unable at every try since)
    unable: dict[str, int] = field(default_factory=dict)
    #: D34: a connected player's time away as it connected (its ``left``, or the last
    #: fault's end), and how many deals had been tried then: a connection no deal was
    #: tried in does not end its time away (else a seat that connected for a moment
    #: every ``away_ms`` held the table for ever, never dealt in nor stood up: an audit
    #: found it)
    came: dict[str, tuple[int, int]] = field(default_factory=dict)
    tries: int = 0  # D34: the deals tried (a hand started, or too few found to start one)

    #: the last fault was a node that stood still: it learns of the connections lost
    #: during it only as it moves again (``NOTICE_MS``, :meth:`disconnect`)
    notices_late: bool = False

    def fault_over(self, now: int, *, stood_still: bool = False) -> None:
        """The house serves again: every grace starts again from here.  ``stood_still``:
        the fault was this node standing still (its loop heard nothing meanwhile)."""
        self.recovered_at = now
        self.notices_late = stood_still
        self.reach = dict.fromkeys(self.connected, now)
        self.left.clear()
        self.unable.clear()

    def connect(self, player_id: str, now: int) -> None:
        if player_id not in self.connected:
            self.came[player_id] = (self.left.pop(player_id, self.recovered_at), self.tries)
        self.connected.add(player_id)
        self.reach.setdefault(player_id, now)

    def disconnect(self, player_id: str, now: int, *, seated: bool) -> None:
        """A player's connection is gone.  Learnt of within ``NOTICE_MS`` of the end of
        a fault in which this node stood still, by a player counted as connected then,
        the connection went during the fault (a node that stood still hears of it only
        when it moves again): the player could not reach the owner since, and its grace
        waits for it (D37).  After any other fault (a reload, a hung write) the node's
        loop heard every disconnection as it came: one it hears after the fault's end is
        the player's own, and changes nothing (D16; else a client that dropped its socket
        just after a reload, and came back just before ``reach_ms``, kept its turn that
        much longer: an audit found it).  A seated player is away from now (D34,
        :meth:`away_since`) — or, when no deal was tried while it was connected, from
        when it was away before it came."""
        self.connected.discard(player_id)
        came = self.came.pop(player_id, None)
        if seated:
            # away from now; or, no deal tried since it came, still from when it was
            self.left[player_id] = came[0] if came is not None and self.tries == came[1] else now
        if (
            self.notices_late
            and self.reach.get(player_id) == self.recovered_at
            and now - self.recovered_at <= NOTICE_MS
        ):
            del self.reach[player_id]

    def sat(self, player_id: str, now: int) -> None:
        """A player sat down: with no connection to the table, it is away from now (D34)."""
        if player_id not in self.connected:
            self.left[player_id] = now

    def away_since(self, player_id: str) -> int:
        """D34: since when a player with no connection has been away, the house's
        faults not counted (its absence counts from the last fault's end at the
        earliest)."""
        return max(self.left.get(player_id, self.recovered_at), self.recovered_at)

    def seated_now(self, absent: Collection[str]) -> None:
        """Forget the disconnections of players no longer seated (``absent``: the
        seated players with no connection)."""
        if len(self.left) > len(absent):
            self.left = {p: t for p, t in self.left.items() if p in absent}

    def judged(self, unable: Collection[str], stood: Collection[str], now: int) -> None:
        """A deal no hand came of: ``unable`` could not cover their holds (each since
        the first such deal in a row), ``stood`` of them were stood up."""
        self.unable = {p: self.unable.get(p, now) for p in unable if p not in stood}

    def unable_since(self, player_id: str) -> int | None:
        """D34: since when a connected seat has been unable to cover its hold at every
        deal tried (None: it could at the last), the house's faults not counted (its
        balance may be held by another table's hand the fault held up)."""
        at = self.unable.get(player_id)
        return None if at is None else max(at, self.recovered_at)

    def reached(self, player_id: str, cfg: CoreConfig) -> int:
        """When the player could reach the owner again since the last fault."""
        got = self.reach.get(player_id)
        return self.recovered_at + cfg.reach_ms if got is None else min(got, self.recovered_at + cfg.reach_ms)

    def charge_from(self, player_id: str, cfg: CoreConfig, window: int = 0) -> int:
        """The earliest moment the clock may charge this player's seat: its grace after
        it could reach the table (D37), and ``window`` after a move of its the house
        refused (D35)."""
        at = self.reached(player_id, cfg) + cfg.grace_ms
        refused = self.refused.get(player_id)
        return at if refused is None else max(at, refused + window)


def backoff(table_id: str, streak: int, cfg: CoreConfig) -> int:
    """How long to wait before reloading after ``streak`` failures with no write
    committed between them: ``retry_first_ms`` before the first reload, then the wait
    doubles up to ``retry_max_ms``; each spread by the table to 0.5…1.0 times (a
    thousand tables that failed together do not retry together; deterministic, so a
    simulation replays).  The spread takes off, never adds: the wait is never above
    ``retry_max_ms`` (D37).  The first reload waits too: a server starved of CPU saw its
    writes time out by the hundred, and every table that reloaded at once added its
    load to the storm (issue 20, item 5)."""
    if streak <= 0:
        return 0
    base = min(cfg.retry_max_ms, cfg.retry_first_ms << min(streak - 1, 20))
    spread = 500 + (zlib.crc32(f"{table_id}/{streak}".encode()) % 501)  # 0.5…1.0
    return base * spread // 1000
