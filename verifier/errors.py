"""Typed errors.  Every illegal action raises :class:`RuleError` with a stable code,
a message, and the rule (a RULES.md decision number) it breaks."""

from __future__ import annotations


class RuleError(Exception):
    """A rule was broken.  ``code`` is a stable machine-readable string (sent on the
    wire as is), ``rule`` names the RULES.md decision (``"D15"``) where one applies."""

    def __init__(self, code: str, message: str, *, rule: str | None = None) -> None:
        super().__init__(message if rule is None else f"{message} ({rule})")
        self.code = code
        self.message = message
        self.rule = rule

    def to_json(self) -> dict[str, str]:
        out = {"code": self.code, "message": self.message}
        if self.rule is not None:
            out["rule"] = self.rule
        return out


class PhaseError(RuleError):
    """The action is not allowed in the hand's current phase; the message names the
    phase the action needs."""
