"""The environment variables that ``rummy-table`` reads, each named once."""

from __future__ import annotations

import os
from typing import Final

#: the operator token: ``serve`` takes it as the room's token, ``bots`` and ``admin``
#: send it (docs/api.md, "Operating the card room")
OPERATOR_TOKEN_ENV: Final = "RUMMY_OPERATOR_TOKEN"  # noqa: S105 - the name of the variable, not a token

#: PostgreSQL's URL; without it (and without ``--database-url``) ``serve`` runs an
#: embedded PostgreSQL in its data directory
DATABASE_URL_ENV: Final = "DATABASE_URL"


def database_url_from_env() -> str | None:
    return os.environ.get(DATABASE_URL_ENV) or None
