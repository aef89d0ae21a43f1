"""Issue 18 item 6: connections that send their request head slowly (slowloris) or
sit idle are closed (service.httpguard), and no log line can be forged from a
request: CR, LF and NUL in a path are escaped (service.logsafe)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from service.httpguard import HttpLimits
from service.logs import JsonFormatter
from service.logsafe import SafeFormatter, escape
from service.startup import Running, start_server
from tests.conftest import OPERATOR, fresh_database

LIMITS = HttpLimits(header_seconds=0.5, idle_seconds=1.0)
HANG = 60.0  # a bound only a hang exceeds; nothing here measures time


@pytest_asyncio.fixture
async def guarded(pg_dsn: str, tmp_path: Path) -> AsyncIterator[Running]:
    """A server of its own with short limits (its own database: nothing shared)."""
    async with fresh_database(pg_dsn, "hg") as dsn:
        running = await start_server(
            host="127.0.0.1",
            port=0,
            data_dir=tmp_path / "data",
            database_url=dsn,
            operator_token=OPERATOR,
            http_limits=LIMITS,
        )
        try:
            yield running
        finally:
            await running.stop()


async def _slow_client(host: str, port: int, stop: asyncio.Event) -> bytes:
    """A slowloris: a request line, then a header line now and then, never the blank
    line that ends the head.  Returns what the server sent before it closed."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        await writer.drain()
        n = 0
        while not stop.is_set():
            try:
                got = await asyncio.wait_for(reader.read(1024), 0.1)
            except ConnectionError:  # closed with a reset (header lines it had not read yet)
                return b""
            except TimeoutError:
                writer.write(b"X-Slow-%d: y\r\n" % n)
                n += 1
                try:
                    await writer.drain()
                except ConnectionError:
                    return b""
                continue
            return got  # b"" (closed) or whatever the server said before closing
        return b"still open"
    finally:
        writer.close()


async def test_slow_request_heads_and_idle_connections_are_closed(guarded: Running) -> None:
    host, port = "127.0.0.1", int(guarded.url.rsplit(":", 1)[1])
    stop = asyncio.Event()
    slow = [asyncio.create_task(_slow_client(host, port, stop)) for _ in range(12)]
    silent = [await asyncio.open_connection(host, port) for _ in range(4)]  # connect, send nothing
    # A well-behaved client is answered meanwhile.
    async with aiohttp.ClientSession() as s, s.get(guarded.url + "/healthz") as r:
        assert r.status == 200
    done, pending = await asyncio.wait(slow, timeout=HANG)
    stop.set()
    assert not pending, f"{len(pending)} slow connections still open"
    assert all(t.result() != b"still open" for t in done)
    for reader, writer in silent:
        assert await asyncio.wait_for(reader.read(), HANG) == b""  # closed by the server
        writer.close()
    # A keep-alive connection that goes quiet after an answer is closed too.
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), HANG)  # read() returns once the server closes
    assert answer.startswith(b"HTTP/1.1 200")
    writer.close()


def test_limits_are_checked() -> None:
    for bad in (0, -1, 3601, float("nan"), True):
        with pytest.raises(ValueError):
            HttpLimits(header_seconds=bad)


@pytest.mark.parametrize("formatter", [SafeFormatter(), JsonFormatter()], ids=["text", "json"])
async def test_no_log_line_can_be_forged_from_a_path(server: Running, formatter: logging.Formatter) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    access = logging.getLogger("rummy.access")
    access.addHandler(handler)
    old_level = access.level
    access.setLevel(logging.INFO)
    paths = [
        "/api/x%0a2026-12-01 INFO rummy.access: GET /forged 200",
        "/api/x%00nul",
        "/api/x%0d%0aHost",
        "/api/x%e2%80%a8",
    ]
    try:
        async with aiohttp.ClientSession() as s:
            for path in paths:
                async with s.get(server.url + path) as r:
                    assert r.status == 404
    finally:
        access.removeHandler(handler)
        access.setLevel(old_level)
    text = out.getvalue()
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == len(paths) + 1, text  # one line a request, no more
    assert "\x00" not in text and "\r" not in text
    if isinstance(formatter, SafeFormatter):
        assert "\u2028" not in text
    if isinstance(formatter, JsonFormatter):
        assert [json.loads(line)["path"] for line in lines[:-1]] == [
            "/api/x\n2026-12-01 INFO rummy.access: GET /forged 200",
            "/api/x\x00nul",
            "/api/x\r\nHost",
            "/api/x\u2028",
        ]
    else:
        assert "GET /api/x\\n2026-12-01 INFO rummy.access: GET /forged 200 404" in lines[0]
        assert "/api/x\\x00nul" in lines[1]


def test_a_traceback_stays_one_record() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(SafeFormatter())
    log = logging.getLogger("rummy.test.logsafe")
    log.addHandler(handler)
    try:
        try:
            raise ValueError("bad name 'a\nFORGED INFO x'")
        except ValueError:
            log.error("refused %s", "b\rc", exc_info=True)
    finally:
        log.removeHandler(handler)
    lines = out.getvalue().rstrip("\n").split("\n")
    assert lines[0].endswith("refused b\\rc")
    assert all(line.startswith("    ") for line in lines[1:])  # continuation lines, never a record of their own
    assert "\n    FORGED INFO x'" in out.getvalue()  # the exception's own line break: indented too
    assert escape("plain") == "plain" and escape("a\\b") == "a\\\\b"
