"""service.gctune: after start-up the server freezes what start-up made and collects
the young generation less often (issue 20); the process's collector is put back."""

from __future__ import annotations

import gc

from service import gctune


def test_tune_freezes_start_up_and_sets_the_thresholds() -> None:
    before = gc.get_threshold()
    held = [{"n": n} for n in range(1000)]  # containers alive at "start-up"
    try:
        gctune.tune((12_345, 7, 9))
        assert gc.get_threshold() == (12_345, 7, 9)
        assert gc.get_freeze_count() >= len(held)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    assert gctune.THRESHOLDS[0] > before[0]  # the default collects less often than CPython's
