"""Running it like a card room (issue 11): the operator API and its audit log, token
rotation, /metrics, the OpenAPI document, CORS on public reads, JSON errors
everywhere."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import jsonschema_rs
import pytest_asyncio

from service.app import TABLES
from service.appkeys import CLUSTER, LEDGER_AUDIT
from service.health import decide
from service.ledgeraudit import AUDIT_SECONDS
from service.openapi import OPENAPI
from service.startup import Running, start_server
from tests.conftest import OPERATOR, Api, fresh_database, wait_for
from tests.test_server import seat_of, seat_two, through_seeds
from tests.wsclient import Client


async def audit_actions(api: Api) -> list[tuple[str, str | None, str]]:
    rows = (await api.call("GET", "/api/admin/audit?limit=500"))["audit"]
    return [(r["action"], r["target"], r["outcome"]) for r in rows]


async def test_list_and_show_players_and_hands(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        listed = await api.call("GET", f"/api/admin/players?q={a['id']}", expect=200)
        assert [p["id"] for p in listed["players"]] == [a["id"]] and listed["total"] == 1
        shown = await api.call("GET", f"/api/admin/players/{a['id']}", expect=200)
        assert shown["held"] == 260 and shown["holds"][0]["amount"] == 260 and shown["seats"][0]["table_id"] == table
        live = await api.call("GET", f"/api/admin/hands?table={table}&status=playing", expect=200)
        assert live["total"] == 1 and live["hands"][0]["hand_no"] == hand_no
        assert {p["player_id"] for p in live["hands"][0]["players"]} == {a["id"], b["id"]}
        mine = await api.call("GET", f"/api/admin/hands?player={b['id']}", expect=200)
        assert [h["table_id"] for h in mine["hands"]] == [table]
        detail = await api.call("GET", f"/api/tables/{table}", token=None, expect=200)
        assert detail["status"] == "open" and detail["hand"]["hand_no"] == hand_no and detail["hand"]["phase"] == "play"
        # the one table's row and seats, exactly as the list shows them, beside another table's
        other = await api.table(seats=4)
        listed_tables = {t["id"]: t for t in (await api.call("GET", "/api/tables"))["tables"]}
        assert {k: v for k, v in detail.items() if k != "hand"} == listed_tables[table]
        assert [s["player_id"] for s in detail["seated"]] == [a["id"], b["id"]]
        assert (await api.call("GET", f"/api/tables/{other}", token=None))["seated"] == []
        bad = await api.call("GET", "/api/admin/hands?status=lost", expect=400)
        assert bad["error"]["code"] == "bad_request"
        # paging: an offset from 0 (the message said "from 1", though 0 was taken), a limit from 1
        assert (await api.call("GET", f"/api/admin/players?q={a['id']}&offset=0", expect=200))["total"] == 1
        assert (await api.call("GET", f"/api/admin/players?q={a['id']}&offset=1", expect=200))["players"] == []
        for query, says in (
            ("offset=-1", "offset is an integer from 0 to"),
            ("offset=00x", "from 0"),
            ("limit=0", "limit is an integer from 1 to 500"),
        ):
            bad = await api.call("GET", f"/api/admin/players?{query}", expect=400)
            assert bad["error"]["code"] == "bad_request" and says in bad["error"]["message"], (query, bad)
        assert (await api.call("GET", "/api/admin/players", token=a["token"], expect=401))["error"]["code"] == (
            "unauthorized"
        )
        for c in (ca, cb):
            await c.leave(table, hand_no, seat_of(c))


async def test_deposit_and_withdraw_are_double_entry_and_never_negative(api: Api, server: Running) -> None:
    p = await api.player("cashier", deposit=1_000)
    r = await api.call("POST", f"/api/players/{p['id']}/withdraw", body={"amount": 400}, expect=200)
    assert r["available"] == 600
    refused = await api.call("POST", f"/api/players/{p['id']}/withdraw", body={"amount": 601}, expect=409)
    assert refused["error"]["code"] == "insufficient_balance"
    assert (await api.call("GET", "/api/me", token=p["token"]))["available"] == 600
    assert (await api.call("GET", "/api/ledger"))["ok"] is True
    actions = await audit_actions(api)
    assert ("withdraw", p["id"], "done") in actions
    assert any(
        a == "withdraw" and t == p["id"] and o.startswith("refused: insufficient_balance") for a, t, o in actions
    )


async def test_stand_a_seat_up_now_or_as_its_hand_ends_and_close_a_table(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server)
    idle = await api.player("idle")
    await api.call("POST", f"/api/tables/{table}/sit", token=idle["token"], body={"seat": 3}, expect=200)
    now = await api.call("POST", f"/api/tables/{table}/seats/3/stand", body={}, expect=200)
    assert now == {"table_id": table, "seat": 3, "player_id": idle["id"], "now": True}
    async with Client(server.url, idle["token"], idle["signer"]) as ci:
        snap = (await ci.request({"type": "join", "table_id": table}))["result"]
        assert snap["stood_up"]["reason"] == "operator" and snap["stood_up"]["seat"] == 3  # why the seat went
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        seat_a = seat_of(ca)
        later = await api.call("POST", f"/api/tables/{table}/seats/{seat_a}/stand", body={}, expect=200)
        assert later["now"] is False  # in the hand: stood up as it ends
        closing = await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
        assert closing["status"] == "closing"
        sit = await api.call("POST", f"/api/tables/{table}/sit", token=idle["token"], expect=409)
        assert sit["error"]["code"] == "table_closed"
        await cb.leave(table, hand_no, seat_of(cb))
        await ca.wait_frame(lambda f: f.get("type") == "result")
        await ca.wait_frame(lambda f: f.get("type") == "closed")
        pushes = [f for f in ca.frames if f.get("type") == "table" and f["stood"]]
        stood = {(e["player_id"], e["reason"]) for f in pushes for e in f["stood"]}
        # b left (charged, D15); a stood up by the operator as the hand ended; nobody else was seated
        assert stood == {(b["id"], "left"), (a["id"], "operator")}, stood
        for f in pushes:  # each push's seats are those left after it
            assert not {e["player_id"] for e in f["stood"]} & set(f["seats"].values()), f
    detail = await api.call("GET", f"/api/tables/{table}", token=None)
    assert detail["status"] == "closed" and detail["seated"] == []
    assert server.app[TABLES][table].core.next_start is None  # no new hand is ever dealt
    actions = await audit_actions(api)
    for entry in (("stand_seat", f"{table}/3", "done"), ("stand_seat", f"{table}/{seat_a}", "done")):
        assert entry in actions
    assert ("close_table", table, "done") in actions


async def test_metrics_speak_prometheus(api: Api, server: Running) -> None:
    body = await api.session.get(server.url + "/metrics")
    text = await body.text()
    assert body.status == 200 and body.headers["Content-Type"].startswith("text/plain")
    for series in (
        "rummy_tables ",
        "rummy_seats ",
        "rummy_connections ",
        "rummy_tables_paused ",
        "rummy_ledger_deposited ",
        "rummy_ledger_ok 1.0",
        "rummy_store_seconds_bucket",
        "rummy_actions_stored_total",
        "rummy_hands_total",
    ):
        assert series in text, series


def sample(text: str, name: str) -> float:
    (line,) = [x for x in text.splitlines() if x.startswith(name + " ")]
    return float(line.split()[1])


async def test_metrics_show_every_heartbeat_and_how_late_it_ran(api: Api, server: Running) -> None:
    """Each completed heartbeat is observed: how late it began (a starved process) and
    how long it took (a slow database), so an operator sees leases at risk before
    one is lost."""
    cluster = server.app[CLUSTER]
    await wait_for(lambda: cluster.beats >= 2, timeout=60)
    before = cluster.beats
    text = await (await api.session.get(server.url + "/metrics")).text()
    after = cluster.beats
    for name in ("rummy_heartbeat_late_seconds", "rummy_heartbeat_seconds"):
        assert before <= sample(text, name + "_count") <= after, (name, before, after)
        assert sample(text, name + "_sum") >= 0
        assert sample(text, name + '_bucket{le="+Inf"}') == sample(text, name + "_count")


async def deposited_in_metrics(api: Api, server: Running) -> int:
    text = await (await api.session.get(server.url + "/metrics")).text()
    (line,) = [x for x in text.splitlines() if x.startswith("rummy_ledger_deposited ")]
    return int(float(line.split()[1]))


async def test_metrics_audit_the_ledger_at_most_once_a_minute(api: Api, server: Running) -> None:
    """The ledger's audit reads the whole ledger, so /metrics runs it at most every
    AUDIT_SECONDS (by the audit's own clock, set here) and shows its last figures in
    between; GET /api/ledger audits on every call."""
    audit = server.app[LEDGER_AUDIT]
    clock = [0.0]
    saved = audit.now, audit.at
    audit.now, audit.at = (lambda: clock[0]), None
    try:
        first = await deposited_in_metrics(api, server)
        runs = audit.runs
        await api.player("late", deposit=1_000)
        clock[0] += AUDIT_SECONDS - 1
        assert await deposited_in_metrics(api, server) == first and audit.runs == runs
        assert (await api.call("GET", "/api/ledger"))["deposited"] == first + 1_000
        clock[0] += 1
        assert await deposited_in_metrics(api, server) == first + 1_000 and audit.runs == runs + 1
    finally:
        audit.now, audit.at = saved


async def test_the_openapi_document_matches_the_routes(api: Api, server: Running) -> None:
    routes = {
        (r.method.lower(), r.resource.canonical)  # type: ignore[union-attr]
        for r in server.app.router.routes()
        if r.method != "HEAD"
        and r.resource is not None
        and not r.resource.canonical.startswith(("/web", "/verify"))
        # the socket is in docs/api.md, not OpenAPI
        and r.resource.canonical not in ("/", "/operator", "/favicon.ico", "/ws")
    }
    documented = {(m, p) for p, ops in OPENAPI["paths"].items() for m in ops}
    assert routes == documented, (routes - documented, documented - routes)
    assert OPENAPI["openapi"] == "3.0.3"  # draft 4's integer: no fraction, no exponent (service/openapi.py)
    sit = OPENAPI["paths"]["/api/tables/{table_id}/sit"]["post"]["requestBody"]["content"]["application/json"]
    assert sit["schema"]["properties"]["seat"] == {"type": "integer", "minimum": 0, "maximum": 7}
    scrape = OPENAPI["paths"]["/metrics"]["get"]
    assert scrape["security"] == [{"bearer": []}, {}]  # a scraper on this machine needs no token (no --metrics-listen)
    async with api.session.get(server.url + "/api/openapi.json") as r:
        assert (await r.json())["paths"]["/metrics"]["get"]["security"] == [{"bearer": []}, {}]
    for path, ops in OPENAPI["paths"].items():
        for method, op in ops.items():
            assert any(code.startswith("2") for code in op["responses"]), (method, path)
            for param in op.get("parameters", []):
                assert "pattern" in param["schema"] or param["schema"]["type"] == "integer" or "enum" in param["schema"]


async def test_public_reads_send_cors_and_unknown_routes_answer_json(api: Api, server: Running) -> None:
    async with api.session.get(server.url + "/api/fairness/key", headers={"Origin": "https://audit.example"}) as r:
        assert r.headers.get("Access-Control-Allow-Origin") == "*"
    async with api.session.get(server.url + "/api/ledger", headers={"Authorization": f"Bearer {OPERATOR}"}) as r:
        assert "Access-Control-Allow-Origin" not in r.headers  # not a public read
    async with api.session.get(server.url + "/api/openapi.json") as r:
        assert r.status == 200 and (await r.json())["info"]["title"] == "rummy-table"
    async with api.session.get(server.url + "/nothing/here") as r:
        assert r.status == 404 and (await r.json())["error"]["code"] == "not_found"
    async with api.session.delete(server.url + "/api/tables") as r:
        assert r.status == 405 and (await r.json())["error"]["code"] == "method_not_allowed"
        assert {"GET", "POST"} <= {m.strip() for m in r.headers["Allow"].split(",")}  # RFC 9110 §15.5.6


@pytest_asyncio.fixture
async def own_server(pg_dsn: str, tmp_path: Path) -> AsyncIterator[Running]:
    """A server of its own (on a database of its own): rotating its operator token
    must not disturb the other tests."""
    async with fresh_database(pg_dsn, "op") as dsn:
        running = await start_server(
            host="127.0.0.1", port=0, data_dir=tmp_path / "data", database_url=dsn, operator_token=OPERATOR
        )
        try:
            yield running
        finally:
            await running.stop()


async def test_rotating_the_operator_token_retires_the_old_one_by_name(own_server: Running) -> None:
    async with aiohttp.ClientSession() as session:
        api = Api(own_server.url, session)
        new = (await api.call("POST", "/api/admin/operator-token", body={}, expect=201))["token"]
        old = await api.call("GET", "/api/ledger", expect=401)
        assert old["error"]["code"] == "token_rotated" and "rotated away" in old["error"]["message"]
        assert (await api.call("GET", "/api/ledger", token=new, expect=200))["ok"] is True
        audit = await api.call("GET", "/api/admin/audit", token=new, expect=200)
        assert [r["action"] for r in audit["audit"]][:1] == ["rotate_operator_token"]
        assert (await api.call("GET", "/api/ledger", token="not-a-token", expect=401))["error"]["code"] == (
            "unauthorized"
        )


def test_the_documented_health_answers_are_the_servers() -> None:
    """/healthz in the document: 200 with the whole server's ok state, 503 with the
    degraded one (never the error body), each exactly what service.health decides."""
    ok_worker = {"worker": "n/w1", "pid": 1, "ok": True, "problems": [], "tables": 2, "paused": 0, "connections": 3}
    sick_worker = {**ok_worker, "ok": False, "problems": ["1 table(s) paused, waiting for their database"], "paused": 1}
    silent_worker = {"worker": 2, "ok": False, "error": "worker 2 of this server does not answer right now"}
    responses = OPENAPI["paths"]["/healthz"]["get"]["responses"]
    assert set(responses) == {"200", "503"}
    schema = {
        code: jsonschema_rs.Draft4Validator(r["content"]["application/json"]["schema"]) for code, r in responses.items()
    }
    for states in ([ok_worker], [ok_worker, sick_worker], [ok_worker, silent_worker]):
        status, body = decide(states)
        assert schema[str(status)].is_valid(body), (status, body)
        assert not schema["200" if status == 503 else "503"].is_valid(body), (status, body)
