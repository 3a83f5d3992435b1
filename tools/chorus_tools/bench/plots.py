"""Plots for tools/bench.py (matplotlib, imported here only: it is no runtime dependency of the server).

Each function takes the report's figures (plain dicts and lists, as in report.json) and writes one PNG.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server or in CI
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _finish(fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    """The line plots' common frame: a log2 x axis (rooms, tokens), labels, grid, legend; then saved."""
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def ttfa_vs_rooms(sweeps: dict[str, list[dict]], path: Path) -> Path:
    """sweeps: policy label -> rows with rooms, ttfa_p50_s, ttfa_p95_s."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (label, rows) in enumerate(sweeps.items()):
        rows = [r for r in rows if r.get("ttfa_p50_s") is not None]
        if not rows:
            continue
        color = f"C{i}"
        rooms = [r["rooms"] for r in rows]
        ax.plot(rooms, [r["ttfa_p50_s"] for r in rows], "o-", color=color, label=f"{label} p50")
        ax.plot(rooms, [r["ttfa_p95_s"] for r in rows], "s--", color=color, label=f"{label} p95")
    return _finish(fig, ax, path, "rooms at once (mixed burst)",
                   "time to first audio (s)", "Time to first audio vs rooms")


def throughput_vs_rooms(sweeps: dict[str, list[dict]], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, rows in sweeps.items():
        rows = [r for r in rows if r.get("audio_s_per_wall_s") is not None]
        if rows:
            ax.plot([r["rooms"] for r in rows], [r["audio_s_per_wall_s"] for r in rows], "o-", label=label)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="one room in real time")
    return _finish(fig, ax, path, "rooms at once (mixed burst)",
                   "audio seconds per wall second (all rooms)", "Aggregate throughput vs rooms")


def rtf_distribution(groups: dict[str, list[float]], path: Path) -> Path:
    """groups: workload label -> per-request RTFs."""
    groups = {k: v for k, v in groups.items() if v}
    fig, ax = plt.subplots(figsize=(max(6.4, 0.9 * len(groups) + 2), 4.4))
    if groups:
        ax.boxplot(list(groups.values()), showfliers=True)
        ax.set_xticks(range(1, len(groups) + 1), list(groups), rotation=30, ha="right", fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="real time")
    ax.set_yscale("log")
    ax.set_ylabel("RTF (generation wall s / audio s)")
    ax.set_title("Per-request real-time factor by workload")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def kv_rooms(budgets: list[int], curves: dict[str, list[float]], path: Path, marker: int | None = None) -> Path:
    """curves: scheme label -> rooms held at each budget (tokens)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, rooms in curves.items():
        ax.plot(budgets, rooms, "o-" if label.startswith("paged") else ".--", label=label)
    if marker:
        ax.axvline(marker, color="grey", lw=0.8, ls=":", label="server pool")
    return _finish(fig, ax, path, "KV budget (tokens)",
                   "rooms held at once", "Rooms a KV budget holds: paged vs fixed buckets")
