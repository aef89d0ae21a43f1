"""``rummy-verify TRANSCRIPT`` (issue 3, item 3)."""

from __future__ import annotations

import base64
import functools
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_tamper import forge, load, m_tokens
from verifier import vectors
from verifier.fairness import player_commit
from verifier.hand import TableRules
from verifier.signing import public_pem
from verifier.strategy import choose
from verifier.transcript import HandRecorder

CMD = [sys.executable, "-m", "verifier.cli"]
RICH = str(Path(vectors.DIR) / "transcript-6seat-everything.json")
KEY_HEX = vectors.TEST_SIGNER.public_bytes.hex()


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False)


def test_success_prints_a_summary_and_the_unpinned_fingerprint() -> None:
    r = run(RICH)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "every check passed" in out and "winner: seat" in out and "house commission" in out
    assert "player-rich-0" in out and "UNPINNED" in out
    assert vectors.TEST_SIGNER.fingerprint in out


@pytest.mark.parametrize("form", ["hex", "base64", "pem"])
def test_key_can_be_pinned_in_three_forms(form: str, tmp_path: Path) -> None:
    raw = vectors.TEST_SIGNER.public_bytes
    key = {"hex": raw.hex(), "base64": base64.b64encode(raw).decode(), "pem": ""}[form]
    if form == "pem":
        pem = tmp_path / "server.pem"
        pem.write_text(public_pem(raw))
        key = str(pem)
    r = run("--key", key, RICH)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(pinned)" in r.stdout


def test_wrong_pinned_key_fails_at_signature() -> None:
    r = run("--key", "11" * 32, RICH)
    assert r.returncode == 1 and "check 'signature' failed" in r.stdout


def test_discrepancy_names_check_record_expected_and_found(tmp_path: Path) -> None:
    t = load("transcript-6seat-everything.json")
    m_tokens(t)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(forge(t)))
    r = run("--key", KEY_HEX, str(bad))
    assert r.returncode == 1
    assert "check 'settlement' failed" in r.stdout and "expected:" in r.stdout and "found:" in r.stdout
    j = run("--json", "--key", KEY_HEX, str(bad))
    report = json.loads(j.stdout)
    assert j.returncode == 1 and report["ok"] is False and report["failure"]["check"] == "settlement"
    assert report["checks_passed"][-1] == "penalties"


def test_json_success() -> None:
    r = run("--json", RICH)
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["ok"] and report["summary"]["winner"] == 5
    assert sum(report["summary"]["deltas"].values()) + report["summary"]["commission"] == 0


def test_standard_input() -> None:
    r = run("-", stdin=Path(RICH).read_text())
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("content", ["not json", "[]", '{"hello": 1}'])
def test_unreadable_input_exits_2(content: str, tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text(content)
    r = run(str(f))
    assert r.returncode == 2 and "rummy-verify:" in r.stderr


def test_missing_file_exits_2() -> None:
    assert run("/no/such/transcript.json").returncode == 2


@pytest.fixture
def http_server() -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(vectors.DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_url(http_server: str) -> None:
    r = run("--key", KEY_HEX, f"{http_server}/transcript-4seat-two-players.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert run(f"{http_server}/missing.json").returncode == 2


def test_directory_counts_and_lists_failures(tmp_path: Path) -> None:
    for name in ("transcript-4seat-two-players.json", "transcript-void.json"):
        (tmp_path / name).write_text(json.dumps(load(name)))
    t = load("transcript-6seat-everything.json")
    m_tokens(t)
    (tmp_path / "tampered.json").write_text(json.dumps(forge(t)))
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1
    assert "2 passed, 1 failed" in r.stdout and "tampered.json" in r.stdout
    assert "3/3" in r.stderr  # the progress bar
    (tmp_path / "tampered.json").unlink()
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 0 and "2 passed, 0 failed" in r.stdout


def _table_history(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    prev = None
    for hand in range(1, n + 1):
        seats = [(0, "ann"), (1, "bo")]
        rec = HandRecorder(
            vectors.TEST_SIGNER,
            "chained",
            hand,
            TableRules(seats=4),
            seats,
            hand % 2,
            vectors.label(f"chain/{hand}"),
            **({"prev_head": prev} if prev else {}),
        )
        rec.commit()
        commits = {s: player_commit(s, vectors.label(f"chain/{hand}/{s}")) for s, _ in seats}
        rec.commitments(commits)
        rec.reveal({s: vectors.label(f"chain/{hand}/{s}") for s, _ in seats}, commits)
        rec.deal()
        while not rec.ended:
            assert rec.state is not None
            rec.act(choose(rec.state, rec.state.turn, allow_drop=False))
        t = rec.transcript()
        prev = str(t["head"])
        out.append(t)
    return out


def test_directory_checks_a_tables_chain_across_hands(tmp_path: Path) -> None:
    hands = _table_history(3)
    for i, t in enumerate(hands):
        (tmp_path / f"h{i}.json").write_text(json.dumps(t))
    assert run("--key", KEY_HEX, str(tmp_path)).returncode == 0
    # Hand 3 re-signed as if it followed another history: its own checks pass, the table's chain does not.
    forged = hands[2]
    forged["log"][0]["header"]["prev_head"] = "00" * 32  # type: ignore[index]
    (tmp_path / "h2.json").write_text(json.dumps(forge(forged)))  # type: ignore[arg-type]
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1 and "check 'chain' failed" in r.stdout and "2 passed, 1 failed" in r.stdout
