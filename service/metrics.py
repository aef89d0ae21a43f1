"""Prometheus metrics (``GET /metrics``), one registry per app.

Counters and histograms are fed as the server works (requests, WebSockets, tables,
leases); gauges (tables, seats, connections, paused tables, the database pool, the
process) and the ledger totals are read when the metrics are scraped, so they are
never stale.

A server of several workers (``serve --workers``) answers for the whole, whichever
worker is scraped: each worker's counters and histograms live in files of the
server's run directory (prometheus_client's multiprocess mode, ``MULTIPROC_ENV``),
summed at each scrape — a worker that died and was started again keeps what it
counted, so no counter ever goes backwards between scrapes — and the gauges are
asked of every worker over its internal socket and summed (:func:`sum_live`).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's: set for every worker
#: gauges that are the database's, not a worker's: the same whichever worker reads them
NOT_SUMMED = ("rummy_ledger_",)
Live = dict[str, tuple[str, float]]  # name -> (help, value)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "rummy_http_requests",
            "HTTP requests answered, by method, route and status (a WebSocket counts once, as its upgrade)",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "rummy_http_request_seconds",
            "Time to answer an HTTP request (a WebSocket: its upgrade only)",
            ["route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        self.server_errors = Counter(
            "rummy_server_errors",
            "Requests answered 500 (a fault of ours, logged with its traceback)",
            registry=self.registry,
        )
        self.ws_opened = Counter("rummy_ws_connections_opened", "WebSocket connections opened", registry=self.registry)
        self.ws_messages = Counter(
            "rummy_ws_messages_received", "WebSocket messages received from clients", registry=self.registry
        )
        self.ws_slowed = Counter(
            "rummy_ws_messages_slowed",
            "WebSocket messages read late: their socket sent beyond its burst and rate (service.pace)",
            registry=self.registry,
        )
        self.ws_too_many = Counter(
            "rummy_ws_refused_too_many_sockets",
            "WebSocket handshakes refused: the player had its share of open sockets (service.pace)",
            registry=self.registry,
        )
        self.tables_taken = Counter(
            "rummy_tables_taken",
            "Tables this server began to serve: at start, created, or taken over (a lease won)",
            registry=self.registry,
        )
        self.tables_let_go = Counter(
            "rummy_tables_let_go",
            "Tables this server stopped serving: handed over between hands, its lease lost (fenced), "
            "or its task failed (let go to be loaded afresh)",
            ["why"],
            registry=self.registry,
        )
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
        self.malloc_trim_seconds = Histogram(
            "rummy_malloc_trim_seconds",
            "Time of each return of the C heap's free pages to the system (glibc malloc_trim; service/memtrim.py)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25),
            registry=self.registry,
        )
        self.heartbeat_late_seconds = Histogram(
            "rummy_heartbeat_late_seconds",
            "How long after it was due each completed heartbeat began (the event loop kept it waiting: a "
            "process starved of CPU); past half the lease, leases are at risk",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0),
            registry=self.registry,
        )
        self.heartbeat_seconds = Histogram(
            "rummy_heartbeat_seconds",
            "Time each completed heartbeat took (renew, take, rebalance: the database's speed)",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=self.registry,
        )
        self.reloads = Counter(
            "rummy_table_reloads",
            "Tables that reloaded from the database after a failed write (a settle failure among them)",
            ["during"],
            registry=self.registry,
        )
        self.log_reads = Counter(
            "rummy_log_reads",
            "Reads of a hand's stored records that memory forgot (a join asking for old events, a hand's end)",
            registry=self.registry,
        )

        self.live: list[Callable[[], dict[str, Any]]] = []

    def add_live(self, read: Callable[[], dict[str, Any]]) -> None:
        """Gauges read at scrape time from ``read()``: {name: (help, value)}."""
        self.live.append(read)
        self.registry.register(_Live(read))

    def read_live(self) -> Live:
        """This process's gauges, now."""
        out: Live = {}
        for read in self.live:
            out.update(read())
        return out


def process_gauges() -> Live:
    """This process's CPU time and peak memory (summed over the workers)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "rummy_process_cpu_seconds": (
            "CPU time of the server's processes (user and system)",
            use.ru_utime + use.ru_stime,
        ),
        "rummy_process_max_resident_bytes": ("Peak resident memory of the server's processes", use.ru_maxrss * 1024),
        "rummy_process_resident_bytes": ("Resident memory of the server's processes now", resident_bytes()),
        "rummy_processes": ("Processes serving (the workers)", 1),
    }


def resident_bytes() -> int:
    """This process's resident memory now (0 where /proc is not)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def sum_live(states: list[Live]) -> Live:
    """Every worker's gauges as one: summed, but for the database's own (the ledger),
    which are the same whichever worker reads them."""
    out: dict[str, tuple[str, float]] = {}
    for state in states:
        for name, (help_text, value) in state.items():
            if name in out and not name.startswith(NOT_SUMMED):
                out[name] = (help_text, out[name][1] + value)
            elif name not in out:
                out[name] = (help_text, value)
    return out


def whole_server(live: Live) -> bytes:
    """The server's metrics, for a worker of ``serve --workers``: every worker's
    counters and histograms from the shared directory, and ``live``, the gauges of
    every worker summed."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, os.environ[MULTIPROC_ENV])  # type: ignore[no-untyped-call]
    registry.register(_Live(lambda: live))
    return generate_latest(registry)


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


class _Live(Collector):
    def __init__(self, read: Callable[[], dict[str, Any]]) -> None:
        self.read = read

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for name, (help_text, value) in self.read().items():
            yield GaugeMetricFamily(name, help_text, value=value)

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []


def route_of(request: Any) -> str:
    """A request's route as declared (``/api/tables/{table_id}``), never its path:
    the label's values stay few."""
    route = request.match_info.route
    resource = getattr(route, "resource", None)
    return resource.canonical if resource is not None else "unmatched"
