"""Log lines that a client cannot forge (issue 18 item 6).

A request path, a header, a player's name or an error's text may hold CR, LF, NUL or
another control character (``GET /api/x%0a2026-… INFO rummy.access: …`` decodes to a
line break): written as they are, they would start a forged log line or put raw bytes
in the log.  :class:`SafeFormatter` writes every control character of a message as an
escape (``\\n``, ``\\r``, ``\\x00``, ``\\u2028``…), so each record is one line; a
traceback keeps its lines, each continuation indented, and escapes the rest.  The JSON
format (service.logs' ``JsonFormatter``) is safe as it is: JSON escapes every control
character in a string.
"""

from __future__ import annotations

import logging
import unicodedata

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _escape_char(ch: str) -> str:
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}.get(ch) or (
        f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
    )


def _unsafe(ch: str) -> bool:
    return ch == "\\" or unicodedata.category(ch) in ("Cc", "Zl", "Zp")


def escape(text: str) -> str:
    """``text`` with every control character, line or paragraph separator (and the
    backslash, so an escape cannot be faked either) written as an escape."""
    if not any(_unsafe(ch) for ch in text):
        return text
    return "".join(_escape_char(ch) if _unsafe(ch) else ch for ch in text)


def escape_lines(text: str) -> str:
    """A multi-line text (a traceback) kept readable: each line escaped and indented,
    so none can pass for a record of its own."""
    return "\n".join("    " + escape(line) for line in text.split("\n"))


class SafeFormatter(logging.Formatter):
    """``logging.Formatter`` whose every record is one line (and a traceback's
    continuation lines indented)."""

    def __init__(self, fmt: str = TEXT_FORMAT) -> None:
        super().__init__(fmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        saved = record.message
        record.message = escape(saved)
        try:
            return super().formatMessage(record)
        finally:
            record.message = saved

    def formatException(self, ei: object) -> str:
        return escape_lines(super().formatException(ei))  # type: ignore[arg-type]

    def formatStack(self, stack_info: str) -> str:
        return escape_lines(super().formatStack(stack_info))
