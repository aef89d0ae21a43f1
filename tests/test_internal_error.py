"""A fault of the server's own (a bug: an exception no handler expects) is still a
typed JSON answer, logged with its traceback: a read's is ``internal_error`` (500,
nothing changed), a write's ``outcome_unknown`` (503: it may have been done; sent again
with its Idempotency-Key it is done at most once).  Before: aiohttp's plain-text 500
(the audit h82)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from service import ledger
from service.startup import Running
from tests.conftest import Api


def broken(*_: Any, **__: Any) -> Any:
    raise RuntimeError("a bug")


async def test_an_unexpected_fault_is_a_typed_500_and_is_logged(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    p = await api.player("internal-error")
    monkeypatch.setattr(ledger, "balance", broken)  # GET /api/me reads the balance
    monkeypatch.setattr(ledger, "deposit", broken)  # POST …/deposit moves money
    with caplog.at_level(logging.ERROR, logger="rummy.app"):
        got = await api.call("GET", "/api/me", token=p["token"], expect=500)
        assert got["error"]["code"] == "internal_error" and "nothing was changed" in got["error"]["message"]
        got = await api.call("POST", f"/api/players/{p['id']}/deposit", body={"amount": 5}, expect=503)
        assert got["error"]["code"] == "outcome_unknown" and "may have been done" in got["error"]["message"]
    logged = [r for r in caplog.records if "an internal error" in r.getMessage()]
    assert len(logged) == 2 and all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in logged)
    monkeypatch.undo()
    assert (await api.call("GET", "/api/me", token=p["token"]))["available"] >= 0  # the server serves on
