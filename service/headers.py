"""The headers every response carries: no MIME sniffing, no referrer, no framing, a
Content-Security-Policy that allows nothing unless a page sets its own
(:mod:`service.pages`), HSTS over TLS; and CORS only where a browser on another
origin needs it.

CORS (``Access-Control-Allow-Origin: *``, without credentials) is sent on the public
reads a verifier elsewhere needs — a transcript and the fairness key, which the
/verify page saved as a file (origin ``null``) or an auditor's own page fetch — and
on the OpenAPI document; nowhere else.  A 405 names the methods its route takes
(``Allow``, RFC 9110 §15.5.6).  docs/api.md, "Headers".
"""

from __future__ import annotations

import re
from typing import Final

from aiohttp import web

__all__ = ["DEFAULT_CSP", "add_security_headers"]

#: for every response that is not one of the pages (JSON, files, errors)
DEFAULT_CSP: Final = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
_CORS_PATHS: Final = re.compile(r"^/api/(?:hands/[0-9]{1,19}/transcript|fairness/key|openapi\.json)$")


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    h = response.headers
    h.setdefault("X-Content-Type-Options", "nosniff")
    h.setdefault("Referrer-Policy", "no-referrer")
    h.setdefault("X-Frame-Options", "DENY")
    h.setdefault("Content-Security-Policy", DEFAULT_CSP)
    h.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    if request.secure:
        h.setdefault("Strict-Transport-Security", "max-age=31536000")
    if response.status == 405 and "Allow" not in h:
        refused = getattr(request.match_info, "http_exception", None)  # the router's 405, answered as JSON
        if refused is not None and "Allow" in refused.headers:
            h["Allow"] = refused.headers["Allow"]
    if request.method in ("GET", "HEAD") and _CORS_PATHS.match(request.path):
        h["Access-Control-Allow-Origin"] = "*"


def add_security_headers(app: web.Application) -> None:
    app.on_response_prepare.append(_headers)
