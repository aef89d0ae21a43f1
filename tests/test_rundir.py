"""The run directory of ``serve --workers N`` (service/rundir.py): in memory when
there is room, so that a full data disk cannot kill the workers through their
memory-mapped metrics files (the outage drill's SIGBUS); made afresh, this user's
only, and never through a name someone else planted."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.rundir import MEMORY_PARENTS, OWNER, UNIX_PATH_MAX, name_for, owner, run_dir, sweep
from service.siblings import Stamp, own_stamp


@pytest.fixture
def shm() -> Iterator[Path]:
    """A parent with a short path, as /dev/shm's is (a Unix socket's path is short)."""
    path = Path(tempfile.mkdtemp(prefix="shm-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_run_directory_is_made_in_memory_not_on_the_data_disk(tmp_path: Path, shm: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    run = run_dir(data, parents=(shm,), min_free=1)
    assert run == shm / name_for(data.resolve())
    assert run.is_dir() and mode(run) == 0o700 and os.lstat(run).st_uid == os.getuid()
    assert not (data / "run").exists()
    # a start after a server that was killed without its clean-up: the same name, emptied
    (run / "metrics").mkdir()
    (run / "metrics" / "counter_123.db").write_bytes(b"x" * 10)
    again = run_dir(data, parents=(shm,), min_free=1)
    assert again == run and [p.name for p in again.iterdir()] == [OWNER]
    assert owner(run) == (own_stamp(), data.resolve())
    # another data directory, another name
    other = tmp_path / "other"
    other.mkdir()
    assert run_dir(other, parents=(shm,), min_free=1) != run


def test_the_memory_parent_is_passed_over_when_it_has_no_room_or_is_missing(tmp_path: Path, shm: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    full = run_dir(data, parents=(shm,), min_free=1 << 62)  # more than any disk has free
    assert full == data.resolve() / "run" and mode(full) == 0o700
    assert list(shm.iterdir()) == []
    gone = run_dir(data, parents=(tmp_path / "no-such",), min_free=1)
    assert gone == data.resolve() / "run"
    # a parent whose path leaves no room for a socket's name
    deep = shm / ("d" * (UNIX_PATH_MAX - len(str(shm))))
    deep.mkdir()
    assert run_dir(data, parents=(deep,), min_free=1) == data.resolve() / "run"
    assert list(deep.iterdir()) == []


def test_a_name_planted_in_the_shared_parent_is_not_followed(tmp_path: Path, shm: Path) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    for d in (data, elsewhere):
        d.mkdir()
    (elsewhere / "keep").write_text("not the server's", encoding="ascii")
    planted = shm / name_for(data.resolve())
    planted.symlink_to(elsewhere, target_is_directory=True)
    run = run_dir(data, parents=(shm,), min_free=1)
    assert run == data.resolve() / "run"  # the link is neither used nor emptied
    assert planted.is_symlink() and (elsewhere / "keep").read_text(encoding="ascii") == "not the server's"
    planted.unlink()
    planted.write_text("a file", encoding="ascii")
    assert run_dir(data, parents=(shm,), min_free=1) == data.resolve() / "run"
    assert planted.read_text(encoding="ascii") == "a file"


def test_by_default_the_run_directory_is_in_dev_shm_here(tmp_path: Path) -> None:
    """The machines this runs on (Linux, CI) have a /dev/shm with room."""
    assert MEMORY_PARENTS[0].is_dir()
    run = run_dir(tmp_path)
    try:
        assert run.parent == MEMORY_PARENTS[0] and not (tmp_path / "run").exists()
    finally:
        shutil.rmtree(run)


def dead_stamp() -> Stamp:
    """The stamp of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "import os; print(os.getpid())"], stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=30)
    return Stamp(int(out), 1.0)


def left(shm: Path, tag: str, stamp: Stamp | None, data_dir: Path) -> Path:
    path = shm / f"rummy-run-{os.getuid()}-{tag}"
    path.mkdir(mode=0o700)
    (path / "metrics").mkdir()
    if stamp is not None:
        (path / OWNER).write_bytes(stamp.text().encode("ascii") + os.fsencode(data_dir) + b"\n")
    return path


def test_a_start_sweeps_run_directories_whose_server_and_data_directory_are_gone(tmp_path: Path, shm: Path) -> None:
    """A server killed without its clean-up, whose data directory was then removed (a
    test's, a container's), left its run directory in memory; the next start of any
    server of this user removes it, and nothing that may still be in use."""
    gone_data = tmp_path / "removed"  # never made: the data directory is gone
    kept_data = tmp_path / "kept"
    kept_data.mkdir()
    dead = dead_stamp()
    orphan = left(shm, "orphan", dead, gone_data)
    live_owner = left(shm, "live", own_stamp(), gone_data)  # its server still runs
    reused_pid = left(shm, "reused", Stamp(os.getpid(), own_stamp().started + 5.0), gone_data)  # pid taken since
    data_left = left(shm, "data", dead, kept_data)  # its data directory can start again
    no_owner = left(shm, "older", None, gone_data)  # an older server's, or one being made
    other_user = shm / f"rummy-run-{os.getuid() + 1}-x"
    other_user.mkdir()
    (other_user / OWNER).write_bytes(dead.text().encode("ascii") + os.fsencode(gone_data) + b"\n")
    link = shm / f"rummy-run-{os.getuid()}-link"
    link.symlink_to(tmp_path, target_is_directory=True)

    data = tmp_path / "data"
    data.mkdir()
    run = run_dir(data, parents=(shm,), min_free=1)
    assert run.is_dir()
    assert not orphan.exists() and not reused_pid.exists()
    for kept in (live_owner, data_left, no_owner, other_user, run):
        assert kept.is_dir(), kept
    assert link.is_symlink() and tmp_path.is_dir()
    assert sweep(shm) == []  # nothing more to sweep


def test_an_owner_file_that_is_not_one_is_left_alone(shm: Path, tmp_path: Path) -> None:
    dead = dead_stamp()
    bad = [b"", b"garbage\n", dead.text().encode("ascii"), dead.text().encode("ascii") + b"/x\n/y\n"]
    paths = []
    for n, text in enumerate(bad):
        path = left(shm, f"bad{n}", None, tmp_path)
        (path / OWNER).write_bytes(text)
        assert owner(path) is None
        paths.append(path)
    assert sweep(shm) == []
    assert all(p.is_dir() for p in paths)


@pytest.mark.timeout(180)
async def test_a_run_directory_removed_under_the_server_is_made_again_and_the_workers_start_again(
    tmp_path: Path,
) -> None:
    """Found by an audit: the run directory removed under ``serve --workers 2``
    (systemd-logind's RemoveIPC at its user's last logout does it to /dev/shm), then a
    worker killed: the supervisor started it again for ever, every time failing to
    write its stamp; the live workers had lost their sockets and stamps.  Now the
    supervisor makes the directory again and starts every worker again, and a worker
    that dies after that comes back."""
    import asyncio
    import signal

    import aiohttp

    from tests.workerserver import worker_server

    data = tmp_path / "data"
    async with worker_server(data, workers=2) as server:
        run = next(p for p in (MEMORY_PARENTS[0] / name_for(data.resolve()), data.resolve() / "run") if p.is_dir())
        shutil.rmtree(run)

        async def ready(counts: dict[int, int]) -> None:
            for _ in range(600):
                if all(server.ready_count(i) >= n for i, n in counts.items()):
                    return
                await asyncio.sleep(0.1)
            raise AssertionError(f"the workers did not start again: {server.text()[-3000:]}")

        await ready({1: 2, 2: 2})
        assert "the run directory" in server.text() and mode(run) == 0o700
        found = owner(run)
        assert found is not None and found[1] == data.resolve()
        os.kill(server.worker_pids()[1], signal.SIGKILL)
        await ready({1: 3})
        async with aiohttp.ClientSession() as s:
            for _ in range(100):
                async with s.get(server.url + "/healthz") as r:
                    if r.status == 200:
                        break
                await asyncio.sleep(0.1)
            assert r.status == 200, await r.text()
