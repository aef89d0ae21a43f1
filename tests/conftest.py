"""Shared fixtures: one embedded PostgreSQL for the whole session, and a served app
on 127.0.0.1 in front of it; servers on databases of their own for tests that must
not meet the others' state.  Also the suite's rules that hold in any order: Hypothesis
derandomized (each property test draws the same examples in every run, whatever ran
before it), and no browser test without Chromium."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import pytest
import pytest_asyncio
from hypothesis import settings
from playwright.async_api import Browser

from service.db import EmbeddedPostgres, create_pool, migrate
from service.startup import Running, start_server
from service.table import Settings
from tests.browser import CHROMIUM, chromium_missing, launch
from verifier.signing import Signer

OPERATOR = "test-operator-token"

# tests/hangdump.py: a hung test's asyncio tasks, written out before pytest-timeout stops it
pytest_plugins = ["tests.hangdump"]

# Bytecode: the suite starts some 290 Python processes (servers, the CLIs, the verifier
# on every tampered transcript), and each would compile the project's modules again
# where PYTHONDONTWRITEBYTECODE is set (this machine's default); the test modules'
# rewritten assertions too.  The run writes them to the usual gitignored __pycache__
# folders, as Python does by default (docs/benchmarks.md: a second run on one clone took
# 297 s against 330 s; a first run, whose processes all start cold, gains little).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Hypothesis: "suite" (the default) derives each test's examples from the test itself
# (derandomize), so a run does not depend on the order, on pytest-randomly's seed or on
# what an earlier run found, and keeps no example database.  HYPOTHESIS_PROFILE=explore
# draws fresh examples every run, for hunting; a failure it finds is pasted into the
# test as an @example.
settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The run's temporary files go to a directory of its own, not to pytest's shared
    /tmp/pytest-of-USER: any other pytest run that starts on the machine makes that
    folder private again (mode 700), and the embedded PostgreSQL, which runs as another
    user and was started in it, then loses its own data directory mid-run.  Kept when a
    test failed, else removed at the end; --basetemp still chooses."""
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        config.option.basetemp = tempfile.mkdtemp(prefix="rummy-pytest-")
        config.stash[_OWN_BASETEMP] = config.option.basetemp


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is not None and not config.stash.get(_FAILED, False):
        shutil.rmtree(own, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_FAILED] = exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)


_OWN_BASETEMP = pytest.StashKey[str]()
_FAILED = pytest.StashKey[bool]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that drives Chromium (it takes the ``browser`` fixture, or its module
    uses ``tests.browser``) is marked ``browser``."""
    for item in items:
        module = getattr(item, "module", None)
        uses_module = module is not None and any(
            getattr(v, "__module__", None) == "tests.browser" for v in vars(module).values()
        )
        if uses_module or "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    _xdist_groups(config, items)


def _xdist_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-xdist's ``--dist loadgroup`` (pyproject's addopts): the tests of one
    ``xdist_group`` run on one worker.  xdist 3.8 tags them by assigning ``_nodeid``,
    which pytest 9.2 no longer reads (its node ids are ``_id``), so every group was
    spread over the workers and a module fixture such as the audit room was built in
    each; this tags them as xdist means to.  A worker only; nothing when the item's id
    already carries its group."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import coerce_node_id  # pytest 9.2's node ids
    except ImportError:  # an older pytest: xdist's own tag works there
        return
    for item in items:
        names = sorted(
            {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        )
        if names and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Browser tests selected and no Chromium (or the nginx test and no nginx): stop
    before any test runs, with one line that says what to install (the tests drive
    Debian's chromium, never a download)."""
    if hasattr(session.config, "workerinput"):
        return  # a worker of pytest-xdist: the controller says it (below)
    browser = any(item.get_closest_marker("browser") for item in session.items)
    _missing_tools([str(item.path) for item in session.items], browser=browser)


def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under pytest-xdist (-n 3) the workers collect; the controller stops the run on
    their list, before any test, with the same one line as a run without workers."""
    files = {Path(i.split("::")[0]) for i in ids}
    browser = any(_DRIVES_CHROMIUM.search(f.read_text(encoding="utf-8")) for f in files if f.is_file())
    _missing_tools([str(f) for f in files], browser=browser)


#: a module that drives Chromium: it uses tests/browser.py or takes the session's ``browser`` fixture
_DRIVES_CHROMIUM = re.compile(r"tests\.browser|\bbrowser: Browser\b")


def _missing_tools(paths: list[str], *, browser: bool) -> None:
    if chromium_missing() and browser:
        pytest.exit(
            f"no Chromium at {CHROMIUM}: the browser tests need it; install Debian's package"
            " (apt-get install chromium) or set CHROMIUM to its path",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    # the deploy recipe's test runs Debian's nginx in front of a server (the same rule)
    nginx = "/usr/sbin/nginx"
    if not os.path.isfile(nginx) and any(Path(p).name == "test_deploy_nginx.py" for p in paths):
        pytest.exit(
            f"no nginx at {nginx}: tests/test_deploy_nginx.py runs docs/deploy/nginx.conf in front of a"
            " server; install Debian's package (apt-get install nginx-light or nginx)",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


@pytest.fixture(scope="session")
def pg_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL: DATABASE_URL if set, else the embedded server, started
    once per test session."""
    if os.environ.get("TEST_DATABASE_URL"):
        yield os.environ["TEST_DATABASE_URL"]
        return
    pg = EmbeddedPostgres(tmp_path_factory.mktemp("pg"))
    dsn = pg.start()
    try:
        yield dsn
    finally:
        pg.stop()


@contextlib.asynccontextmanager
async def fresh_database(pg_dsn: str, prefix: str = "t") -> AsyncIterator[str]:
    """A database of its own on the session's PostgreSQL (its DSN), dropped after:
    for a server whose token, keys or tables must not meet the other tests'."""
    name = f"{prefix}_{secrets.token_hex(5)}"
    admin = await asyncpg.connect(pg_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield urlunsplit(urlsplit(pg_dsn)._replace(path=f"/{name}"))
    finally:
        admin = await asyncpg.connect(pg_dsn)
        try:
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@contextlib.asynccontextmanager
async def fresh_pool(pg_dsn: str, prefix: str, max_size: int = 10) -> AsyncIterator[tuple[str, asyncpg.Pool]]:
    """A fresh, migrated database and a pool on it: (its DSN, the pool)."""
    async with fresh_database(pg_dsn, prefix) as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        pool = await create_pool(dsn, max_size=max_size)
        try:
            yield dsn, pool
        finally:
            await pool.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium for the session's browser tests; each test opens contexts
    (its own cookies, storage and pages) in it."""
    async with launch() as b:
        yield b


TEST_SETTINGS = Settings(commit_seconds=3, reveal_seconds=3, next_hand_delay=1.0, queue_size=64)


@contextlib.asynccontextmanager
async def server_on(dsn: str, data_dir: Path) -> AsyncIterator[Running]:
    """A server like the session's (its operator token and settings) on ``dsn``."""
    running = await start_server(
        host="127.0.0.1",
        port=0,
        data_dir=data_dir,
        database_url=dsn,
        operator_token=OPERATOR,
        settings=TEST_SETTINGS,
    )
    try:
        yield running
    finally:
        await running.stop()


@pytest_asyncio.fixture(scope="session")
async def server(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    async with server_on(pg_dsn, Path(tmp_path_factory.mktemp("data"))) as running:
        yield running


@contextlib.asynccontextmanager
async def server_of_its_own(pg_dsn: str, data_dir: Path, prefix: str) -> AsyncIterator[Running]:
    """A server like the session's on a fresh database: for tests that count or
    fingerprint the whole database, which the session server's other tables (still
    playing, in any order) would move."""
    async with fresh_database(pg_dsn, prefix) as dsn, server_on(dsn, data_dir) as running:
        yield running


class Api:
    """A small REST client for the tests."""

    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base, self.session = base, session

    async def call(
        self, method: str, path: str, token: str | None = OPERATOR, body: Any = None, expect: int | None = None
    ) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.session.request(method, self.base + path, json=body, headers=headers) as r:
            data = await r.json()
            if expect is not None:
                assert r.status == expect, (r.status, data)
            return data

    async def player(self, name: str = "p", deposit: int = 100_000) -> dict[str, Any]:
        """A new player with a deposit and a registered key; ``p["signer"]`` holds the
        private key its client signs with."""
        signer = Signer.generate()
        body = {"name": name, "deposit": deposit, "public_key": signer.public_bytes.hex()}
        p: dict[str, Any] = await self.call("POST", "/api/players", body=body, expect=201)
        p["signer"] = signer
        return p

    async def table(self, **rules: int) -> str:
        t = await self.call("POST", "/api/tables", body=rules, expect=201)
        return str(t["id"])


@pytest_asyncio.fixture
async def api(server: Running) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(server.url, session)


async def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("timed out waiting")
        await asyncio.sleep(interval)
