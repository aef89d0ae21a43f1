"""Is a sibling worker of ``serve --workers`` alive?  Late is not dead.

Workers of one server are processes on one host below one supervisor.  Starved of CPU
(a busy neighbour, a small share), a worker renews its leases late; a sibling that
took its tables then — as it would a dead node's — moved every player of them, and
the starved worker took tables back the same way (issue 20, item 5: leases lost by
the hundred).  So a sibling's lease is not taken while its process is alive, however
late its renewal (:class:`service.cluster.Cluster`, up to a patience that only a
wedged worker exceeds); a dead sibling's, or another node's, still are once expired.
Fencing (every write checks its lease: service.tablestore) stays the safety net.

Each worker writes its **stamp** — pid and process start time — in the server's run
directory as it starts (``wN.pid``).  A sibling is alive when the process its stamp
names is still that process (the same start time: a pid reused by anything else is
not it), is a child of this server's supervisor (a container's other pid space, or
another server, is not it), and has not exited (a zombie is dead).  A stopped
process (SIGSTOP) is alive: it may run again and renew.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import psutil


@dataclass(frozen=True)
class Stamp:
    pid: int
    started: float  # psutil's create_time: the process's start, to the tick

    def text(self) -> str:
        return f"{self.pid} {self.started!r}\n"

    @classmethod
    def parse(cls, text: str) -> Stamp | None:
        parts = text.split()
        if len(parts) != 2 or not parts[0].isascii() or not parts[0].isdigit():
            return None
        try:
            return cls(int(parts[0]), float(parts[1]))
        except ValueError:
            return None


def stamp_path(run_dir: str | Path, index: int) -> Path:
    return Path(run_dir) / f"w{index}.pid"


def own_stamp() -> Stamp:
    return Stamp(os.getpid(), psutil.Process().create_time())


def write_stamp(run_dir: str | Path, index: int) -> Stamp:
    """This worker's stamp, written whole (a reader never sees half of it)."""
    stamp = own_stamp()
    path = stamp_path(run_dir, index)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(stamp.text(), encoding="ascii")
    os.replace(tmp, path)
    return stamp


def read_stamp(run_dir: str | Path, index: int) -> Stamp | None:
    try:
        return Stamp.parse(stamp_path(run_dir, index).read_text(encoding="ascii"))
    except (OSError, UnicodeDecodeError):
        return None


def is_alive(stamp: Stamp | None, supervisor: int) -> bool:
    """Is the process ``stamp`` names still running (or stopped), a child of ``supervisor``?"""
    if stamp is None:
        return False
    with contextlib.suppress(psutil.Error):
        p = psutil.Process(stamp.pid)
        return (
            p.create_time() == stamp.started
            and p.ppid() == supervisor
            and p.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
        )
    return False


def is_gone(stamp: Stamp) -> bool:
    """Has the process ``stamp`` names ended (no such process, or another one with its pid)?"""
    try:
        started: float = psutil.Process(stamp.pid).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False  # there, but not ours to look at: not known to be gone
    return started != stamp.started


def alive(run_dir: str | Path, index: int, supervisor: int) -> bool:
    """Is worker ``index`` of this server alive now?"""
    return is_alive(read_stamp(run_dir, index), supervisor)
