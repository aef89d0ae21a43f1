"""What `pip install .` ships is the whole tree: every package and every data file.

CI installs the project without -e (README's command), so a package left out of
pyproject.toml's explicit list imports fine from the checkout and fails only in the
installed copy (it did: service/tablecore).  These checks read pyproject.toml against the
tree, with no install, so they fail in the fast suite the moment a module or a web asset is
added in a place the list does not cover.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setuptools(pyproject: Path) -> dict[str, object]:
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    tool = data["tool"]["setuptools"]
    assert isinstance(tool, dict)
    return tool


def _package_dir(name: str, mapping: dict[str, str], base: Path) -> Path:
    """Where setuptools takes package ``name`` from (package-dir, else the dotted path)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in mapping:
            return base.joinpath(mapping[prefix], *parts[i:])
    return base.joinpath(*parts)


def test_every_python_package_of_the_server_distribution_is_listed() -> None:
    tool = _setuptools(ROOT / "pyproject.toml")
    listed = set(tool["packages"])  # type: ignore[arg-type]
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("service", "verifier")
        for init in (ROOT / top).rglob("__init__.py")
        if "node_modules" not in init.parts
    }
    missing = found - listed
    assert not missing, f"packages with an __init__.py that pyproject.toml does not ship: {sorted(missing)}"
    mapping = tool.get("package-dir", {})
    assert isinstance(mapping, dict)
    for name in listed:
        assert _package_dir(name, mapping, ROOT).is_dir(), f"pyproject.toml lists {name}, which has no folder"


def _shipped(tool: dict[str, object], base: Path) -> set[Path]:
    mapping = tool.get("package-dir", {})
    data = tool.get("package-data", {})
    assert isinstance(mapping, dict) and isinstance(data, dict)
    out: set[Path] = set()
    for package, patterns in data.items():
        folder = _package_dir(package, mapping, base)
        for pattern in patterns:
            out.update(p.resolve() for p in folder.glob(pattern) if p.is_file())
    return out


def test_every_web_asset_and_migration_and_vector_is_package_data() -> None:
    tool = _setuptools(ROOT / "pyproject.toml")
    shipped = _shipped(tool, ROOT)
    wanted = [p for p in (ROOT / "service" / "web").rglob("*") if p.is_file()]
    wanted += list((ROOT / "sql").glob("*.sql"))
    wanted += [p for p in (ROOT / "verifier" / "vectors").rglob("*.json")]
    assert len(wanted) > 50  # the web pages, the migrations and the vectors are there to check
    missing = sorted(str(p.relative_to(ROOT)) for p in wanted if p.resolve() not in shipped)
    assert not missing, f"files an installed server would lack: {missing}"


def test_the_verifier_alone_ships_its_modules_and_vectors() -> None:
    base = ROOT / "verifier"
    tool = _setuptools(base / "pyproject.toml")
    mapping = tool.get("package-dir", {})
    assert isinstance(mapping, dict)
    listed = set(tool["packages"])  # type: ignore[arg-type]
    found = {"verifier"} | {
        "verifier." + ".".join(i.parent.relative_to(base).parts) for i in base.rglob("*/__init__.py")
    }
    assert not found - listed, sorted(found - listed)
    shipped = _shipped(tool, base)
    vectors = list((base / "vectors").rglob("*.json"))
    assert vectors and all(v.resolve() in shipped for v in vectors)


def test_every_folder_of_data_is_a_listed_package() -> None:
    """A folder setuptools can import (a web asset folder, the adversarial vectors)
    and the list leaves out is shipped with a "Package would be ignored" warning
    today and may not be tomorrow: each folder with files is listed, in both
    distributions."""
    for pyproject, base, prefix in (
        (ROOT / "pyproject.toml", ROOT, ""),
        (ROOT / "verifier/pyproject.toml", ROOT / "verifier", "verifier."),
    ):
        listed = set(_setuptools(pyproject)["packages"])  # type: ignore[arg-type]
        for top in ("service/web", "verifier/vectors") if not prefix else ("vectors",):
            for folder in [base / top, *(base / top).rglob("*")]:
                if (
                    folder.is_dir()
                    and "node_modules" not in folder.parts
                    and any(p.is_file() for p in folder.iterdir())
                ):
                    name = prefix + ".".join(folder.relative_to(base).parts)
                    assert name in listed, f"{pyproject.relative_to(ROOT)} does not list {name}"
