"""A log file that a full disk cannot turn into a flood (``DATA_DIR/postgres.log``).

``logging.FileHandler`` answers a write that fails (``ENOSPC``: the data directory's
disk is full, as in the outage drill's full-disk case) with a "--- Logging error ---"
and a whole traceback on stderr, for every record, for as long as the disk stays full;
and its buffer keeps the bytes it could not write, to retry them later in a muddle
with the new ones.  :class:`DroppingFileHandler` writes each record with one
``write(2)`` and no buffer: a record that cannot be written is dropped, whole and
counted, the first drop of a spell says so once on the server's own log, and the
first line written after it says how many were dropped.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("rummy.logfile")


class DroppingFileHandler(logging.Handler):
    """Appends each record to ``path`` as one line, written whole or dropped."""

    def __init__(self, path: Path | str) -> None:
        super().__init__()
        self.path = str(path)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.dropped = 0  # records not written since the last one that was

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "replace")
        except Exception:
            self.handleError(record)  # a bad record (its arguments), not the disk
            return
        if self.dropped:
            line = f"({self.dropped} line(s) of this log could not be written and were dropped)\n".encode() + line
        try:
            written = os.write(self.fd, line)
        except OSError as e:
            self._drop(e.strerror or str(e))
            return
        if written < len(line):  # the disk filled up within the line: the rest is lost
            self._drop("a short write")
            return
        if self.dropped:
            log.warning("%s is written again; %d line(s) were dropped", self.path, self.dropped)
            self.dropped = 0

    def _drop(self, why: str) -> None:
        if self.dropped == 0:
            log.warning("cannot write %s (%s): its lines are dropped until it can be written", self.path, why)
        self.dropped += 1

    def close(self) -> None:
        self.acquire()
        try:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
        finally:
            self.release()
        super().close()
