"""The adversarial vectors (verifier/vectors/adversarial/, issue 16): what a dishonest
server makes of a hand — re-signed and re-chained with the server's key — and the
verdict each file states in ``_about.expect``, checked through ``rummy-verify`` as a
command (its exit code, its text and its JSON) and through the library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from verifier import vectors
from verifier.transcript import verify_transcript

DIR = Path(vectors.DIR) / "adversarial"
KEY_HEX = vectors.TEST_SIGNER.public_bytes.hex()
FILES = sorted(p.name for p in DIR.glob("*.json"))
TRANSCRIPTS = [n for n in FILES if "transcript" in json.loads((DIR / n).read_text())]
FOLDERS = [n for n in FILES if "folder" in json.loads((DIR / n).read_text())]


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DIR / name).read_text(encoding="utf-8"))
    return data


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verifier.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_every_kind_of_the_issue_is_there() -> None:
    expected: dict[str, str | None] = {
        "downgrade-v1-refused": "format",
        "downgrade-v1-refuted-by-evidence": "evidence",
        "small-order-player-key": "format",
        "small-order-server-key": "format",
        "first-hand-not-from-zeros": "chain",
        "evidence-of-another-hand": "evidence",
        "key-substitution-another-header-shown": "evidence",
        "key-substitution-missed-by-the-client": None,  # the player's word: a warning (§15.4)
        "player-item-forged-claims-substitution": None,
        "void-cuts-a-won-hand": "evidence",
        "refused-misquoting-the-signature-then-dropped": "evidence",
        "refused-misquoting-prev-then-dropped": "evidence",
        "void-after-seeds-accepted-hides-the-seed": "evidence",
        "void-after-seeds-refused-hides-the-seed": "evidence",
        "leave-signed-over-an-older-record": "player_signatures",
        "one-key-two-seats": "format",
        "void-after-the-reveals-without-seed": "format",
        "refused-then-timed-out-early": "evidence",
    }
    for name, check in expected.items():
        about = load(f"{name}.json")["_about"]
        assert about["expect"]["check"] == check, name
        assert {"what", "produced_by", "checked_by", "expect"} <= set(about)
    assert {"folder-downgrade.json", "folder-first-hand-not-from-zeros.json"} <= set(FOLDERS)


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_a_transcript_vector_gets_its_verdict_from_the_library(name: str) -> None:
    data = load(name)
    expect = data["_about"]["expect"]
    evidence = data["evidence"] if expect["with_evidence"] else None
    report = verify_transcript(
        data["transcript"], vectors.TEST_SIGNER.public_bytes, evidence, allow_v1=expect["allow_v1"], debug=True
    )
    if expect["ok"]:
        assert report.ok, report.failure
        assert sorted(w["code"] for w in report.warnings) == sorted(expect["warnings"])
    else:
        assert report.failure is not None and report.failure.check == expect["check"], report.failure
        if "record" in expect:
            assert report.failure.record == expect["record"], report.failure
    if evidence is not None and "evidence" in report.summary:
        assert report.summary["evidence"]["items"] == len(evidence)


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_a_transcript_vector_gets_its_verdict_from_the_command(name: str) -> None:
    """The file is both the transcript and the evidence (§2: a vector file with _about
    and evidence is read as its evidence)."""
    expect = load(name)["_about"]["expect"]
    args = ["--json", "--key", KEY_HEX, str(DIR / name)]
    if expect["allow_v1"]:
        args.append("--allow-v1")
    if expect["with_evidence"]:
        args += ["--receipts", str(DIR / name)]
    r = run(*args)
    report = json.loads(r.stdout)
    assert r.returncode == (0 if expect["ok"] else 1), r.stdout + r.stderr
    if not expect["ok"]:
        assert report["failure"]["check"] == expect["check"]
    if expect["with_evidence"] and report["checks_passed"][:1] == ["format"]:
        counts = report["summary"]["evidence"]  # shown whatever the verdict (§14.14)
        assert counts["items"] == len(load(name)["evidence"])
        text = run(*[a for a in args if a != "--json"]).stdout
        assert f"evidence: {counts['checked']} of {counts['items']} items checked" in text


@pytest.mark.parametrize("name", FOLDERS)
def test_a_folder_vector_gets_its_verdict(name: str, tmp_path: Path) -> None:
    data = load(name)
    expect = data["_about"]["expect"]
    folder = tmp_path / "hands"
    folder.mkdir()
    for file, t in data["folder"].items():
        (folder / file).write_text(json.dumps(t), encoding="utf-8")
    args = ["--json", *([] if expect.get("unpinned") else ["--key", KEY_HEX]), str(folder)]
    if expect["allow_v1"]:
        args.append("--allow-v1")
    if expect["with_evidence"]:
        args += ["--receipts", str(DIR / name)]
    r = run(*args)
    out = json.loads(r.stdout)
    assert r.returncode == 1, r.stdout + r.stderr
    failed = {Path(e["transcript"]).name: e["failure"]["check"] for e in out["results"] if not e["ok"]}
    assert failed == expect["failed"], out
    assert sorted(f["check"] for f in out["tables"] if not f["files"]) == sorted(expect["findings"])


def test_a_v1_copy_beside_its_own_v2_hand_is_a_downgrade(tmp_path: Path) -> None:
    """§14 downgrade: a v1 hand numbered at or after a v2 hand of its table — the same
    number included (a v1 copy of a v2 hand) — with --allow-v1 or without."""
    from verifier.vectors_adversarial import downgrade

    t = json.loads((Path(vectors.DIR) / "v2-transcript-4seat-two-players.json").read_text())["transcript"]
    (tmp_path / "v2.json").write_text(json.dumps(t))
    (tmp_path / "v1.json").write_text(json.dumps(downgrade(t)))
    for allow, also in (([], []), (["--allow-v1"], ["fork"])):  # accepted, the copy is also a fork
        out = json.loads(run("--json", "--key", KEY_HEX, *allow, str(tmp_path)).stdout)
        assert [f["check"] for f in out["tables"]] == ["downgrade", *also], out["tables"]
        assert out["tables"][0]["files"] == [str(tmp_path / "v1.json")]


BACKDATED = sorted(n for n in TRANSCRIPTS if n.startswith("backdated-"))


def test_the_three_backdated_vectors_are_there() -> None:
    """One for record 1 (a commitment), one for record 2 (a seed), one for an action."""
    assert len(BACKDATED) == 3, BACKDATED


@pytest.mark.parametrize("name", BACKDATED)
def test_a_record_dated_before_a_move_it_holds_arrived_is_refuted_by_the_ack(name: str) -> None:
    """§15.7: the transcript alone is consistent (every window and turn whole, by its
    own dates), and a seat is charged in it; the ack of the accepted move it holds,
    signed by the house, says the move arrived after the record's date."""
    data = load(name)
    key = vectors.TEST_SIGNER.public_bytes
    alone = verify_transcript(data["transcript"], key)
    assert alone.ok, alone.failure
    charged = [d for d in data["transcript"]["result"]["settlement"]["deltas"].values() if d < 0]
    assert charged, "the vector charges nobody"
    report = verify_transcript(data["transcript"], key, data["evidence"])
    failure = report.failure
    assert failure is not None and failure.check == "evidence", failure
    record = data["transcript"]["log"][failure.record]
    acked = [
        it["body"]["arrived"]
        for it in data["evidence"]
        if it["purpose"] == "ack" and it["body"]["outcome"] == "accepted" and it["body"]["arrived"] > record["t"]
    ]
    assert acked, "no accepted ack arrived after the record it failed at"
    assert failure.found == record["t"] and "dated" in failure.message, failure
    assert failure.expected in {f">= {a}" for a in acked}, failure
