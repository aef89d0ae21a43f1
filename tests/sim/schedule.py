"""The simulator's faults (tests/sim/world.py): what kinds there are, and a world's
schedule of them drawn from its seed.  The faults of a table's own and the store's
come from the world's own random stream, in the order they always have; each other
kind from a stream of its own, so that adding one leaves every seed's other faults
where they were."""

from __future__ import annotations

import random
from dataclasses import dataclass

SECOND = 1000
STORE_WIDE = ("unreachable", "hung", "slow", "full")  # the store's faults: every table meets them
OWN = ("crash", "lost_reply", "takeover", "freeze", "drop", "slow_reader")  # one table's (or one player's)
#: the clock of the node serving a table steps back ``duration`` (D37: the table's time
#: goes on); drawn from a stream of its own (``clock_rate``), so that the worlds of the
#: other faults stay what they were for every seed
CLOCK = ("clock_back",)
#: a player who walks away for longer than ``away_ms`` (D34: the table, too few
#: connected to deal at, stands the seat up), from a stream of its own (``away_rate``)
AWAY = ("walk_away",)
#: the node serving a table stalls 0.3 to 2.9 s (a stop, a long collection, a starved
#: process): too short for a freeze (3 beats), so no fault of the house, and as it wakes
#: the shell steps its late wake before the sockets are read (D37: the seats it would
#: charge keep what they had left); from a stream of its own (``stall_rate``)
STALL = ("stall",)
#: the node serving a table stalls 11 to 349 ms (a short stop, a collection, a busy
#: neighbour) across its next wake, and its late wake is stepped before the loop's meter
#: has counted it (the worst case of service.stallmeter: a wake due just before the
#: meter's tick); from a stream of its own (``short_stall_rate``)
SHORT_STALL = ("short_stall",)
KINDS = STORE_WIDE + OWN + CLOCK + AWAY + STALL + SHORT_STALL


@dataclass(frozen=True, order=True)
class Fault:
    at: int
    kind: str
    table: int  # which table (store-wide faults: ignored)
    duration: int
    player: int = 0

    def __str__(self) -> str:
        return f"{self.kind}@{self.at / 1000:.1f}s t{self.table} p{self.player} for {self.duration / 1000:.1f}s"


@dataclass
class Schedule:
    """The faults of a world of ``n_tables`` tables lasting ``duration`` ms: ``rng`` is
    the world's own stream (its table-and-store faults are drawn from it first)."""

    seed: int
    rng: random.Random
    n_tables: int
    duration: int

    def random_faults(self, rate: float, store_rate: float | None = None) -> list[Fault]:
        """A table meets about ``rate`` faults of its own (a crash, a lost COMMIT answer,
        a takeover, a freeze, a player's drop or slow reading) and about ``store_rate``
        (default: ``rate``) of the store's (unreachable, hung, slow, full: one store,
        so every table meets each) every 5 virtual minutes; none in the last minute
        (the run drains).  The store's faults do not grow with the number of tables: a
        world of 100 tables is 100 tables of the same world as one of 10."""
        out: list[Fault] = []
        end = max(1, self.duration - 60 * SECOND)
        own = int(rate * self.n_tables * self.duration / (300 * SECOND))
        store = int((rate if store_rate is None else store_rate) * self.duration / (300 * SECOND))
        for kinds, n in ((OWN, own), (STORE_WIDE, store)):
            for _ in range(n):
                kind = self.rng.choice(kinds)
                dur = {
                    "crash": self.rng.randrange(1, 20) * SECOND,
                    "unreachable": self.rng.randrange(1, 30) * SECOND,
                    "hung": self.rng.randrange(1, 30) * SECOND,
                    "slow": self.rng.randrange(2, 20) * SECOND,
                    "full": self.rng.randrange(2, 30) * SECOND,
                    "freeze": self.rng.randrange(4, 30) * SECOND,
                    "drop": self.rng.randrange(0, 10) * SECOND,
                    "slow_reader": self.rng.randrange(1, 10) * SECOND,
                }.get(kind, 0)
                out.append(
                    Fault(
                        self.rng.randrange(5 * SECOND, end),
                        kind,
                        self.rng.randrange(self.n_tables),
                        dur,
                        self.rng.randrange(4),
                    )
                )
        return out

    def away_faults(self, rate: float) -> list[Fault]:
        """About ``rate`` players a table who walk away every 5 virtual minutes, for
        5 to 60 s (``away_ms`` is 20 s here), none in the last 90 s."""
        return self._stream("away", "walk_away", rate, 90, (5, 60), player=True)

    def clock_faults(self, rate: float) -> list[Fault]:
        """About ``rate`` steps back of a table's clock every 5 virtual minutes, of a
        second to an hour, none in the last minute."""
        return self._stream("clock", "clock_back", rate, 60, (1, 3600), player=False)

    def stall_faults(self, rate: float) -> list[Fault]:
        """About ``rate`` stalls of a table's node every 5 virtual minutes, of 0.3 to
        2.9 s (longer than ``stall_ms``, shorter than a freeze), none in the last
        minute; the first step after one is told its length, as the loop's meter tells
        the real shell's (service.stallmeter)."""
        return self._stream("stall", "stall", rate, 60, (300, 2900), player=False, unit=1)

    def short_stall_faults(self, rate: float) -> list[Fault]:
        """About ``rate`` short stalls of a table's node every 5 virtual minutes, of 11
        to 349 ms, none in the last minute; the first step after one is told nothing of
        it (the loop's meter has not yet counted it)."""
        return self._stream("short_stall", "short_stall", rate, 60, (11, 350), player=False, unit=1)

    def _stream(
        self,
        stream: str,
        kind: str,
        rate: float,
        quiet: int,
        seconds: tuple[int, int],
        *,
        player: bool,
        unit: int = SECOND,
    ) -> list[Fault]:
        """About ``rate`` faults ``kind`` a table every 5 virtual minutes, lasting
        ``seconds`` (a range), none in the last ``quiet`` seconds, drawn from a stream
        of their own: the worlds of the other faults stay what they were for every seed."""
        rng = random.Random(f"{self.seed}/{stream}")
        end = max(1, self.duration - quiet * SECOND)
        n = int(rate * self.n_tables * self.duration / (300 * SECOND))
        out = []
        for _ in range(n):
            at, table, duration = rng.randrange(5 * SECOND, end), rng.randrange(self.n_tables), rng.randrange(*seconds)
            out.append(Fault(at, kind, table, duration * unit, rng.randrange(4) if player else 0))
        return out
