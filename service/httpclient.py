"""The one HTTP client of rummy-table's commands (``admin``, ``bots``): aiohttp, one
timeout per request, the token as a bearer, JSON both ways.

A server of several nodes answers a command for a table another node serves with a
``307`` to that node's public URL (docs/deploy.md).  The redirect is followed here,
by hand: the same method, body and token are sent again, to at most
:data:`MAX_REDIRECTS` places.  (aiohttp's own redirects drop the ``Authorization``
header when the origin changes, and a node's URL is always another origin; urllib
does not resend a POST at all — the cause of issue 18's failing ``admin stand``.)
The token is never sent from an ``https`` URL to an ``http`` one.

Failures are :class:`Unreachable` (no answer, or not rummy-table's: exit 3) and
:class:`Refused` (the server's own error: its status, code and message; exit 4, or 3
for a 5xx); each command words them its own way.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import aiohttp

from service.errors import EXIT_REFUSED, EXIT_UNREACHABLE, ServiceError

MAX_REDIRECTS = 5
REDIRECTS = (307, 308)  # the method and body are sent again; the server sends no other


class Unreachable(ServiceError):
    """No answer, or an answer that is not rummy-table's."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_UNREACHABLE)


class Refused(ServiceError):
    """The server answered with an error: its status, and its code and message when it
    sent rummy-table's error body (else ``code`` is None)."""

    def __init__(self, method: str, path: str, status: int, reason: str, error: dict[str, Any] | None) -> None:
        self.method, self.path, self.status, self.reason = method, path, status, reason
        self.error = error
        code = str(error.get("code")) if error is not None else None
        message = str(error.get("message")) if error is not None else f"HTTP {status} {reason}"
        super().__init__(message, code=code or "refused", exit_code=EXIT_UNREACHABLE if status >= 500 else EXIT_REFUSED)
        self.server_code = code


def reason(e: BaseException) -> str:
    """An OS-level reason in words ("Connection refused"), else the error's text."""
    if isinstance(e, aiohttp.ClientConnectorError):
        err = e.os_error
        return os.strerror(err.errno) if err.errno else (err.strerror or str(err))
    return str(e) or type(e).__name__


class Rest:
    """Requests to one server (its URL without a trailing slash) on ``session``."""

    def __init__(self, session: aiohttp.ClientSession, server: str, timeout: float) -> None:
        self.session, self.server, self.timeout = session, server.rstrip("/"), timeout

    async def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        query: dict[str, Any] | None = None,
        extra: dict[str, str] | None = None,
    ) -> Any:
        """The server's JSON answer to ``method path``, a 307/308 followed; ``extra``:
        more request headers."""
        q = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.server + path + ("?" + urlencode(q) if q else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", **(extra or {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if data is not None:
            headers["Content-Type"] = "application/json"
        for _ in range(MAX_REDIRECTS + 1):
            status, why, location, raw = await self._once(method, url, path, data, headers)
            if status not in REDIRECTS:
                break
            url = self._next(url, location, method, path)
        else:
            raise Unreachable(f"{self.server} redirected {method} {path} more than {MAX_REDIRECTS} times")
        try:
            answer = json.loads(raw)
        except ValueError:
            if status >= 400:
                raise Refused(method, path, status, why, None) from None
            raise Unreachable(
                f"{self.server} answered {method} {path} with something that is not JSON: is it rummy-table?"
            ) from None
        if status >= 400:
            err = answer.get("error") if isinstance(answer, dict) else None
            raise Refused(method, path, status, why, err if isinstance(err, dict) else None)
        return answer

    async def _once(
        self, method: str, url: str, path: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, str | None, bytes]:
        try:
            async with self.session.request(
                method,
                url,
                data=data,
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            ) as r:
                return r.status, r.reason or "", r.headers.get("Location"), await r.read()
        except TimeoutError:
            raise Unreachable(f"{self.server} did not answer within {self.timeout:g} s") from None
        except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, ConnectionError) as e:
            raise Unreachable(
                f"cannot reach {self.server} ({reason(e)}); is `rummy-table serve` running there? (--server)"
            ) from None
        except aiohttp.ClientError as e:
            raise Unreachable(f"cannot talk to {self.server} about {method} {path} ({reason(e)})") from None

    def _next(self, url: str, location: str | None, method: str, path: str) -> str:
        if not location:
            raise Unreachable(f"{self.server} redirected {method} {path} without saying where")
        to = urljoin(url, location)
        scheme = urlsplit(to).scheme
        if scheme not in ("http", "https"):
            raise Unreachable(f"{self.server} redirected {method} {path} to {to!r}, which is not http(s)")
        if urlsplit(url).scheme == "https" and scheme == "http":
            raise Unreachable(
                f"{self.server} redirected {method} {path} from https to {to}: the token is not sent in clear"
            )
        return to
