"""The tree's own rules: lint, types, and the verifier's independence."""

from __future__ import annotations

import ast
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
