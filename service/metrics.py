"""Prometheus metrics (``GET /metrics``), one registry per app.

Counters and the store-latency histogram are fed by the tables as they work; gauges
(tables, seats, connections, paused tables) and the ledger totals are read when the
metrics are scraped, so they are never stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.hands = Counter(
            "rummy_hands", "Hands that ended, by outcome (ended, void)", ["outcome"], registry=self.registry
        )
        self.actions = Counter(
            "rummy_actions_stored", "Moves stored (players' and the clock's)", ["kind"], registry=self.registry
        )
        self.store_seconds = Histogram(
            "rummy_store_seconds",
            "Time to store a record (one transaction, to its commit)",
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )
        self.reloads = Counter(
            "rummy_table_reloads",
            "Tables that reloaded from the database after a failed write (a settle failure among them)",
            ["during"],
            registry=self.registry,
        )

    def add_live(self, read: Callable[[], dict[str, Any]]) -> None:
        """Gauges read at scrape time from ``read()``: {name: (help, value)}."""
        self.registry.register(_Live(read))


class _Live(Collector):
    def __init__(self, read: Callable[[], dict[str, Any]]) -> None:
        self.read = read

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for name, (help_text, value) in self.read().items():
            yield GaugeMetricFamily(name, help_text, value=value)

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []
