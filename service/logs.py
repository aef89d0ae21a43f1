"""Log lines on stderr: text, or one JSON object a line."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from service.logsafe import SafeFormatter

# ----------------------------------------------------------------------------- logging
_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and whatever the record
    carries as ``extra=`` (``table_id``, ``hand_id``; the access log's ``method``,
    ``path``, ``status``, ``remote``)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(verbose: bool, log_format: str = "text") -> None:
    """WARNING and above from everyone on stderr; our own loggers (``rummy.*``) from
    INFO with ``-v``.  Embedded PostgreSQL logs to its data directory (service.db)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(SafeFormatter())  # one line a record, whatever a client sent (service.logsafe)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("rummy").setLevel(logging.INFO if verbose else logging.WARNING)
