"""The garbage collector tuned for a long-running server, once start-up is done.

A table server allocates many short-lived containers per action (records, events,
messages) and holds a large, long-lived heap (modules, the rules kernel's tables,
the app).  With CPython's default thresholds (700, 10, 10) the young generation is
collected every few hundred allocations and every full collection walks the whole
heap, start-up objects included.  After start-up :func:`tune` collects once, moves
everything that survived into the permanent generation (``gc.freeze``: never
scanned again) and raises the thresholds so that the young generation is collected
far less often.  Reference counting still frees everything that is not in a cycle at
once; only cyclic garbage waits longer.  Issue 20 measures it with bench/load.py.
"""

from __future__ import annotations

import gc
from typing import Final

#: collections of the young, middle and old generations: every THRESHOLDS[0] net
#: allocations of containers, and every [1] and [2] collections of the one below
THRESHOLDS: Final = (20_000, 20, 20)


def tune(thresholds: tuple[int, int, int] = THRESHOLDS) -> None:
    """Collect, freeze what survived start-up, and set ``thresholds``."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)
