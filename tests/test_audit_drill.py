"""The room audit's full proof (issue 16, item 9; a drill: minutes, run by .ci/run).

100 honest simulated tables of ``HANDS`` hands each, and tables whose dealer grinds
for a colluding player — every hand by the deal, every hand by a play-out, every bad
deal of its colluder by a void — of the same size, and one that grinds half of the
hands by the deal, of twice the size; each played into a folder and audited as
``rummy-verify audit`` does (tests/audit_sim.py's ``audit_table``).  At alpha = 0.001
at most 1 of the 100 honest tables may be flagged (the audit's tests keep the chance
at most 0.001 per table: 0.1 expected); every grinding table must be flagged on its
colluder and on nobody else.  bench/audit_power.py prints the power over many
tables and sizes (docs/audit.md: the every-hand grinders were flagged at 100 hands in
20 of 20 tables, the half-the-hands grinder at 300 hands in 20 of 20).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from tests.audit_sim import Grinder, TableRun, TableSim, audit_table

pytestmark = pytest.mark.drill

HONEST = 100
HANDS = 150
PLAYERS = ["p0", "p1", "p2", "p3"]
GRINDERS = {  # name: (dealer, hands)
    "deal-every": (Grinder("p0", rate=1.0, criterion="deal"), HANDS),
    "playout-every": (Grinder("p0", rate=1.0, criterion="playout"), HANDS),
    "void-every": (Grinder("p0", rate=1.0, via="void"), HANDS),
    "deal-half": (Grinder("p0", rate=0.5, criterion="deal"), 2 * HANDS),
}


def one_table(spec: tuple[str, int, Grinder | None, int, str]) -> TableRun:
    table_id, seed, grinder, hands, folder = spec
    return audit_table(TableSim(table_id, PLAYERS, seed=seed, grinder=grinder), hands, Path(folder) / table_id)


@pytest.mark.timeout(1800)
def test_honest_tables_are_not_flagged_and_grinding_tables_are(tmp_path: Path) -> None:
    # the tables bench/audit_power.py --configs honest --seed 5000 plays (same ids, seeds, hands)
    specs = [(f"honest-{5000 + i}", 5000 + i, None, HANDS, str(tmp_path)) for i in range(HONEST)]
    specs += [(name, 9000 + i, g, n, str(tmp_path)) for i, (name, (g, n)) in enumerate(GRINDERS.items())]
    workers = max(1, min(2, os.cpu_count() or 1))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        runs = {r.table_id: r for r in pool.map(one_table, specs)}
    honest = [runs[f"honest-{5000 + i}"] for i in range(HONEST)]
    assert all(r.counted == r.hands for r in runs.values()), "every hand verified"
    left_out = sum(r.left_out for r in honest) / sum(r.seat_hands for r in honest)
    assert 0.01 < left_out < 0.03, f"genuine left-out seats: {left_out:.2%} of seat-hands"
    flagged = [r for r in honest if r.flagged]
    assert len(flagged) <= 1, [(r.table_id, r.flagged) for r in flagged]
    for name in GRINDERS:
        r = runs[name]
        assert r.ground > 0
        assert r.flagged and {subject for _, subject, _ in r.flagged} == {"p0"}, (name, r.flagged, r.smallest_p)
