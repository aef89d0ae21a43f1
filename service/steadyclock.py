"""The tables' clock: the wall clock as this process found it, run on by the monotonic
clock (D37).

A step of the system clock while the server runs — NTP setting a clock that booted
wrong, an operator's correction — does not move it: a step back would have held every
turn and seed window until the clock caught up (the records' ``t`` cannot go back), and
a step ahead would have been taken for a node that stood still, ending turns a grace
after it.  Across processes and nodes, whose clocks may disagree, a table's own time
never goes back either (``service.tablecore.core.TableCore._time``).  ``hello``'s
``now`` is read from the same clock, so the deadlines clients are told and the time
they count them down from agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class SteadyClock:
    """Seconds since the epoch, as the wall clock read when this was made plus the
    monotonic time elapsed since."""

    def __init__(self, wall: Callable[[], float] = time.time, mono: Callable[[], float] = time.monotonic) -> None:
        self._mono = mono
        self._base = wall() - mono()

    def __call__(self) -> float:
        return self._base + self._mono()


#: the process's clock for its tables and its sockets' ``hello``
STEADY = SteadyClock()
