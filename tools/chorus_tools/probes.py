"""Watching a running server from outside: free loopback ports, /metrics and /health over HTTP, a process's memory."""
from __future__ import annotations

import asyncio
import os
import re
import socket
from pathlib import Path

HOST = "127.0.0.1"
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    """A loopback port nobody listens on now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


async def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, str]:
    """(status, body) of GET `path` on the loopback port."""
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
    head, _, body = raw.decode("utf-8", "replace").partition("\r\n\r\n")
    return int(head.split()[1]), body


def parse_metrics(body: str) -> dict[str, float]:
    """Every sample by name, labels folded in: chorus_requests_total{status=ok}, chorus_step_seconds_sum, ...
    Histogram buckets are left out: their sums and counts are enough for the tools."""
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if "le" in sample.labels:
                continue
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


async def scrape(metrics_port: int) -> dict[str, float]:
    """The server's /metrics, parsed; RuntimeError unless it answers 200."""
    status, body = await http_get(metrics_port, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    return parse_metrics(body)


def rss_mb(pid: int) -> float:
    """Resident set of a process now, MB (/proc/PID/statm)."""
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_BYTES / 2**20


def fds_and_threads(pid: int) -> tuple[int, int]:
    """Open file descriptors and threads of a process now (/proc/PID/fd, /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as status:
        threads = next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    return len(os.listdir(f"/proc/{pid}/fd")), threads


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident set of a process (VmHWM), MB; None once it is gone. psutil is no dependency."""
    try:
        found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) / 1024 if found else None
