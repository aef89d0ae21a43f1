"""The tree's own rules: lint, types, and the verifier's independence."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STDLIB = set(sys.stdlib_module_names)


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_lint_and_format() -> None:
    lint = run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_strict_on_verifier_and_clean_on_service() -> None:
    r = run("mypy", "--strict", "verifier")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("mypy")
    assert r.returncode == 0, r.stdout + r.stderr


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_verifier_depends_on_stdlib_and_cryptography_only() -> None:
    files = sorted((ROOT / "verifier").rglob("*.py"))
    assert files
    for f in files:
        foreign = imported_roots(f) - STDLIB - {"verifier", "cryptography", "__future__"}
        assert not foreign, f"{f.relative_to(ROOT)} imports {sorted(foreign)}"


def test_no_global_random_in_game_code() -> None:
    for f in sorted((ROOT / "verifier").rglob("*.py")) + sorted((ROOT / "service").rglob("*.py")):
        assert "random" not in imported_roots(f), f"{f.relative_to(ROOT)} imports random; use the fairness stream"


ARROW = re.compile(r"^\s*(?:async\s+)?(?:\([^()]*\)|[A-Za-z_$][\w$]*)\s*=>")


def page_predicates(path: Path) -> list[tuple[int, str]]:
    """The first argument of each ``wait_for_function`` call in ``path`` that is written as a
    string (a literal, an f-string's fixed parts, or a module-level constant), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {
        t.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "wait_for_function"
            and node.args
        ):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append((node.lineno, arg.value))
        elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            found.append((node.lineno, str(arg.values[0].value)))
        elif isinstance(arg, ast.Name) and arg.id in constants:
            found.append((node.lineno, constants[arg.id]))
    return found


def test_page_predicates_are_functions_so_a_strict_csp_lets_them_poll() -> None:
    """Playwright evals a bare expression again on every poll, outside the CDP call that may
    eval; our pages' CSP forbids eval, so such a wait fails whenever its first look is false
    (it failed CI once). A function is evaluated once and then only called."""
    files = sorted((ROOT / "tests").glob("*.py"))
    predicates = [(f, line, text) for f in files for line, text in page_predicates(f)]
    assert len(predicates) > 50, "the scan found too few waits to be looking at the right calls"
    bare = [f"{f.name}:{line}: {text[:60]!r}" for f, line, text in predicates if not ARROW.match(text)]
    assert not bare, "wait_for_function takes a function here, not an expression:\n" + "\n".join(bare)
