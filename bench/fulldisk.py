"""A real full disk for the outage drill (issue 17): a size-limited tmpfs that a
PostgreSQL's data directory lives on, filled to the last byte with a ballast file,
and emptied again.

Mounting needs root (the drill and CI run as root).  :meth:`Disk.mount` answers why
it could not, in one line, instead of pretending: the drill then fails that fault.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

CHUNKS = (1 << 20, 64 << 10, 4 << 10, 512)  # ballast is written in these, biggest first


class Disk:
    def __init__(self, path: Path, megabytes: int) -> None:
        self.path = path
        self.megabytes = megabytes
        self.ballast = path / "ballast"
        self.mounted = False

    def mount(self) -> str | None:
        """Mount the tmpfs over ``path`` (made empty); None, or why it cannot be done."""
        self.path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return f"a full disk needs a tmpfs of its own, and mounting one needs root (this is uid {os.geteuid()})"
        command = ["mount", "-t", "tmpfs", "-o", f"size={self.megabytes}m,mode=0755", "tmpfs", str(self.path)]
        try:
            r = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        except OSError as e:
            return f"{' '.join(command)}: {e}"
        if r.returncode != 0:
            return f"{' '.join(command)} failed: {(r.stderr or r.stdout).strip()[:200]}"
        self.mounted = True
        return None

    def fill(self) -> int:
        """Write ballast until the disk refuses even a few bytes; the bytes written.
        Called again while the disk is to stay full: what PostgreSQL freed meanwhile
        (a WAL file removed) is taken back."""
        written = 0
        with open(self.ballast, "ab", buffering=0) as f:
            for size in CHUNKS:
                block = b"\0" * size
                while True:
                    try:
                        f.write(block)
                    except OSError as e:
                        if e.errno != errno.ENOSPC:
                            raise
                        break
                    written += size
        return written

    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def empty(self) -> None:
        self.ballast.unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            self.empty()
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(["umount", "-l", str(self.path)], capture_output=True, timeout=30, check=False)
            self.mounted = False
