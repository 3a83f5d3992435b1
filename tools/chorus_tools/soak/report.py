"""The soak's verdict, as markdown: drift of the server's memory, fds and threads after the warm-up, KV blocks and
request counts against what was sent, gaps, underruns and waits for first audio; PASS only when nothing leaked,
failed or died."""
from __future__ import annotations

import statistics

from chorus_tools.soak.records import HOSTILE, KINDS, Load, Sample


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    if len(points) < 2:
        return 0.0
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def report(args, samples: list[Sample], load: Load, final: dict[str, float], exit_code: int | None) -> tuple[str, bool]:
    warm = [s for s in samples if s.t >= args.warm_up]
    if len(warm) < 2:
        warm = samples
    first, last = warm[0], warm[-1]
    in_window = last.requests_sent - first.requests_sent
    mb_per_hour = slope([(s.t, s.rss_mb) for s in warm]) * 3600
    kb_per_request = slope([(s.requests_sent, s.rss_mb) for s in warm]) * 1024
    by_kind = {k: sum(o.kind == k for o in load.outcomes) for k in KINDS}
    failed = [o for o in load.outcomes if not o.ok]
    running = [o for o in load.outcomes if o.chunks > 1 and o.kind not in HOSTILE]
    gaps = sorted(o.longest_gap_s for o in running)
    counted = final["requests_counted"]
    statuses = ", ".join(f"{k[7:]} {v:g}" for k, v in sorted(final.items()) if k.startswith("status_"))
    counts_match = counted == load.sent
    blocks_free = final["kv_blocks_used"] == 0
    passed = counts_match and blocks_free and not failed and exit_code in (None, 0)

    if gaps:
        worst = max(running, key=lambda o: o.longest_gap_s)
        p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
        stall = (f"{gaps[-1] * 1000:.0f} ms ({worst.kind} at {worst.started:.0f} s); p99 {p99 * 1000:.0f} ms, "
                 f"median {statistics.median(gaps) * 1000:.0f} ms")
    else:
        stall = "no reply had two chunks"
    errors = f": {', '.join(sorted({o.error or 'no audio' for o in failed}))}" if failed else ""
    # One-shot replies only: a streamed reply's text comes at its client's pace, so its gaps are partly its own.
    heard = [o for o in load.outcomes if o.kind == "oneshot" and o.ok]
    dry = [o.underrun_s for o in heard if o.underrun_s > 0]
    underruns = (f"{len(dry)} of {len(heard)} ran dry at least once; {sum(dry):.1f} s of silence in all, worst "
                 f"{max(dry):.2f} s" if dry else f"none of {len(heard)}")
    waits = sorted(o.first_audio_s for o in load.outcomes if o.first_audio_s is not None and o.kind != "hangup")
    first_audio = (f"longest {waits[-1]:.2f} s, p99 {waits[min(len(waits) - 1, int(0.99 * len(waits)))]:.2f} s, "
                   f"median {statistics.median(waits):.2f} s over {len(waits)} replies" if waits else "no audio")
    rows = [
        (f"server RSS after the {args.warm_up:g} s warm-up",
         f"{first.rss_mb:.1f} -> {last.rss_mb:.1f} MB: {last.rss_mb - first.rss_mb:+.2f} MB over {in_window} "
         f"requests (slope {kb_per_request:+.2f} KB/request, {mb_per_hour:+.1f} MB/hour)"),
        ("server RSS min / max, whole run",
         f"{min(s.rss_mb for s in samples):.1f} / {max(s.rss_mb for s in samples):.1f} MB"),
        ("open fds / threads after the warm-up: first -> last (max)",
         f"{first.fds} -> {last.fds} ({max(s.fds for s in warm)}) / {first.threads} -> {last.threads} "
         f"({max(s.threads for s in warm)})"),
        ("KV blocks used: max under load / after it",
         f"{max(s.kv_blocks_used for s in samples):g} / {final['kv_blocks_used']:g} "
         f"{'(all free)' if blocks_free else '(NOT FREED)'}"),
        ("chorus_requests_total summed over statuses",
         f"{counted:g} of {load.sent} sent {'(equal)' if counts_match else '(MISMATCH)'}: {statuses}"),
        ("failed requests (client side)", f"{len(failed)}{errors}"),
        ("longest gap between two chunks of a running reply (one with audio buffered may sit steps out)", stall),
        ("one-shot replies heard as a listener playing at 1x from the first chunk", underruns),
        ("time to first audio of a fresh request (one-shot and streamed, beside the hostile streams)", first_audio),
        ("server", "still running at the end" if exit_code is None else f"exited early with {exit_code}"),
    ]
    kinds = ", ".join(f"{n} {k}" for k, n in by_kind.items())
    lines = [f"## Soak: {args.minutes:g} min, {args.rooms} rooms, {load.sent} requests ({kinds})", "",
             "| check | result |", "|---|---|"]
    lines += [f"| {check} | {result} |" for check, result in rows]
    lines += ["", "| t (s) | RSS (MB) | fds | threads | KV blocks used | requests sent | counted by the server |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    step = max(1, len(samples) // 12)
    shown = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
    lines += [f"| {s.t:.0f} | {s.rss_mb:.1f} | {s.fds} | {s.threads} | {s.kv_blocks_used:g} | {s.requests_sent} "
              f"| {s.requests_counted:g} |" for s in shown]
    lines += ["", f"**{'PASS' if passed else 'FAIL'}**"]
    return "\n".join(lines), passed
