"""Docs that match the code (issue 11): every rule decision cited anywhere is in the
rule book, and every error code the server can send is in docs/api.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"\bD([1-9][0-9]?)\b")


def defined_decisions() -> set[int]:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^- \*\*D([0-9]+) ", text, flags=re.MULTILINE)}


def test_every_decision_cited_is_in_the_rule_book() -> None:
    defined = defined_decisions()
    assert defined == set(range(1, max(defined) + 1)), "the rule book numbers its decisions without gaps"
    sources = [
        *ROOT.glob("service/**/*.py"),
        *ROOT.glob("verifier/**/*.py"),
        *ROOT.glob("service/web/**/*.js"),
        *ROOT.glob("service/web/**/*.html"),
        *ROOT.glob("sql/*.sql"),
        *ROOT.glob("tests/*.py"),
        *ROOT.glob("docs/*.md"),
        ROOT / "README.md",
    ]
    missing: dict[int, list[str]] = {}
    for path in sources:
        if path.name == "rules.md":
            continue
        for n in CITED.findall(path.read_text(encoding="utf-8", errors="replace")):
            if int(n) not in defined:
                missing.setdefault(int(n), []).append(str(path.relative_to(ROOT)))
    assert not missing, f"cited but not in docs/rules.md: {missing}"


ERROR_CALL = re.compile(
    r'(?:Phase|Rule|Client)?Error\(\s*"([a-z_]+)" if [^,]+ else "([a-z_]+)"|'
    r"""(?:ClientError|RuleError|PhaseError|LedgerError|StoreError)\(\s*"([a-z_]+)"|ApiError\(\s*\d+,\s*"([a-z_]+)"|"""
    r"""WireError\([^()]*?,\s*"([a-z_]+)"|_error\([^,()]+,\s*"([a-z_]+)"|"code":\s*"([a-z_]+)"|"""
    r"""code(?:\s*:\s*str)?\s*=\s*"([a-z_]+)"|\{404: "([a-z_]+)", 405: "([a-z_]+)", 413: "([a-z_]+)"\}"""
)


def codes_in_code() -> set[str]:
    found: set[str] = set()
    # the deployment's nginx answers for the server too (429 too_many_requests)
    for path in [*ROOT.glob("service/**/*.py"), *ROOT.glob("verifier/*.py"), ROOT / "docs" / "deploy" / "nginx.conf"]:
        if path.name in ("vectors.py", "cli.py", "checks.py", "schema.py", "transcript.py", "strictjson.py"):
            continue  # the verifier's own failure names are checks, not wire error codes
        for groups in ERROR_CALL.findall(path.read_text(encoding="utf-8")):
            found.update(g for g in groups if g)
    return found


def codes_in_api_doc() -> set[str]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text[text.index("**Error codes.**") : text.index("**The snapshot**")]
    fields = {"rule", "update"}  # named in the prose, not codes
    return set(re.findall(r"`([a-z_]+)`", section)) - fields


def test_every_error_code_the_server_sends_is_documented() -> None:
    in_code, in_doc = codes_in_code(), codes_in_api_doc()
    internal = {"unbalanced", "bad_deal", "bad_reshuffle", "bad_settlement", "not_enough_players", "piles_exhausted"}
    assert not (in_code - in_doc - internal), f"sent but not in docs/api.md: {sorted(in_code - in_doc - internal)}"
    assert not (in_doc - in_code), f"documented but never sent: {sorted(in_doc - in_code)}"


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """Issue 19: README's test command is .ci/run's first step, the drills its second;
    README says what the command needs beside pip and how the verifier installs alone."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = "npm ci --prefix tests/axe && pip install -c constraints.txt '.[test]' && python -m pytest -n 3"
    assert f"\n    {command}\n" in readme and f"\n{command}\n" in ci
    assert "`python -m pytest -m drill`" in readme and "\npython -m pytest -m drill --durations=0\n" in ci
    assert "apt-get install\nchromium" in readme or "apt-get install chromium" in readme
    assert "\n    pip install ./verifier\n" in readme and "\n    pip install . && rummy-table serve\n" in readme
