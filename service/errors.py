"""One base class for every failure the service expects, and the exit codes.

A :class:`ServiceError` carries what a person or a client is told (``message``), a
stable machine-readable ``code``, the HTTP status a request that caused it is
answered with, and the exit code a command that stops on it ends with.  The server's
error middleware answers every one the same way (:mod:`service.middleware`), and
``rummy-table`` prints every one as one line (:mod:`service.cli`).  The rules
kernel's own :class:`verifier.errors.RuleError` stays apart: the verifier never
imports the service.
"""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1  # a check failed (demo)
EXIT_USAGE = 2  # usage or bad input
EXIT_UNREACHABLE = 3  # cannot reach the server or the database
EXIT_REFUSED = 4  # refused by the server or the database
EXIT_LOCKED = 5  # already running: the port, the data directory, the database or the node id is taken
EXIT_CAPACITY = 6  # the database cannot hold the connections this server would open (service/connbudget.py)
EXIT_INTERNAL = 70  # a fault of ours
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM
EXIT_PIPE = 141  # stdout closed under us (| head)


class ServiceError(Exception):
    """An expected failure: ``message`` for the person, ``code`` for programs,
    ``status`` when it answers a request, ``exit_code`` when a command stops on it."""

    code: str = "bad_request"
    status: int = 400
    exit_code: int = EXIT_USAGE

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        exit_code: int | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        if exit_code is not None:
            self.exit_code = exit_code
        self.rule = rule

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.rule:
            out["rule"] = self.rule
        return out


class OutcomeUnknown(ServiceError):
    """A command that may or may not have been done: the answer was lost after it was
    sent on (a COMMIT whose answer never came, a sibling worker that took the command
    and did not answer).  Never "nothing was changed": the client looks, or sends it
    again where a second sending cannot do a second thing (docs/api.md, "Sending a
    command again")."""

    code = "outcome_unknown"
    status = 503


class CliError(ServiceError):
    """A command's expected failure: one line for the person, and the exit code
    (``server_code``: the server's error code, when the server refused)."""

    def __init__(self, exit_code: int, message: str, server_code: str | None = None) -> None:
        super().__init__(message, code=server_code, exit_code=exit_code)
        self.server_code = server_code
