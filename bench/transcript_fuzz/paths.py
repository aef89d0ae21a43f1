"""Paths in a JSON value, and the parts of a transcript the mutations look up."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def walk(x: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, (*path, i))


def get(x: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        x = x[p]
    return x


def put(x: Any, path: tuple[Any, ...], v: Any) -> None:
    get(x, path[:-1])[path[-1]] = v


def header(t: dict[str, Any]) -> dict[str, Any]:
    h = t["log"][0]["header"]
    assert isinstance(h, dict)
    return h


def records(t: dict[str, Any], typ: str) -> list[tuple[int, dict[str, Any]]]:
    return [(i, r) for i, r in enumerate(t["log"]) if isinstance(r, dict) and r.get("type") == typ]


def all_events(t: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    out = []
    for i, r in enumerate(t["log"]):
        if isinstance(r, dict) and isinstance(r.get("events"), list):
            for j, e in enumerate(r["events"]):
                if isinstance(e, dict):
                    out.append((i, j, e))
    return out


def end_event(t: dict[str, Any]) -> dict[str, Any] | None:
    for _, _, e in all_events(t):
        if e.get("kind") == "end":
            return e
    return None
