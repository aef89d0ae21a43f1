"""The verifier installs alone (issue 19): ``pip install ./verifier`` into a fresh
virtual environment gives ``rummy-verify`` with ``cryptography`` as its only
third-party dependency (and cryptography's own, cffi and pycparser), and that
``rummy-verify`` verifies every transcript the package ships, with the evidence file,
and fails a tampered one.  The server's distribution ships the same directory as its
``verifier`` package: one copy of the code, described the same way by both projects.

The install needs cryptography's wheel from pip's cache or the package index.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from verifier import __version__, vectors

ROOT = Path(__file__).resolve().parent.parent
KEY_HEX = vectors.TEST_SIGNER.public_bytes.hex()
# What may be in the environment afterwards: the verifier, cryptography and
# cryptography's own dependencies (the environment is made without pip, and this
# suite's pip installs into it with --python).
ALLOWED = {"rummy-verify", "cryptography", "cffi", "pycparser"}


def run(*cmd: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # No PYTHONPATH: the environment's Python must find the installed verifier, not
    # this checkout's.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_pip_install_verifier_alone_brings_only_cryptography_and_verifies_the_vectors(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    r = run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", py]
    # A copy of verifier/ as a clean clone has it (an install builds in place: build/, *.egg-info).
    src = tmp_path / "clone"
    shutil.copytree(
        ROOT / "verifier", src / "verifier", ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    )
    r = run(*pip, "install", "--no-input", "./verifier", cwd=src)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    # Everything else runs where no verifier/ directory is at hand.
    here = tmp_path / "elsewhere"
    here.mkdir()
    r = run(*pip, "list", "--format", "json", cwd=here)
    assert r.returncode == 0, r.stderr
    installed = {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(r.stdout)}
    assert set(installed) <= ALLOWED, f"pip install ./verifier brought {sorted(set(installed) - ALLOWED)}"
    assert installed["rummy-verify"] == __version__ and "cryptography" in installed, installed
    r = run(py, "-c", "import importlib.metadata as m; print(m.requires('rummy-verify'))", cwd=here)
    assert r.stdout.strip() == "['cryptography>=42']", r.stdout + r.stderr
    r = run(py, "-c", "import service", cwd=here)
    assert r.returncode != 0 and "No module named 'service'" in r.stderr, "the server came along"

    exe = venv / "bin" / "rummy-verify"
    r = run(exe, "--version", cwd=here)
    assert r.returncode == 0 and r.stdout.startswith(f"rummy-verify {__version__} "), r.stdout + r.stderr
    r = run(py, "-c", "import verifier.vectors as v; print(v.DIR)", cwd=here)
    shipped = Path(r.stdout.strip())
    assert shipped.is_relative_to(venv), shipped  # the installed copy's vectors, not this checkout's
    transcripts = sorted(shipped.glob("*transcript*.json"))
    assert len(transcripts) == len(list(vectors.DIR.glob("*transcript*.json"))) >= 11, transcripts
    for t in transcripts:
        v1 = not t.name.startswith("v2-")  # rummy-pf/v1 verifies only when asked (§14)
        r = run(exe, "--key", KEY_HEX, t, *(["--allow-v1"] if v1 else []), cwd=here)
        assert r.returncode == 0, (t.name, r.stdout[-2000:], r.stderr[-2000:])
        assert ("v1_server_only" in r.stdout) == v1 or r.returncode != 0, (t.name, r.stdout)
    # the adversarial vectors come along too (the browser verifier's tests and auditors read them)
    assert len(list(shipped.glob("adversarial/*.json"))) == len(list(vectors.DIR.glob("adversarial/*.json"))) > 0
    evidence = shipped / "v2-evidence-4seat-two-players-seat1.json"
    r = run(exe, "--key", KEY_HEX, shipped / "v2-transcript-4seat-two-players.json", "--receipts", evidence, cwd=here)
    counted = re.search(r"evidence: (\d+) of (\d+) items checked", r.stdout)
    assert r.returncode == 0 and counted and counted[1] == counted[2] != "0", r.stdout + r.stderr
    # …and it checks: one changed card of the deck fails.
    t = json.loads((shipped / "v2-transcript-6seat-everything.json").read_text())
    deck = t["transcript"]["deck"]
    deck[0], deck[1] = deck[1], deck[0]
    (tmp_path / "tampered.json").write_text(json.dumps(t))
    r = run(exe, "--key", KEY_HEX, tmp_path / "tampered.json", cwd=here)
    assert r.returncode == 1, r.stdout + r.stderr


def test_both_projects_ship_the_one_verifier_directory() -> None:
    """verifier/pyproject.toml makes the directory itself the package; the top-level
    project ships the same directory under the same name, with the same data files and
    the same ``rummy-verify`` command, and depends on at least what it needs."""
    top = tomllib.loads((ROOT / "pyproject.toml").read_text())
    alone = tomllib.loads((ROOT / "verifier" / "pyproject.toml").read_text())
    assert alone["project"]["name"] == "rummy-verify"
    assert alone["project"]["dependencies"] == ["cryptography>=42"]
    packages = ["verifier", "verifier.vectors", "verifier.vectors.adversarial"]
    assert alone["tool"]["setuptools"]["packages"] == packages
    assert alone["tool"]["setuptools"]["package-dir"] == {"verifier": "."}
    assert alone["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "verifier.__version__"}
    assert set(packages) <= set(top["tool"]["setuptools"]["packages"])
    assert not set(packages) & set(top["tool"]["setuptools"].get("package-dir", {}))  # ./verifier, the same directory
    for p in packages:
        assert top["tool"]["setuptools"]["package-data"][p] == alone["tool"]["setuptools"]["package-data"][p], p
    assert top["project"]["scripts"]["rummy-verify"] == alone["project"]["scripts"]["rummy-verify"]
    assert "cryptography>=42" in top["project"]["dependencies"]
