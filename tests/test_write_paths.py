"""Where the server writes to PostgreSQL (issue 17, "All table SQL in one store
module"): a fast static check over service/ that keeps the write paths as they are.

* A table writes only through its store: the table's shell and core
  (service/table.py, service/tablecore/, service/handrun.py) hold no SQL and make no
  database call; every op goes to :class:`service.tablestore.TableStore`.
* The SQL that writes a table's rows lives in the table store's modules: tablestore
  (the ops, one fenced transaction each), handstore (a hand's rows, inside those
  transactions) and writer (the group commit, which stores a hand's records of many
  tables in one statement), with the ledger's money statements called inside them.
* Every other module that writes is on the allow-list below with its reason, and
  none of them is a table's play.  A module that starts writing, or an entry that
  no longer writes, fails this test: the list is exact.

It reads the source (``ast``): a write is a string constant (not a docstring) that
holds an INSERT, UPDATE … SET, DELETE FROM, TRUNCATE, COPY or DDL statement, or a
call of ``execute``, ``executemany`` or ``copy_*`` (asyncpg's statements whose SQL
need not be a literal here: a migration's file)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "service"

WRITE_SQL = re.compile(
    r"\b(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|TRUNCATE|COPY\s+\w+|"
    r"CREATE\s+(TABLE|INDEX)|ALTER\s+TABLE|DROP\s+(TABLE|INDEX))\b"
)
WRITE_CALLS = re.compile(r"^(execute|executemany|copy_\w+)$")
DB_CALLS = re.compile(r"^(execute|executemany|copy_\w+|fetch|fetchrow|fetchval|cursor|transaction)$")

TABLE_STORE = {
    "service/tablestore.py": "the table core's ops on PostgreSQL, each one transaction fenced by the table's lease",
    "service/handstore.py": "a hand's rows (records, seeds, its end), inside the table store's transactions",
    "service/writer.py": "the group commit: a hand's records of many tables and their clocks in one statement",
}
NOT_A_TABLES_PLAY = {
    "service/ledger.py": "the double-entry ledger: accounts and transfers (a table's holds and settlements are "
    "called inside the table store's transactions; deposits by the operator's REST calls)",
    "service/store.py": "players, sessions, operator tokens, settings, the audit log and a new table's row "
    "(REST and admin calls, before any play)",
    "service/cluster.py": "table leases: ownership, renewal, takeover (the fencing every table write checks)",
    "service/nodes.py": "the cluster's node rows and their clean-up",
    "service/db.py": "migrations (their SQL files run as they are)",
}
TABLE_LAYER = ("service/table.py", "service/handrun.py", "service/tablecore/")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constant nodes that are docstrings."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _scan(path: Path) -> tuple[list[str], list[str]]:
    """(writes, database calls) in one module, each as 'line: what'."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docs = _docstrings(tree)
    writes, calls = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            writes += [f"{node.lineno}: SQL {m.group(0)!r}" for m in WRITE_SQL.finditer(node.value)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if WRITE_CALLS.match(name):
                writes.append(f"{node.lineno}: .{name}()")
            if DB_CALLS.match(name):
                calls.append(f"{node.lineno}: .{name}()")
    return writes, calls


def _modules() -> dict[str, tuple[list[str], list[str]]]:
    return {str(p.relative_to(ROOT)): _scan(p) for p in sorted(SERVICE.rglob("*.py"))}


def test_the_scan_sees_writes_and_calls() -> None:
    """The scan itself: a write in a string and an execute call are found, a docstring
    that names a statement is not (evidence that proves nothing would pass anything)."""
    found = _scan(SERVICE / "writer.py")
    assert any("INSERT INTO" in w for w in found[0]) and any("UPDATE hands SET" in w for w in found[0])
    found = _scan(SERVICE / "db.py")
    assert any(".execute()" in w for w in found[0])
    assert _scan(SERVICE / "tablecore" / "io.py") == ([], [])  # its docstrings speak of stores, no SQL


def test_only_the_allowed_modules_write_to_the_database() -> None:
    writing = {name: writes for name, (writes, _) in _modules().items() if writes}
    allowed = {**TABLE_STORE, **NOT_A_TABLES_PLAY}
    strays = {name: writes for name, writes in writing.items() if name not in allowed}
    assert not strays, f"writes outside the store modules (move them to the table store, or list why): {strays}"
    stale = sorted(set(allowed) - set(writing))
    assert not stale, f"on the allow-list but writing nothing (remove them): {stale}"


def test_the_table_layer_makes_no_database_call() -> None:
    """The table's shell and core carry out their writes through the table store only."""
    layer = {
        name: calls
        for name, (writes, calls) in _modules().items()
        if name.startswith(TABLE_LAYER) and (writes or calls)
    }
    assert not layer, f"the table layer talks to the database itself: {layer}"
    table = (SERVICE / "table.py").read_text(encoding="utf-8")
    assert "self.store.run(" in table and "self.store.load(" in table


def test_a_hands_records_are_group_committed_when_the_server_runs() -> None:
    """The server gives every table the process's group commit; the table store sends
    a hand's records there, and stores them in a transaction of its own only when it
    has none (a table run alone in a test) or when they must go with another change
    in one transaction (a leave's records with its stand-up, the first record with the
    new hand's row)."""
    lifecycle = ast.parse((SERVICE / "lifecycle.py").read_text(encoding="utf-8"))
    actors = [
        n
        for n in ast.walk(lifecycle)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "TableActor"
    ]
    assert actors and all(any(k.arg == "writer" for k in a.keywords) for a in actors)
    source = (SERVICE / "tablestore.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    direct = sorted(
        {
            f"{fn.name}"
            for fn in ast.walk(tree)
            if isinstance(fn, ast.AsyncFunctionDef)
            for n in ast.walk(fn)
            if isinstance(n, ast.Attribute) and n.attr in {"store_records", "insert_records"}
        }
    )
    assert direct == ["_in_transaction", "_records", "_start"], direct
