"""``rummy-verify TRANSCRIPT`` and ``rummy-verify DIR`` (issue 3, item 3; issue 7,
item 7; issue 9; issue 11)."""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import pty
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_tamper import forge, load, m_tokens
from verifier import vectors
from verifier.hand import TableRules
from verifier.signing import public_pem

CMD = [sys.executable, "-m", "verifier.cli"]
RICH = str(Path(vectors.DIR) / "v2-transcript-6seat-everything.json")
RICH_V1 = str(Path(vectors.DIR) / "transcript-6seat-everything.json")
TWO = str(Path(vectors.DIR) / "v2-transcript-4seat-two-players.json")
EVIDENCE = str(Path(vectors.DIR) / "v2-evidence-4seat-two-players-seat1.json")
KEY_HEX = vectors.TEST_SIGNER.public_bytes.hex()


def run(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    r = subprocess.run([*CMD, *args], input=data, capture_output=True, timeout=120, check=False)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode())


def one_line(stderr: str) -> bool:
    """Every expected failure is one line, never a traceback."""
    return len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr


def run_tty(
    *args: str, stdin_tty: bool = False, stdout_tty: bool = False, stderr_tty: bool = False
) -> tuple[int, str, str, str]:
    """Run with some of the standard streams on a terminal (a pty): returns the exit
    code, what the terminal showed, and the captured stdout and stderr."""
    master, slave = pty.openpty()
    with subprocess.Popen(
        [*CMD, *args],
        stdin=slave if stdin_tty else subprocess.DEVNULL,
        stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave if stderr_tty else subprocess.PIPE,
    ) as p:
        os.close(slave)
        shown = b""
        deadline = time.monotonic() + 100
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal's other side is closed
                    break
                if not chunk:
                    break
                shown += chunk
            elif p.poll() is not None:
                break
        else:
            p.kill()
        out = p.stdout.read().decode() if p.stdout else ""
        err = p.stderr.read().decode() if p.stderr else ""
        code = p.wait(timeout=30)
    os.close(master)
    return code, shown.decode().replace("\r\n", "\n"), out, err


# ----------------------------------------------------------------------------- one transcript
def test_success_prints_a_summary_and_the_unpinned_fingerprint() -> None:
    r = run(RICH)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "every check passed" in out and "winner: seat" in out and "house commission" in out
    assert "player-rich-0" in out and "UNPINNED" in out and "rummy-pf/v2" in out
    assert "skipped evidence: no evidence was given" in out
    fp = vectors.TEST_SIGNER.fingerprint
    grouped = " ".join(fp[k : k + 4] for k in range(0, 64, 4))
    assert f"server key fingerprint: {grouped} (UNPINNED" in out  # the form every page shows


def test_v1_transcripts_verify_only_when_asked_and_say_the_server_alone_vouches() -> None:
    """Issue 16: v1 is refused unless --allow-v1; accepted, the verdict warns
    v1_server_only (it used to pass silently, so a v2 hand re-published as v1 did)."""
    refused = run("--key", KEY_HEX, RICH_V1)
    assert refused.returncode == 1 and "check 'format' failed" in refused.stdout and "--allow-v1" in refused.stdout
    r = run("--key", KEY_HEX, RICH_V1, "--allow-v1")
    assert r.returncode == 0 and "rummy-pf/v1" in r.stdout, r.stdout + r.stderr
    assert "player_signatures" not in r.stdout
    assert "WARNING v1_server_only" in r.stdout and "server alone vouches" in r.stdout
    j = json.loads(run("--json", "--key", KEY_HEX, RICH_V1, "--allow-v1").stdout)
    assert [w["code"] for w in j["warnings"]] == ["v1_server_only"]
    with_evidence = run("--key", KEY_HEX, RICH_V1, "--allow-v1", "--receipts", EVIDENCE)
    assert with_evidence.returncode == 1 and "check 'evidence' failed" in with_evidence.stdout
    assert "evidence: 0 of" in with_evidence.stdout
    # The count is shown even when an earlier check stopped the run (here: v1 refused).
    n = len(json.loads(Path(EVIDENCE).read_text())["evidence"])
    stopped = run("--key", KEY_HEX, RICH_V1, "--receipts", EVIDENCE)
    assert stopped.returncode == 1 and "check 'format' failed" in stopped.stdout
    assert f"evidence: 0 of {n} items checked, {n} for other hands (not applied: check 'format'" in stopped.stdout
    j = json.loads(run("--json", "--key", KEY_HEX, RICH_V1, "--receipts", EVIDENCE).stdout)
    assert j["summary"]["evidence"] == {"items": n, "checked": 0, "other_hands": n, "after_void": 0}


@pytest.mark.parametrize("form", ["hex", "base64", "pem", "pem-text", "hex-file", "key-json"])
def test_key_can_be_pinned_in_every_documented_form(form: str, tmp_path: Path) -> None:
    raw = vectors.TEST_SIGNER.public_bytes
    pem = public_pem(raw)
    files = {
        "pem": pem,
        "hex-file": raw.hex() + "\n",
        "key-json": json.dumps({"algorithm": "Ed25519", "public_key_hex": raw.hex(), "fingerprint": "ab" * 32}),
    }
    key = {"hex": raw.hex(), "base64": base64.b64encode(raw).decode(), "pem-text": pem}.get(form, "")
    if form in files:
        path = tmp_path / "server.key"
        path.write_text(files[form])
        key = str(path)
    r = run("--key", key, RICH)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(pinned)" in r.stdout


def test_a_fingerprint_is_not_a_key() -> None:
    """Issue 11: the fingerprint the server prints, given as --key, is named as such."""
    r = run("--key", vectors.TEST_SIGNER.fingerprint, RICH)
    assert r.returncode == 3 and one_line(r.stderr), r.stdout + r.stderr
    assert "fingerprint" in r.stderr and "not the key" in r.stderr and "GET /api/fairness/key" in r.stderr
    # ...also in the grouped form every page and command shows it in
    fp = vectors.TEST_SIGNER.fingerprint
    r = run("--key", " ".join(fp[k : k + 4] for k in range(0, 64, 4)), RICH)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "is a key fingerprint" in r.stderr and "not the key itself" in r.stderr


def test_a_key_that_is_not_a_key_is_a_usage_error() -> None:
    r = run("--key", "not-a-key", RICH)
    assert r.returncode == 3 and one_line(r.stderr) and "GET /api/fairness/key" in r.stderr


def test_wrong_pinned_key_fails_at_signature_and_shows_both_keys() -> None:
    r = run("--key", "11" * 32, RICH)
    assert r.returncode == 1 and "check 'signature' failed" in r.stdout
    assert "11" * 32 in r.stdout and KEY_HEX in r.stdout and "a fingerprint is not a key" in r.stdout


def test_discrepancy_names_check_record_expected_and_found(tmp_path: Path) -> None:
    t = load("v2-transcript-6seat-everything.json")
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
    assert report["checks_skipped"] == ["evidence"] and report["warnings"] == []


def test_json_warnings() -> None:
    r = run("--json", str(Path(vectors.DIR) / "v2-transcript-void-seed-lost.json"))
    report = json.loads(r.stdout)
    assert r.returncode == 0 and {w["code"] for w in report["warnings"]} == {"void", "seed_not_revealed"}
    assert "server_commit" in report["checks_skipped"] and report["skip_reasons"]["server_commit"]


def test_standard_input() -> None:
    r = run("-", stdin=Path(RICH).read_text())
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        '{"_about": {}, "transcript": []}',
        "",
        '{"protocol": "rummy-pf/v2", "protocol": "rummy-pf/v1"}',
        '{"protocol": "rummy-pf/v2", "x": 1.5}',
        '{"protocol": "rummy-pf/v2", "x": 1e3}',
        '{"protocol": "rummy-pf/v2", "x": -0}',
        '{"protocol": "rummy-pf/v2", "x": ' + "9" * 5000 + "}",
        '{"protocol": "rummy-pf/v2", "x": 9007199254740992}',
        '{"protocol": "rummy-pf/v2", "x": NaN}',
        '{"protocol": "rummy-pf/v2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"protocol": "rummy-pf/v2", "x": "\\ud800"}',
    ],
)
def test_unreadable_input_exits_2(content: str, tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text(content, encoding="utf-8")
    r = run(str(f))
    assert r.returncode == 2 and r.stderr.startswith("rummy-verify:") and one_line(r.stderr), r.stderr[:500]
    j = run("--json", str(f))
    assert j.returncode == 2 and json.loads(j.stdout)["failure"]["check"] == "read"


def test_an_object_that_is_not_a_transcript_fails_format(tmp_path: Path) -> None:
    """JSON that breaks no rule of §2 is readable: an object without a "protocol" (or
    any other field of §12) is a transcript that fails ``format`` (§13: no field
    missing), exit 1, as the browser verifier says too; only §2 makes input unreadable."""
    f = tmp_path / "x.json"
    f.write_text('{"hello": 1}', encoding="utf-8")
    j = run("--json", str(f))
    assert j.returncode == 1, j.stderr
    assert json.loads(j.stdout)["failure"]["check"] == "format"


def test_bytes_that_are_not_utf8_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_bytes(b'{"protocol": "\xff\xfe"}')
    r = run(str(f))
    assert r.returncode == 2 and "UTF-8" in r.stderr and one_line(r.stderr)


def test_missing_file_exits_2() -> None:
    r = run("/no/such/transcript.json")
    assert r.returncode == 2 and one_line(r.stderr)


def test_input_larger_than_16_mib_is_refused(tmp_path: Path) -> None:
    big = b'{"protocol": "rummy-pf/v2", "pad": "' + b"x" * (16 * 1024 * 1024) + b'"}'
    f = tmp_path / "big.json"
    f.write_bytes(big)
    r = run(str(f))
    assert r.returncode == 2 and "16 MiB" in r.stderr and one_line(r.stderr)
    r = run("-", stdin=big)  # standard input has no size up front: read in pieces, refused past the limit
    assert r.returncode == 2 and "larger than" in r.stderr and one_line(r.stderr)


def test_version() -> None:
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("rummy-verify ") and "rummy-pf/v2" in r.stdout


def test_usage_errors_are_one_line_with_exit_3() -> None:
    for args in ([], ["--jobs", "0", RICH], ["--no-such-option", RICH], ["score", "--wild", "7H", "--bogus"]):
        r = run(*args)
        assert r.returncode == 3 and one_line(r.stderr), (args, r.stderr)


def test_output_closed_early_ends_quietly() -> None:
    """Issue 11: ``rummy-verify … | head`` must not end in BrokenPipeError."""
    for args, feed in ([(RICH,), None], [("score",), "".join(SCORE_LINE for _ in range(3000))]):
        with subprocess.Popen(
            [*CMD, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as p:
            assert p.stdout is not None and p.stdin is not None and p.stderr is not None
            p.stdout.close()  # the reader goes away before anything is written
            try:
                p.stdin.write((feed or "").encode())
                p.stdin.close()
            except BrokenPipeError:
                pass
            err = p.stderr.read().decode()
            assert p.wait(timeout=120) == 141 and err == "", err


SCORE_LINE = json.dumps({"wild": "7H", "hand": "AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD JK 2C".split()}) + "\n"


# ----------------------------------------------------------------------------- evidence (§15)
def test_receipts_are_checked() -> None:
    n = len(json.loads(Path(EVIDENCE).read_text())["evidence"])
    r = run("--key", KEY_HEX, TWO, "--receipts", EVIDENCE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"evidence: {n} of {n} items checked" in r.stdout and "evidence)" in r.stdout


def test_evidence_of_another_hand_fails_and_its_count_is_shown() -> None:
    """Issue 16: evidence holding no item of the hand said OK ("0 of 12 items
    checked"); it fails, and the count is shown with the failure too."""
    n = len(json.loads(Path(EVIDENCE).read_text())["evidence"])
    r = run("--key", KEY_HEX, RICH, "--receipts", EVIDENCE)
    assert r.returncode == 1 and "check 'evidence' failed" in r.stdout, r.stdout
    assert "no item of this evidence is for table" in r.stdout
    assert f"evidence: 0 of {n} items checked, {n} for other hands" in r.stdout
    j = json.loads(run("--json", "--key", KEY_HEX, RICH, "--receipts", EVIDENCE).stdout)
    assert j["summary"]["evidence"] == {"items": n, "checked": 0, "other_hands": n, "after_void": 0}


def test_a_divergent_receipt_names_its_item(tmp_path: Path) -> None:
    items = json.loads(Path(EVIDENCE).read_text())["evidence"]
    n = next(i for i, e in enumerate(items) if e["purpose"] == "head" and e["body"]["i"] == 5)
    items[n]["body"]["h"] = "00" * 32
    items[n]["sig"] = vectors.TEST_SIGNER.sign("head", items[n]["body"], "rummy-pf/v2")
    f = tmp_path / "evidence.json"
    f.write_text(json.dumps(items))
    r = run("--key", KEY_HEX, TWO, "--receipts", str(f))
    assert r.returncode == 1 and "check 'evidence' failed at log record 5" in r.stdout
    assert f"evidence item {n}" in r.stdout


def test_an_unreadable_evidence_file_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "evidence.json"
    for content in ("nope", '[{"a": 1, "a": 2}]', "[1.5]"):
        f.write_text(content)
        r = run(TWO, "--receipts", str(f))
        assert r.returncode == 2 and one_line(r.stderr), r.stderr


@pytest.mark.parametrize("content", ["{}", "[1]", '[{"purpose": "head"}]'])
def test_an_evidence_item_that_is_not_a_receipt_or_head_fails_evidence(content: str, tmp_path: Path) -> None:
    """§15: the first item that does not agree is the failure, named by its position."""
    f = tmp_path / "evidence.json"
    f.write_text(content)
    r = run(TWO, "--receipts", str(f))
    assert r.returncode == 1 and "check 'evidence' failed" in r.stdout, r.stdout + r.stderr
    if content != "{}":
        assert "evidence item 0" in r.stdout


# ----------------------------------------------------------------------------- URLs
class _Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/api/"):
            status, code, message = {
                "/api/hands/live/transcript": (
                    409,
                    "hand_in_progress",
                    "the transcript is published when the hand ends",
                ),
            }.get(self.path, (404, "not_found", "no such hand"))
            body = json.dumps({"error": {"code": code, "message": message}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    handler = functools.partial(_Handler, directory=str(vectors.DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_url(http_server: str) -> None:
    r = run("--key", KEY_HEX, f"{http_server}/v2-transcript-4seat-two-players.json")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(f"{http_server}/missing.json")
    assert r.returncode == 2 and one_line(r.stderr) and "404" in r.stderr


def test_url_shows_the_servers_own_error(http_server: str) -> None:
    """Issue 11: the server's 404/409 JSON error message is shown."""
    r = run(f"{http_server}/api/hands/live/transcript")
    assert r.returncode == 2 and one_line(r.stderr)
    assert "409 hand_in_progress: the transcript is published when the hand ends" in r.stderr
    r = run(f"{http_server}/api/hands/nope/transcript")
    assert r.returncode == 2 and "404 not_found: no such hand" in r.stderr


def test_unreachable_url_exits_2() -> None:
    r = run("http://127.0.0.1:9/transcript.json")
    assert r.returncode == 2 and one_line(r.stderr) and "cannot reach" in r.stderr


# ----------------------------------------------------------------------------- score on a terminal
HAND = "AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD JK 2C".split()


def test_score_waits_for_nothing_on_a_terminal() -> None:
    """Issue 11: ``score`` with no cards and standard input on a terminal refuses at once."""
    code, _, _, err = run_tty("score", stdin_tty=True)
    assert code == 3 and one_line(err) and "--wild" in err


def test_score_prints_a_table_on_a_terminal_and_json_otherwise() -> None:
    code, shown, _, err = run_tty("score", "--wild", "7H", *HAND, stdout_tty=True)
    assert code == 0, err
    assert "points: 2 (not a valid declare)" in shown and "pure sequence" in shown and "set" in shown
    assert "loose (counted)" in shown and "2C" in shown and "{" not in shown
    code, shown, _, _ = run_tty("score", "--json", "--wild", "7H", *HAND, stdout_tty=True)
    assert code == 0 and json.loads(shown)["points"] == 2
    r = run("score", "--wild", "7H", *HAND)  # piped: JSON lines
    assert r.returncode == 0 and json.loads(r.stdout)["points"] == 2


# ----------------------------------------------------------------------------- directories
def test_directory_counts_and_lists_failures(tmp_path: Path) -> None:
    for name in ("v2-transcript-4seat-two-players.json", "transcript-void.json"):
        (tmp_path / name).write_text(json.dumps(load(name)))
    t = load("v2-transcript-6seat-everything.json")
    m_tokens(t)
    (tmp_path / "tampered.json").write_text(json.dumps(forge(t)))
    r = run("--key", KEY_HEX, "--allow-v1", str(tmp_path))
    assert r.returncode == 1
    assert "2 passed, 1 failed" in r.stdout and "tampered.json" in r.stdout
    assert r.stderr == ""  # no progress bar when standard error is not a terminal
    (tmp_path / "tampered.json").unlink()
    r = run("--key", KEY_HEX, "--allow-v1", str(tmp_path))
    assert r.returncode == 0 and "2 passed, 0 failed" in r.stdout
    assert "warnings: 1 v1_server_only, 1 void, 1 withheld" in r.stdout


def test_directory_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(Path(TWO).read_text())
    code, shown, out, _ = run_tty(str(tmp_path), stderr_tty=True)
    assert code == 0 and "1/1" in shown and "[" in shown and "1 passed, 0 failed" in out


BAD_FILES: dict[str, bytes] = {
    "deep.json": b'{"protocol": "rummy-pf/v2", "log": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    "digits.json": b'{"protocol": "rummy-pf/v2", "hand_no": ' + b"7" * 5000 + b"}",
    "float.json": b'{"protocol": "rummy-pf/v2", "rules": {"seats": 6.0}}',
    "binary.json": b"\x00\xff\xfe\x01garbage",
    "empty.json": b"",
    "dup.json": b'{"protocol": "rummy-pf/v2", "protocol": "rummy-pf/v2"}',
}


def test_directory_goes_on_past_bad_files(tmp_path: Path) -> None:
    """Issue 9: directory mode reports every bad file and still prints its summary."""
    for name, content in BAD_FILES.items():
        (tmp_path / name).write_bytes(content)
    good = load("v2-transcript-4seat-two-players.json")
    (tmp_path / "good.json").write_text(json.dumps(good))
    seats_not_a_list = load("v2-transcript-4seat-two-players.json")
    seats_not_a_list["log"][0]["header"]["seats"] = {"0": "x"}
    (tmp_path / "seats.json").write_text(json.dumps(seats_not_a_list))
    deck = load("v2-transcript-4seat-two-players.json")
    deck["deck"] = 5
    (tmp_path / "deck.json").write_text(json.dumps(deck))
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout
    for name in BAD_FILES:
        assert f"UNREADABLE {tmp_path / name}" in r.stdout, name
    assert f"FAIL {tmp_path / 'seats.json'}: check 'format' failed" in r.stdout
    assert f"FAIL {tmp_path / 'deck.json'}: check 'format' failed" in r.stdout
    assert f"1 passed, {len(BAD_FILES) + 2} failed" in r.stdout
    j = json.loads(run("--json", "--key", KEY_HEX, str(tmp_path)).stdout)
    checks = {Path(x["transcript"]).name: x["failure"]["check"] for x in j["results"] if x["failure"]}
    assert checks == {**dict.fromkeys(BAD_FILES, "read"), "seats.json": "format", "deck.json": "format"}


def _table_history(n: int, name: str = "chained") -> list[dict[str, Any]]:
    """n consecutive hands at one table, each starting from the previous one's head."""
    out: list[dict[str, Any]] = []
    prev = None
    for hand in range(n):
        played = vectors.play_hand(name, hand, TableRules(seats=4), [0, 1], hand % 2, vectors.greedy, prev_head=prev)
        t = played.rec.transcript()
        prev = str(t["head"])
        out.append(t)
    return out


@pytest.fixture(scope="module")
def history() -> list[dict[str, Any]]:
    return _table_history(4)


def _write(folder: Path, hands: list[dict[str, Any]]) -> None:
    for t in hands:
        (folder / f"h{t['hand_no']}.json").write_text(json.dumps(t))


def test_directory_checks_a_tables_chain_across_hands(tmp_path: Path, history: list[dict[str, Any]]) -> None:
    _write(tmp_path, history[:3])
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 0, r.stdout
    # Hand 3 re-signed as if it followed another history: its own checks pass, the table's chain does not.
    forged = json.loads(json.dumps(history[2]))
    forged["log"][0]["header"]["prev_head"] = "00" * 32
    (tmp_path / "h3.json").write_text(json.dumps(forge(forged)))
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1 and "check 'chain' failed" in r.stdout and "2 passed, 1 failed" in r.stdout


def test_a_copy_of_a_hand_does_not_switch_the_chain_check_off(tmp_path: Path, history: list[dict[str, Any]]) -> None:
    """Found by an audit: with a byte-identical second copy of hand 1 in the folder,
    hand 2 was no longer checked against it (the check ran only when exactly one
    verified file held hand 1), and the room audit counted the copy as a hand of its
    own.  Copies of one signed transcript are one hand (§14, §17)."""
    forged = json.loads(json.dumps(history[1]))
    forged["log"][0]["header"]["prev_head"] = "ab" * 32
    _write(tmp_path, [history[0], forge(forged)])
    (tmp_path / "copy-h1.json").write_text(json.dumps(history[0]))
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1 and "check 'chain' failed" in r.stdout and "2 passed, 1 failed" in r.stdout
    _write(tmp_path, history[:2])  # hand 2 as it was: the chain holds, two hands counted once each
    r = run("audit", "--key", KEY_HEX, str(tmp_path))
    assert "3 files, 2 hands counted (1 files held copies of a counted hand: counted once)" in r.stdout, r.stdout


def test_directory_reports_a_gap_in_hand_numbers(tmp_path: Path, history: list[dict[str, Any]]) -> None:
    """Issue 7, item 7: a hand missing between a table's lowest and highest hand."""
    _write(tmp_path, [history[0], history[3]])
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1 and "check 'gap' failed" in r.stdout
    assert "hands 2 to 3 missing between hand 1 and hand 4" in r.stdout and "1 passed, 1 failed" in r.stdout


def test_directory_reports_a_fork(tmp_path: Path, history: list[dict[str, Any]]) -> None:
    """Issue 7, item 7: two different signed transcripts of one table and hand."""
    _write(tmp_path, history[:2])
    other = vectors.play_hand(
        "chained", 1, TableRules(seats=4), [0, 1], 0, vectors.greedy, prev_head=str(history[0]["head"])
    ).rec.transcript()
    assert other != history[1]
    (tmp_path / "other-h2.json").write_text(json.dumps(other))
    (tmp_path / "copy-h1.json").write_text(json.dumps(history[0]))  # the same transcript twice is no fork
    r = run("--key", KEY_HEX, str(tmp_path))
    assert r.returncode == 1 and "check 'fork' failed" in r.stdout and "table table-chained hand 2" in r.stdout
    assert "2 passed, 2 failed" in r.stdout


def test_directory_with_jobs_gives_the_same_answer(tmp_path: Path, history: list[dict[str, Any]]) -> None:
    _write(tmp_path, history)
    t = load("v2-transcript-6seat-everything.json")
    m_tokens(t)
    (tmp_path / "tampered.json").write_text(json.dumps(forge(t)))
    (tmp_path / "junk.json").write_text("[[[")
    one = run("--key", KEY_HEX, "--allow-v1", "--jobs", "1", str(tmp_path))
    two = run("--key", KEY_HEX, "--allow-v1", "--jobs", "2", str(tmp_path))
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout and "4 passed, 2 failed" in one.stdout


def test_directory_receipts_apply_to_their_own_hand(tmp_path: Path) -> None:
    for name in ("v2-transcript-4seat-two-players.json", "v2-transcript-6seat-everything.json"):
        (tmp_path / name).write_text(json.dumps(load(name)))
    n = len(json.loads(Path(EVIDENCE).read_text())["evidence"])
    r = run("--json", "--key", KEY_HEX, "--receipts", EVIDENCE, str(tmp_path))
    assert r.returncode == 0, r.stdout
    out = json.loads(r.stdout)
    ev = {Path(x["transcript"]).name: x["summary"]["evidence"] for x in out["results"]}
    assert ev["v2-transcript-4seat-two-players.json"]["checked"] == n
    assert ev["v2-transcript-6seat-everything.json"]["other_hands"] == n  # skipped there, not failed
    assert out["evidence"] == {"items": n, "checked": n, "after_void": 0, "transcripts": 1}
    text = run("--key", KEY_HEX, "--receipts", EVIDENCE, str(tmp_path)).stdout
    assert f"evidence: {n} of {n} items checked, in 1 transcripts" in text
    # Evidence of no hand of the directory fails the directory (issue 16).
    (tmp_path / "v2-transcript-4seat-two-players.json").unlink()
    r = run("--key", KEY_HEX, "--receipts", EVIDENCE, str(tmp_path))
    assert r.returncode == 1 and "check 'evidence' failed: no item of the evidence" in r.stdout, r.stdout


def test_empty_directory_exits_2(tmp_path: Path) -> None:
    r = run(str(tmp_path))
    assert r.returncode == 2 and one_line(r.stderr)


def test_worker_processes_give_every_result_in_order() -> None:
    """run_jobs with two worker processes: more files than one chunk each, the settings
    (the evidence, the pinned key, the flags) sent once to each worker; every file's
    result — its whole report — is what one process gives, in the order of the paths."""
    from verifier.batch import CHUNK, Settings, run_jobs

    names = sorted(p.name for p in Path(vectors.DIR).glob("*transcript*.json"))
    paths = [str(Path(vectors.DIR) / n) for n in names] * 6 + [str(Path(vectors.DIR) / "no-such-file.json")]
    assert len(paths) > 2 * 4 * CHUNK  # several chunks a worker
    evidence = json.loads(Path(EVIDENCE).read_text())["evidence"]
    settings = Settings(vectors.TEST_SIGNER.public_bytes, evidence, keep_report=True, debug=False, allow_v1=True)
    one = list(run_jobs(paths, settings, 1))
    two = list(run_jobs(paths, settings, 2))
    assert [r.path for r in two] == paths
    assert two == one
    assert {r.ok for r in one} == {True, False} and any(r.evidence and r.evidence["checked"] for r in one)
