"""The server's own typed errors for one client (the rules kernel has its own)."""

from __future__ import annotations

from verifier.errors import RuleError


class ClientError(RuleError):
    """A typed error for one client, from the server rather than the rules kernel
    (a seat taken, a message malformed…); nothing changed."""

    def __init__(self, code: str, message: str, rule: str | None = None) -> None:
        super().__init__(code, message, rule=rule)


def moved() -> ClientError:
    return ClientError("moved", "the table moved to another server; reconnect and join it again")


def unavailable() -> ClientError:
    return ClientError(
        "unavailable", "the table cannot reach its database right now; nothing was changed, try again", "D32"
    )


def shutting_down() -> ClientError:
    return ClientError("shutting_down", "the server is shutting down")
