"""A table as a pure state machine (issue 17).

``TableCore.step(input, now) -> effects``: the table's rules — commands, clocks, the
hand's phases, recovery from the store's faults, losing the lease — with no I/O and
no clock of its own.  Inputs (:mod:`service.tablecore.io`) are client commands,
clock ticks, store outcomes and lease and connectivity events; effects are store
these records, tell these seats, reply to this command, arm the clock at T.  The
shell (:mod:`service.table`) does the I/O in the order the effects come (a write's
tells come only after its outcome is fed back: stored before told); the simulator
in the test suite (tests/sim) drives the same core with a virtual clock and a
simulated store.
"""
