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
