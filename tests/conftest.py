"""Shared fixtures: one embedded PostgreSQL for the whole session, and a served app
on 127.0.0.1 in front of it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import pytest
import pytest_asyncio

from service.cli import Running, start_server
from service.db import EmbeddedPostgres, create_pool, migrate
from service.table import Settings
from verifier.signing import Signer

OPERATOR = "test-operator-token"


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


@pytest_asyncio.fixture(scope="session")
async def server(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    running = await start_server(
        host="127.0.0.1",
        port=0,
        data_dir=Path(tmp_path_factory.mktemp("data")),
        database_url=pg_dsn,
        operator_token=OPERATOR,
        settings=Settings(commit_seconds=3, reveal_seconds=3, next_hand_delay=1.0, queue_size=64),
    )
    try:
        yield running
    finally:
        await running.stop()


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
