"""One self-contained HTML file from a page and its local scripts and style sheets.

The browser verifier (``service/web/verify.html``) loads its scripts with
``<script src="rummypf/….js">`` so that each file can be served and read on its own;
``inline_page`` puts every local script and style sheet inside the page, so that the
result works as one saved file (opened from ``file://`` with nothing else).
"""

from __future__ import annotations

import html
import pathlib
import re

__all__ = ["inline_page"]

_SCRIPT = re.compile(
    r"<script\b(?P<attrs>[^>]*?)\bsrc\s*=\s*(?P<q>[\"'])(?P<src>.*?)(?P=q)(?P<rest>[^>]*)>\s*</script\s*>",
    re.IGNORECASE | re.DOTALL,
)
_LINK = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_REMOTE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")


def _local_file(base: pathlib.Path, ref: str) -> pathlib.Path | None:
    """The file a relative reference names, inside ``base``; None for a remote one."""
    ref = html.unescape(ref).split("#", 1)[0].split("?", 1)[0]
    if not ref or _REMOTE.match(ref):
        return None
    path = (base / ref).resolve()
    root = base.resolve()
    if root != path and root not in path.parents:
        raise ValueError(f"{ref!r} is outside {root}")
    return path


def _attrs(tag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _ATTR.finditer(tag):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        out[m.group(1).lower()] = html.unescape(value)
    return out


def _escape_end(text: str, tag: str) -> str:
    """Keep inlined text from closing its element early (``</script`` inside a script)."""
    return re.sub(rf"</({tag})", r"<\\/\1", text, flags=re.IGNORECASE)


def inline_page(html_path: pathlib.Path) -> str:
    """The HTML of ``html_path`` with every local ``<script src>`` and
    ``<link rel="stylesheet" href>`` replaced by its content, inline."""
    base = html_path.parent
    page = html_path.read_text(encoding="utf-8")

    def script(m: re.Match[str]) -> str:
        path = _local_file(base, m.group("src"))
        if path is None:
            return m.group(0)
        code = _escape_end(path.read_text(encoding="utf-8"), "script")
        attrs = (m.group("attrs") + m.group("rest")).strip()
        open_tag = f"<script {attrs}>" if attrs else "<script>"
        return f"{open_tag}\n/* {path.name} */\n{code}\n</script>"

    def link(m: re.Match[str]) -> str:
        a = _attrs(m.group(0))
        if "stylesheet" not in a.get("rel", "").lower().split() or "href" not in a:
            return m.group(0)
        path = _local_file(base, a["href"])
        if path is None:
            return m.group(0)
        css = _escape_end(path.read_text(encoding="utf-8"), "style")
        media = f' media="{html.escape(a["media"])}"' if "media" in a else ""
        return f"<style{media}>\n/* {path.name} */\n{css}\n</style>"

    page = _SCRIPT.sub(script, page)
    return _LINK.sub(link, page)
