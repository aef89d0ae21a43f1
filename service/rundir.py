"""The run directory of ``serve --workers N``: the workers' Unix sockets, their pid
stamps (:mod:`service.siblings`) and the metrics files they share
(prometheus_client's multiprocess mode, :mod:`service.metrics`).

It lives in memory (``/dev/shm``) when there is room there, not on the data
directory's disk.  The outage drill found why (``bench/outage_drill.py``, the
embedded PostgreSQL's disk full with a WAL switch forced): the metrics files are
memory-mapped and grown as the workers count, and a page of a mapped file that the
full disk cannot back kills the process that touches it with SIGBUS.  Both workers
died at once, every client lost its connection without being told ``paused``, and the
workers started again could not write their stamps (``ENOSPC``) until the space came
back.  The data directory's disk filling must stop the writes, not the server.

Made afresh at every start, mode 0700 (this user only): the data directory is held
(its lock), so no other server uses the same name.  A name of its own per data
directory (a hash of its path) means a server killed without its clean-up leaves
one directory behind, not one per start, and the next start removes it.  A data
directory that is never started again (a temporary one, a container's that was
thrown away) would leave its directory in memory until the machine restarts: each
run directory names its owner (the server's pid stamp and its data directory, in
``owner``), and a start removes this user's run directories whose server is gone
*and* whose data directory no longer exists — no server can be using those.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from service.siblings import Stamp, is_gone, own_stamp

#: memory-backed parents tried first, in order
MEMORY_PARENTS: Final = (Path("/dev/shm"),)  # noqa: S108 - made with mkdir 0700, checked as ours
#: the room a memory parent must have free (a container's /dev/shm is often 64 MB)
MIN_FREE_BYTES: Final = 256 << 20
UNIX_PATH_MAX: Final = 100  # sun_path is 108 bytes on Linux; room for "/w64.sock"
#: the file in a run directory that names its server and data directory
OWNER: Final = "owner"


def run_dir(data_dir: Path, parents: Sequence[Path] = MEMORY_PARENTS, min_free: int = MIN_FREE_BYTES) -> Path:
    """The server's run directory, made afresh (mode 0700): in the first of ``parents``
    that has ``min_free`` bytes free and takes it, else ``DATA_DIR/run``, else (when
    that path is too long for a Unix socket) a directory of its own under the
    temporary directory."""
    data_dir = data_dir.resolve()
    for parent in parents:
        path = _in_memory(parent, data_dir, min_free)
        if path is not None:
            return path
    path = data_dir / "run"
    if len(str(path / "w64.sock")) > UNIX_PATH_MAX:
        return Path(tempfile.mkdtemp(prefix="rummy-run-"))
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return path


def again(path: Path, data_dir: Path) -> bool:
    """Make the run directory again where it was when something removed it under the
    running server (systemd-logind's ``RemoveIPC`` as its user's last session ends, a
    cleaner of ``/dev/shm``); True when it was gone.  Found by an audit: a worker that
    died then could never start again (its stamp had nowhere to go), and the live
    workers had lost their sockets and stamps (the supervisor starts them again)."""
    if path.is_dir():
        return False
    os.mkdir(path, 0o700)  # fails if anything else took the name meanwhile
    made = os.lstat(path)
    if not stat.S_ISDIR(made.st_mode) or made.st_uid != os.getuid():
        raise OSError(f"{path} is not this user's directory")
    os.chmod(path, 0o700)
    _write_owner(path, data_dir.resolve())
    (path / "metrics").mkdir(mode=0o700)
    return True


def name_for(data_dir: Path) -> str:
    """The run directory's name in a shared parent: this user's, this data directory's."""
    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:16]
    return f"rummy-run-{os.getuid()}-{digest}"


def _in_memory(parent: Path, data_dir: Path, min_free: int) -> Path | None:
    try:
        if not parent.is_dir():
            return None
        st = os.statvfs(parent)
        if st.f_bavail * st.f_frsize < min_free:
            return None
        path = parent / name_for(data_dir)
        if len(str(path / "w64.sock")) > UNIX_PATH_MAX:
            return None
        _remove_own(path)
        os.mkdir(path, 0o700)  # fails if anything is there: a name another user took, a link
        made = os.lstat(path)
        if not stat.S_ISDIR(made.st_mode) or made.st_uid != os.getuid():
            return None
        os.chmod(path, 0o700)
        _write_owner(path, data_dir)
    except OSError:
        return None
    sweep(parent)
    return path


def _write_owner(path: Path, data_dir: Path) -> None:
    (path / OWNER).write_bytes(own_stamp().text().encode("ascii") + os.fsencode(data_dir) + b"\n")


def owner(path: Path) -> tuple[Stamp, Path] | None:
    """The server and data directory a run directory names, or None (none, or unreadable)."""
    try:
        raw = (path / OWNER).read_bytes()
    except OSError:
        return None
    first, sep, rest = raw.partition(b"\n")
    stamp = Stamp.parse(first.decode("ascii", "replace"))
    if stamp is None or not sep or not rest.endswith(b"\n") or b"\n" in rest[:-1]:
        return None
    return stamp, Path(os.fsdecode(rest[:-1]))


def sweep(parent: Path) -> list[Path]:
    """Remove this user's run directories in ``parent`` left by servers that are gone
    and whose data directory no longer exists; the ones removed.  A directory with no
    readable owner (one being made right now, or an older server's) is left alone."""
    removed: list[Path] = []
    prefix = f"rummy-run-{os.getuid()}-"
    try:
        names = [n for n in os.listdir(parent) if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        path = parent / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        found = owner(path)
        if found is None or not is_gone(found[0]) or os.path.lexists(found[1]):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _remove_own(path: Path) -> None:
    """A directory of this user's left by an earlier run; anything else is left alone
    (and ``mkdir`` then fails)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
        shutil.rmtree(path)
