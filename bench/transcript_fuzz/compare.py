"""Two verdicts compared: the same, different only in a record the spec does not
name, a known open disagreement, or a new one (its class).
"""

from __future__ import annotations

from collections.abc import Callable

from bench.transcript_fuzz.mutant import Mutant
from bench.transcript_fuzz.verdicts import Verdict


def exact(py: Verdict, js: Verdict) -> bool:
    """The same verdict: ok or not, the failing check, the record and the evidence item it
    names; for a pass, the same warnings."""
    if (py["ok"], py["check"], py["record"], py.get("item")) != (js["ok"], js["check"], js["record"], js.get("item")):
        return False
    return not py["ok"] or sorted(set(py["warnings"])) == sorted(set(js["warnings"]))


def unspecified(py: Verdict, js: Verdict) -> str | None:
    """Why two verdicts that fail the same check may name different records: where
    docs/fairness.md names none (so neither is wrong), else None."""
    if py["ok"] or js["ok"] or py["check"] != js["check"] or py.get("item") != js.get("item"):
        return None
    pm, jm = py["message"] or "", js["message"] or ""
    if py["check"] == "format":
        return "format: another problem named first (§13 orders none of its rules)"
    if py["check"] == "signature" and {py["record"], js["record"]} == {None, 0} and "pinned" in pm and "pinned" in jm:
        return "signature: the pinned key is not the header's (the pinned key is in no record)"
    if py["check"] == "chain" and js["record"] is None and "head" in pm and "head" in jm:
        return "chain: the head is not the last record's h (the head is in no record)"
    return None


#: Open disagreements, each a strict xfail of tests/test_web_verifier_transcript_fuzz.py
#: (the page is wrong, and may only be changed from the spec): name -> the mutants of it.
KNOWN_OPEN: dict[str, Callable[[Mutant, Verdict, Verdict], bool]] = {
    # none since 2026-12-07: the page's v1 action record without "t" (Appendix C) was fixed
}


def compare(m: Mutant, py: Verdict, js: Verdict) -> tuple[str, str] | None:
    """None when the verdicts agree; else ("unspecified" | "known" | "disagree", the class)."""
    if exact(py, js):
        return None
    why = unspecified(py, js)
    if why is not None:
        return "unspecified", why
    for name, test in KNOWN_OPEN.items():
        if test(m, py, js):
            return "known", name
    return "disagree", klass(py, js)


def klass(py: Verdict, js: Verdict) -> str:
    """A disagreement's class: the two verdicts, without the record when they name the same check."""

    def v(x: Verdict) -> str:
        return "ok" if x["ok"] else str(x["check"])

    if py["ok"] and js["ok"]:
        return f"warnings: python {sorted(set(py['warnings']))} / js {sorted(set(js['warnings']))}"
    if v(py) == v(js) and py["record"] == js["record"]:
        return f"{v(py)}: another evidence item (python {py.get('item')}, js {js.get('item')})"
    if v(py) == v(js):
        return f"{v(py)}: another record (python {py['record']}, js {js['record']})"
    return f"python {v(py)} / js {v(js)}"
