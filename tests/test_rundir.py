"""The run directory of ``serve --workers N`` (service/rundir.py): in memory when
there is room, so that a full data disk cannot kill the workers through their
memory-mapped metrics files (the outage drill's SIGBUS); made afresh, this user's
only, and never through a name someone else planted."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.rundir import MEMORY_PARENTS, UNIX_PATH_MAX, name_for, run_dir


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
    assert again == run and list(again.iterdir()) == []
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
        run.rmdir()
