"""Every admin command works against any node, every time (issue 18, item 1): a
command for a table another node serves is answered ``307`` with that node's public
URL, and ``rummy-table admin`` sends it there again — POST, body and token included
(the urllib client it replaced gave up: "answered POST … with HTTP 307").  Two nodes
in this process on a database of their own; the same commands on the one port of a
real ``serve --workers 2`` are in tests/test_one_port.py."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp

from service.app import TABLES
from tests.conftest import Api
from tests.test_admin_cli import adm, adm_json
from tests.test_handover import two_nodes


async def test_admin_commands_for_another_nodes_table_follow_its_redirect(pg_dsn: str, tmp_path: Path) -> None:
    async with two_nodes(pg_dsn, tmp_path, "anywhere") as n, aiohttp.ClientSession() as session:
        created = await adm_json(
            n.a.url,
            "create-table",
            "--seats",
            "4",
            "--point-value",
            "2",
            "--commission-bps",
            "250",
            "--turn-seconds",
            "45",
        )
        table = created["id"]
        assert table in n.a.app[TABLES]  # the node that creates a table serves it
        assert (created["seats"], created["point_value"], created["commission_bps"], created["turn_seconds"]) == (
            4,
            2,
            250,
            45,
        )
        # b does not serve it: each command there is a 307 to a's public URL, followed
        assert table not in n.b.app[TABLES]
        async with session.get(f"{n.b.url}/api/tables/{table}", allow_redirects=False) as r:
            assert r.status == 307 and r.headers["Location"].startswith(n.a.url)
        api = Api(n.a.url, session)
        for k in range(3):
            p = await api.player(f"s{k}")
            await api.call("POST", f"/api/tables/{table}/sit", token=p["token"], body={"seat": k}, expect=200)
            shown = await adm(n.b.url, "table", table)
            assert re.search(r"^seats\s+1/4$", shown, re.M) and re.search(r"^commission bps\s+250$", shown, re.M)
            out = await adm(n.b.url, "stand", table, str(k))  # a POST, sent again to a
            assert out.strip() == f"table {table} seat {k} (player {p['id']}) stands up now"
        err = await adm(n.b.url, "stand", table, "0", expect=4)  # a's refusal, word for word
        assert err.endswith("(not_seated)"), err
        out = await adm(n.b.url, "close", table)
        assert out.strip() == f"table {table} is closed"
        audit = await adm_json(n.b.url, "audit", "--limit", "20")
        actions = [(e["action"], e["outcome"].split(":")[0]) for e in audit["audit"]]
        assert actions.count(("stand_seat", "done")) == 3 and ("stand_seat", "refused") in actions
        assert ("close_table", "done") in actions and ("create_table", "done") in actions


async def test_create_table_refusals_are_the_servers(pg_dsn: str, tmp_path: Path) -> None:
    """A table the rules refuse is refused by the server, one line with its code and
    the decision it breaks; nothing is created."""
    async with two_nodes(pg_dsn, tmp_path, "badtable") as n:
        err = await adm(n.b.url, "create-table", "--seats", "5", expect=4)
        assert "(bad_table)" in err and "5" in err, err
        err = await adm(n.b.url, "create-table", "--seats", "4", "--min-players", "6", expect=4)
        assert "(bad_table)" in err and "min_players" in err, err
        assert (await adm_json(n.a.url, "tables"))["tables"] == []
        # both refusals are in the audit log, the one the body check refused too
        audit = (await adm_json(n.a.url, "audit", "--limit", "20"))["audit"]
        refused = [e for e in audit if e["action"] == "create_table"]
        assert len(refused) == 2 and all(e["outcome"].startswith("refused: bad_table") for e in refused), refused
