"""The load bench's output: the aligned tables on stdout, the latency chart, and JSON
without NaN.  Reads the report ``bench/load.py`` builds; computes nothing new."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

KINDS = ("project", "floor", "floor_like")
FLOORS = ("floor", "floor_like")


def n(x: Any, d: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.{d}f}"


def fmt(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def load(p: dict[str, Any]) -> str:
    """The 1-minute load average before → after a measurement."""
    return f"{p['load_avg_before'][0]:.1f}→{p['load_avg_after'][0]:.1f}"


def span(v: list[float] | None, d: int = 0) -> str:
    if not v:
        return "-"
    return n(v[0], d) if v[0] == v[1] else f"{n(v[0], d)}–{n(v[1], d)}"


def kinds_of(row: dict[str, Any]) -> list[str]:
    return [k for k in KINDS if k in row]


def throughput_rows(rows: list[dict[str, Any]], human: bool) -> list[str]:
    head = ["round", "seats", "who", "actions/s", "p50 ms", "p99 ms", "max ms", "server CPU%", "CPU ms/act"]
    head += ["PG ms/act", "frames/act", "KB/act", "wire KB/act"]
    head += ["RSS MB", "KB/seat", "set-up s"] if human else []
    head += ["load 1m"]
    out = [head]
    for r in rows:
        for kind in kinds_of(r):
            p = r[kind]
            line = [str(r.get("round", 1)), f"{p['seats_reached']}/{r['seats']}", kind]
            line += [n(p["actions_per_s"]), n(p["p50_ms"], 1), n(p["p99_ms"], 1), n(p["max_ms"], 1)]
            line += [n(p["server_cpu_pct"]), n(p.get("server_cpu_ms_per_action"), 2)]
            line += [n(p.get("pg_cpu_ms_per_action"), 2), n(p["frames_in_per_action"], 1)]
            line += [n(p["bytes_in_per_action"] / 1024, 1), n(p.get("wire_bytes_in_per_action", 0) / 1024, 1)]
            if human:
                line += [n(p["rss_after_kb"] / 1024), n(p["rss_per_seat_kb"], 1), n(p["setup_s"])]
            line.append(load(p))
            out.append(line)
    return fmt(out)


def ratio_rows(rows: list[dict[str, Any]]) -> list[str]:
    out = [["round", "seats", "project ÷", "actions/s", "CPU ms/act", "p50", "p99"]]
    for r in rows:
        for f, x in r.get("ratios", {}).items():
            out.append(
                [
                    str(r.get("round", 1)),
                    str(r["seats"]),
                    f,
                    n(x["actions_per_s"], 2),
                    n(x["server_cpu_ms_per_action"], 2),
                    n(x["p50"], 2),
                    n(x["p99"], 2),
                ]
            )
    return fmt(out) if len(out) > 1 else []


def summary_rows(entries: list[dict[str, Any]]) -> list[str]:
    out = [["seats", "rounds", "who", "actions/s", "CPU ms/act", "p99 ms", "÷ floor (tput)", "÷ floor (CPU)"]]
    out[0] += ["÷ floor_like (tput)", "÷ floor_like (CPU)"]
    for e in entries:
        for kind in KINDS:
            if e.get(f"{kind}.actions_per_s") is None:
                continue
            line = [str(e["seats"]), str(e["rounds"]), kind, span(e[f"{kind}.actions_per_s"])]
            line += [span(e[f"{kind}.server_cpu_ms_per_action"], 2), span(e[f"{kind}.p99_ms"], 1)]
            for f in FLOORS:
                if kind == "project":
                    line += [span(e[f"ratio_{f}.actions_per_s"], 2), span(e[f"ratio_{f}.server_cpu_ms_per_action"], 2)]
                else:
                    line += ["", ""]
            out.append(line)
    return fmt(out)


def rss_rows(points: list[dict[str, Any]]) -> list[str]:
    out = [["who", "seats", "minutes", "actions", "start MB", "end MB", "KB/min", "KB/action"]]
    out[0] += ["2nd half KB/min", "2nd half KB/action", "p99 ms", "load 1m"]
    for p in points:
        t = p["rss"]
        out.append(
            [
                p["kind"],
                f"{p['seats_reached']}/{p['seats']}",
                n(t["minutes"], 1),
                n(t["acks"]),
                n((t["start_kb"] or 0) / 1024, 1),
                n((t["end_kb"] or 0) / 1024, 1),
                n(t["slope_kb_per_min"], 1),
                n(t["slope_kb_per_action"], 2),
                n(t.get("late_slope_kb_per_min"), 1),
                n(t.get("late_slope_kb_per_action"), 2),
                n(p["p99_ms"], 1),
                load(p),
            ]
        )
    return fmt(out)


def starved_rows(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        [
            "round",
            "who",
            "seats",
            "set-up s",
            "actions/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "server CPU%",
            "hog CPU%",
            "lost leases",
            "late beats (max s)",
            "reloads",
            "of them timeouts",
            "load retries",
            "handshakes failed/tried",
            "reconnects",
            "clock moves",
            "lost",
            "load 1m",
        ]
    ]
    for r in rows:
        for kind in kinds_of(r):
            p = r[kind]
            log = p["server_log"]
            project = kind == "project"
            out.append(
                [
                    str(r.get("round", 1)),
                    kind,
                    f"{p['seats_reached']}/{r['seats']}",
                    n(p["setup_s"]),
                    n(p["actions_per_s"]),
                    n(p["p50_ms"], 1),
                    n(p["p99_ms"], 1),
                    n(p["max_ms"], 1),
                    n(p["server_cpu_pct"]),
                    n(p["starved"]["hog_cpu_pct"]),
                    n(log["lost_leases"]) if project else "n/a",
                    (f"{log.get('late_heartbeats', 0):,} ({log.get('late_heartbeat_max_ms', 0) / 1000:.1f})")
                    if project
                    else "n/a",
                    n(log["reloads"]) if project else "n/a",
                    n(log["reload_timeouts"]) if project else "n/a",
                    n(log["load_retries"]) if project else "n/a",
                    f"{p['handshakes_failed']:,}/{p['handshakes']:,}",
                    n(p.get("reconnects")) if project else "n/a",
                    n(p.get("clock_moves")) if project else "n/a",
                    n(p["lost"]),
                    load(p),
                ]
            )
    return fmt(out)


def table(report: dict[str, Any]) -> str:
    lines = []
    m = report["machine"]
    lines.append(f"{m['cpu']}, {m['cores']} cores, Python {m['python']}; {report['date']}; code at {report['commit']}")
    lines.append(
        f"server workers: {report['settings']['server_workers']}; load average before {report['load_avg_before']},"
        f" after {report['load_avg_after']}"
    )
    if report["saturation"]:
        lines += ["", "saturation (no think time)", *throughput_rows(report["saturation"], False)]
        lines += ["", "saturation, the project over each floor of the same round", *ratio_rows(report["saturation"])]
    if report["human"]:
        think = report["settings"]["think_s"]
        lines += ["", f"human pace (each action {think} s after the turn comes)"]
        lines += throughput_rows(report["human"], True)
        lines += ["", "human pace, the project over each floor of the same round", *ratio_rows(report["human"])]
    for scenario, entries in report.get("summary", {}).items():
        if entries and max(e["rounds"] for e in entries) > 1:
            lines += ["", f"{scenario}: ranges over the rounds", *summary_rows(entries)]
    if report.get("rss"):
        lines += ["", "memory: the server's RSS (all its processes) over a human-pace run; least-squares slopes,"]
        lines[-1] += " over the window and over its second half"
        lines += rss_rows(report["rss"])
    if report.get("starved"):
        st = report["settings"]["starved"]
        lines += [
            "",
            f"starved: human pace, the server pinned to core {st['core']} beside stress-ng --cpu {st['hogs']}"
            " on that core; log counts, handshakes and lost actions over the whole run (set-up included)",
            *starved_rows(report["starved"]),
        ]
    noisy = []
    for scenario in ("saturation", "human", "starved"):
        for r in report.get(scenario, []):
            for kind in kinds_of(r):
                noisy += disturbed(f"{scenario} {r['seats']} seats {kind}", r[kind])
    for p in report.get("rss", []):
        noisy += disturbed(f"rss {p['seats']} seats {p['kind']}", p)
    if noisy:
        lines += ["", "disturbed by other work on the machine:", *noisy]
    t = report["targets"]
    if "saturation" in t:
        s = t["saturation"]
        lines.append(
            f"\nsaturation target (≥ 1,500 actions/s, p99 ≤ 50 ms, ≥ 0.5× floor): peak {n(s['peak_actions_per_s'])}/s"
            f" at p99 {n(s['peak_p99_ms'], 1)} ms, {n(s['floor_ratio_at_peak'], 2)}× floor; best within p99 50 ms:"
            f" {n(s['best_within_p99'])}/s — {'met' if s['met'] else 'missed'}"
        )
    if "human" in t:
        h = t["human"]
        lines.append(
            f"human-pace target (10,000 seats, p99 ≤ 100 ms, ≤ 100 KB/seat): {n(h['largest_seats'])} seats,"
            f" p99 {n(h['p99_ms'], 1)} ms, {n(h['kb_per_seat'], 1)} KB/seat — {'met' if h['met'] else 'missed'}"
        )
    return "\n".join(lines)


def disturbed(label: str, p: dict[str, Any]) -> list[str]:
    if p["other_cpu_pct"] < 25 and p["steal_cpu_pct"] < 10:
        return []
    who = ", ".join(f"{o['name']} {o['cpu_pct']:.0f}%" for o in p["busiest_others"][:3])
    return [
        f"  {label}: other processes {p['other_cpu_pct']:.0f}% of a core, steal {p['steal_cpu_pct']:.0f}%"
        + (f" ({who})" if who else "")
    ]


def chart(report: dict[str, Any], path: Path, targets: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6))
    style = {
        "project": ("tab:red", "the table server"),
        "floor": ("tab:blue", "bare floor (aiohttp + asyncpg insert)"),
        "floor_like": ("tab:green", "like-for-like floor (+ verify, sign, slim pushes)"),
    }
    panels = [
        (
            axes[0],
            report["saturation"],
            "actions_per_s",
            "acknowledged actions/s (K tables × 6 seats, no think time)",
            "saturation",
            targets["saturation_p99_ms"],
        ),
        (
            axes[1],
            report["human"],
            "seats_reached",
            f"connected seats (tables of 6, each action {report['settings']['think_s']} s after its turn comes)",
            "human pace",
            targets["human_p99_ms"],
        ),
    ]
    for ax, rows, xkey, xlabel, title, target in panels:
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("latency, send of an action → its reply (ms)")
        drawn = False
        for kind, (color, label) in style.items():
            usable = [r for r in rows if kind in r and r[kind]["samples"] and r[kind][xkey] > 0]
            if not usable:
                continue
            drawn = True
            xs = [r[kind][xkey] for r in usable]
            ax.plot(xs, [r[kind]["p50_ms"] for r in usable], "o-", color=color, label=f"{label} p50")
            ax.plot(xs, [r[kind]["p99_ms"] for r in usable], "s--", color=color, label=f"{label} p99")
            if xkey == "actions_per_s":
                for r, x in zip(usable, xs, strict=True):
                    ax.annotate(
                        f"K={r['tables']}",
                        (x, r[kind]["p99_ms"]),
                        textcoords="offset points",
                        xytext=(4, 4),
                        fontsize=8,
                    )
        if not drawn:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
            continue
        ax.axhline(target, color="grey", lw=0.8, ls=":", label=f"target p99 {target} ms")
        if xkey == "actions_per_s":
            ax.axvline(targets["saturation_actions_per_s"], color="grey", lw=0.8, ls="-.", label="target 1,500/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    m = report["machine"]
    fig.suptitle(
        f"{m['cpu']}, {m['cores']} cores (server, PostgreSQL and load generator on one machine) — {report['date']}\n"
        f"{report['command']}",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def clean(x: Any) -> Any:
    """NaN (no sample) as null: the JSON stays JSON."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    return x
