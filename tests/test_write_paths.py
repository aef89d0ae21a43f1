"""Where the server writes to PostgreSQL (issue 17, "All table SQL in one store
module"): a fast static check over service/ that keeps the write paths as they are.

* A table writes only through its store: the table's shell and core
  (service/table.py, service/tablecore/, service/handrun.py) hold no SQL and make no
  database call; every op goes to :class:`service.tablestore.TableStore`.
* All of a table's SQL lives in one module, service/tablestore.py (the group
  commit's batch, the ops, loading), with the ledger's money statements called inside
  its transactions; the group commit's batching (service/writer.py) and a hand's
  shapes (service/handstore.py) hold no SQL and make no database call.
* The group commit is the table store's only write path: only its batch function
  opens a transaction, and a table store touches its pool only to load.
* Every other module that writes is on the allow-list below with its reason, and
  none of them is a table's play.  A module that starts writing, or an entry that
  no longer writes, fails this test: the list is exact.

It reads the source (``ast``): a write is a string constant (not a docstring) that
holds an INSERT, UPDATE … SET, DELETE FROM, TRUNCATE, COPY or DDL statement, or a
call of ``execute``, ``executemany`` or ``copy_*`` (asyncpg's statements whose SQL
need not be a literal here: a migration's file)."""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Callable
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
    "service/tablestore.py": "a table's SQL: every op in the group commit's batches, fenced by the table's lease",
}
NOT_A_TABLES_PLAY = {
    "service/ledger.py": "the double-entry ledger: accounts and transfers (a table's holds and settlements are "
    "called inside the table store's transactions; deposits by the operator's REST calls)",
    "service/store.py": "players, sessions, operator tokens, settings, the audit log, the operator's commands "
    "stored with their Idempotency-Key and a new table's row (REST and admin calls, before any play)",
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


def _parse(path: Path) -> ast.Module:
    """``ast.parse`` with the collector off: CPython 3.11's AST constructor counts its
    recursion depth, and a finalizer the collector ran in the middle of it (another
    test's leftover task logging its exception) threw the count off: SystemError, "AST
    constructor recursion depth mismatch" (seen once, in a busy run)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    finally:
        if enabled:
            gc.enable()


def _scan(path: Path) -> tuple[list[str], list[str]]:
    """(writes, database calls) in one module, each as 'line: what'."""
    tree = _parse(path)
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
    found = _scan(SERVICE / "tablestore.py")
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


def test_the_group_commit_and_a_hands_shapes_hold_no_sql() -> None:
    """The group commit is batching only (it calls the store's batch function), and a
    hand's shapes are pure: neither holds a statement nor calls the database."""
    for name in ("writer.py", "handstore.py"):
        assert _scan(SERVICE / name) == ([], []), name
        source = (SERVICE / name).read_text(encoding="utf-8")
        assert "asyncpg" not in source and "service.db" not in source, name


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _calls(node: ast.AST, *names: str) -> bool:
    """``node`` calls a function or method of one of these names."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id in names) or (isinstance(f, ast.Attribute) and f.attr in names)


def _uses(fn: ast.AST, pred: Callable[[ast.AST], bool]) -> bool:
    return any(pred(n) for n in ast.walk(fn))


def test_the_group_commit_is_the_table_stores_only_write_path() -> None:
    """In service/tablestore.py only ``commit_batch`` (the function the group commit
    calls) and the two reads ``TableStore.load`` and ``TableStore.read_log`` (no
    transaction, no statement that writes) take a connection; only ``commit_batch``
    opens the outer transaction (the ops' own ``transaction()`` calls are savepoints on
    the batch's connection: they get no connection of their own); a table store reads
    its pool only to read and to make its group commit when given none; ``run`` hands
    every op to the group commit but the one read (``io.LogOp``); and nothing in
    service/ fences a transaction of its own any more (``fenced``/``fence``)."""
    tree = ast.parse((SERVICE / "tablestore.py").read_text(encoding="utf-8"))
    fns = _functions(tree)

    def calls(name: str) -> object:
        return lambda n: (
            isinstance(n, ast.Call)
            and (
                (isinstance(n.func, ast.Name) and n.func.id == name)
                or (isinstance(n.func, ast.Attribute) and n.func.attr == name)
            )
        )

    connecting = sorted(fn.name for fn in fns if _uses(fn, lambda n: _calls(n, "connection", "acquire", "connect")))
    assert connecting == ["commit_batch", "load", "read_log"], connecting
    for read in (fn for fn in fns if fn.name in ("load", "read_log")):
        assert not _uses(read, lambda n: _calls(n, "transaction"))
        sql = " ".join(n.value for n in ast.walk(read) if isinstance(n, ast.Constant) and isinstance(n.value, str))
        assert not re.search(r"\b(INSERT|UPDATE|DELETE|LOCK|FOR UPDATE|FOR SHARE)\b", sql, re.I), read.name
    pool = sorted(
        fn.name
        for fn in fns
        if _uses(fn, lambda n: isinstance(n, ast.Attribute) and n.attr == "pool" and isinstance(n.value, ast.Name))
    )
    assert pool == ["__init__", "load", "read_log"], pool
    run = next(fn for fn in fns if fn.name == "run")
    returns = [n for n in ast.walk(run) if isinstance(n, ast.Return)]
    reads = [r for r in returns if _uses(r, lambda n: _calls(n, "read_log"))]
    assert len(reads) == 1 and all(
        _uses(r, lambda n: _calls(n, "write")) for r in returns if r not in reads
    )  # every op but the read ends in self.writer.write(...)
    fencing = []
    for path in SERVICE.rglob("*.py"):
        module = ast.parse(path.read_text(encoding="utf-8"))
        fencing += [f"{path.name}:{ast.unparse(n)}" for n in ast.walk(module) if _calls(n, "fenced", "fence")]
    assert not fencing, fencing
    lifecycle = ast.parse((SERVICE / "lifecycle.py").read_text(encoding="utf-8"))
    actors = [
        n
        for n in ast.walk(lifecycle)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "TableActor"
    ]
    assert actors and all(any(k.arg == "writer" for k in a.keywords) for a in actors)  # the process's one
