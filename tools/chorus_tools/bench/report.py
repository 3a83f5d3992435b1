"""tools/bench.py's report.md: the run's figures as markdown tables, with the plots beside it."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from chorus_tools.bench.figures import fmt, ratio, realtime_rooms, targets
from chorus_tools.bench.household import (
    bursts_by_kind,
    bursts_by_kind_table,
    gap_free_rooms,
    household,
    household_table,
)
from chorus_tools.bench.plan import BENCH_SEED, BUCKETS, FRAMES_PER_AUDIO_S, LOOKAHEAD, Plan
from chorus_tools.bench.summary import summarise
from chorus_tools.bench.workloads import Scenario


def peers_table(peers: list[dict], sweep: list[dict]) -> list[str]:
    by_rooms = {r["rooms"]: r for r in sweep}

    def ours(rooms: int):
        r = by_rooms.get(rooms, {})
        return r["audio_s_per_wall_s"] * FRAMES_PER_AUDIO_S if r.get("audio_s_per_wall_s") else None

    one = ours(1)
    lines = ["| system | one stream frames/s | one stream RTF | 4 rooms aggregate frames/s | "
             "8 rooms aggregate frames/s |",
             "|---|---:|---:|---:|---:|",
             f"| **wyoming-chorus (this run)** | {fmt(one, 1)} | {fmt(FRAMES_PER_AUDIO_S / one if one else None)} | "
             f"{fmt(ours(4), 1)} | {fmt(ours(8), 1)} |"]
    for p in peers:
        o, c = p.get("one_stream", {}) or {}, p.get("concurrent", {}) or {}

        def agg(n: str, c=c):
            return (c.get(n) or {}).get("aggregate_frames_per_s")

        rel = [fmt(ratio(mine, theirs), unit="x") for mine, theirs in
               ((one, o.get("frames_per_s")), (ours(4), agg("4")), (ours(8), agg("8")))]
        lines.append(f"| {p.get('name', '?')} | {fmt(o.get('frames_per_s'), 1)} (ours {rel[0]}) | "
                     f"{fmt(o.get('rtf'))} | "
                     f"{fmt(agg('4'), 1)} (ours {rel[1]}) | {fmt(agg('8'), 1)} (ours {rel[2]}) |")
    return lines


def sweep_table(label: str, rows: list[dict], first: str = "rooms") -> list[str]:
    lines = [f"**{label}**", "",
             f"| {first} | requests | errors | TTFA p50 / p95 / p99 (s) | RTF p50 / max | audio s per wall s | "
             "mean batch | mean step (ms) | peak KV blocks | preemptions |",
             "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r.get('rooms', r.get('label', ''))} | {r['requests']} | {r['errors']} | {fmt(r['ttfa_p50_s'])} / "
            f"{fmt(r['ttfa_p95_s'])} / {fmt(r['ttfa_p99_s'])} | {fmt(r['rtf_p50'])} / {fmt(r['rtf_max'])} | "
            f"{fmt(r['audio_s_per_wall_s'])} | {fmt(r.get('server_batch_mean'), 1)} | "
            f"{fmt(r.get('server_step_ms_mean'), 0)} | {fmt(r.get('server_kv_blocks_peak'), 0)} | "
            f"{fmt(r.get('server_preemptions'), 0)} |")
    return lines + [""]


def by_kind(phases: dict) -> tuple[list[str], dict[str, list[float]]]:
    """TTFA and RTF by kind and mode over every scenario of each server (the RTF groups feed the plot)."""
    lines = ["| server | kind | mode | requests | TTFA p50 / p95 (s) | RTF p50 (complete) | RTF p50 (cut) |",
             "|---|---|---|---:|---|---|---|"]
    groups: dict[str, list[float]] = {}
    for name, phase in phases.items():
        outcomes = [o for s in phase.get("scenarios", []) for o in s.outcomes]
        for key in sorted({(o.kind, o.mode) for o in outcomes}):
            summary = summarise(Scenario("", [o for o in outcomes if (o.kind, o.mode) == key]))
            probe = key[0].startswith("announce (")  # hung up at its first audio: no RTF
            lines.append(f"| {name} | {key[0]} | {key[1]} | {summary['requests']} | {fmt(summary['ttfa_p50_s'])} / "
                         f"{fmt(summary['ttfa_p95_s'])} | {'-' if probe else fmt(summary['rtf_p50'])} | "
                         f"{'-' if probe else fmt(summary['rtf_partial_p50'])} |")
        for s in phase.get("scenarios", []):
            workload = s.name.split(" ", 1)[1] if " " in s.name else s.name
            if workload.startswith("burst"):
                workload = "burst"
            if workload == "contention":  # probes hang up at once, readers are cut seconds in: no RTF worth a box
                continue
            for o in s.outcomes:
                if o.rtf is not None:
                    groups.setdefault(f"{name} {workload} {o.kind}{' (cut)' if o.cut else ''}", []).append(o.rtf)
    return lines, groups


# The plots' legend for each server the report runs (one line per server: the two continuous-batching servers
# differ only in scheduler.policy, so their labels must too).
PLOT_LABELS = {"continuous": "continuous, playback policy", "fcfs": "continuous, FCFS",
               "static": "static batching", "max_batch_1": "one request at a time"}


def plot_sweeps(phases: dict) -> dict[str, list[dict]]:
    """The burst sweeps to plot: legend label -> rows, one entry per server that ran a sweep."""
    return {PLOT_LABELS.get(name, name): phase["sweep"] for name, phase in phases.items() if phase.get("sweep")}


def write_report(out: Path, header: dict, plan: Plan, phases: dict, engine: dict, kv: dict, peers: list[dict],
                 elapsed: float, args, summary: list[str]) -> Path:
    """`summary`: the closing "Summary" block (chorus_tools/bench/verdict.py)."""
    cont = phases.get("continuous", {})
    lines = ["# wyoming-chorus benchmark", "",
             f"- **Machine**: {header['cpu']}, {header['cores']} cores, ISA {' '.join(header['isa']) or 'unknown'}"
             + (f" (limited: ONEDNN_MAX_CPU_ISA={header['isa_limit']}; see docs/performance.md, Which kernels run)"
                if header.get("isa_limit") else ""),
             f"- **Model**: {header['model']}{' (RANDOM weights)' if header['random_weights'] else ''}, "
             f"{header['weights']} weights, inference {header['inference_precision']}, KV {header['kv_precision']}"
             + (f", compressed products on {header['compressed_matmuls']}" if header.get("compressed_matmuls") else ""),
             f"- **OpenVINO** {header['openvino']}; **date** {header['date']}; run took {elapsed / 60:.1f} min "
             f"(`{' '.join(sys.argv)}`)",
             "- Server: `wyoming-chorus` subprocess, engine.benchmark_frames_per_word 5 (12.5 frames/s at 2.5 "
             "words/s), "
             f"engine.seed {BENCH_SEED}, other settings the embedded config.yaml's (KV pool "
             f"{fmt(kv.get('pool_tokens'))} tokens). One run on a shared machine: compare ratios, not absolutes.", ""]
    heard = household(phases)
    lines += ["## Targets", "", "| measure | value | target | met |", "|---|---:|---|---|"]
    for t in targets(phases, engine, kv, heard):
        value = "n/a" if t["value"] is None else {"%": f"{t['value']:.1%}", "s": f"{t['value']:.3f} s"}.get(
            t["unit"], f"{t['value']:.2f}x")
        met = t["note"] or {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['measure']} | {value} | {t['target']} | {met} |")
    rt = realtime_rooms(cont.get("sweep", []), cont.get("scenarios", []))
    best = max((r["audio_s_per_wall_s"] or 0 for r in cont.get("sweep", [])), default=0)
    lines += ["", f"**Rooms held in real time: {rt}** (the largest N of the mixed burst at which every request, cut "
              f"read-outs over the part they ran, had RTF < 1 and none failed). Throughput bound: the best aggregate "
              f"was "
              f"{best:.2f} audio s per wall s, i.e. at most {math.floor(best)} rooms speaking continuously.",
              "", "**Rooms held with no gap** (the largest N of the mixed burst at which every room heard its reply "
              "with no gap through Home Assistant 2026.11): "
              + ", ".join(f"{policy} {gap_free_rooms(rows)}" for policy, rows in heard.items()), ""]

    lines += ["## Rooms at once (mixed burst)", "",
              "Room i speaks kind i of the cycle assistant, announce, announce, assistant, announce, assistant, "
              "announce, read-out (so read-outs appear from 8 rooms on); assistant replies are streamed "
              f"(`--mode {plan.mode}`), the rest one-shot. "
              + ("Read-outs are cut once the other rooms are done. " if not plan.full_readouts else "")
              + f"The playback and FCFS rows: {plan.rounds} rounds each, alternated A-B-A-B, pooled.", ""]
    labels = {"continuous": "continuous batching, scheduler.policy playback (the server's defaults)",
              "fcfs": "continuous batching, scheduler.policy fcfs (every running request in every step)",
              "static": "static batching (baseline)",
              "max_batch_1": "one request at a time, engine.max_batch 1 (baseline)"}
    for name, phase in phases.items():
        if phase.get("error"):
            lines += [f"**{labels[name]}**: failed: {phase['error']}", ""]
        elif phase.get("sweep"):
            lines += sweep_table(labels[name], phase["sweep"])
    lines += household_table(heard)
    lines += bursts_by_kind_table(bursts_by_kind(phases))
    lines += ["## Poisson arrivals (mixed)", ""]
    prows = [{**phases[n]["poisson"], "label": n} for n in ("continuous", "static") if phases.get(n, {}).get("poisson")]
    if prows:
        how = "--rate" if plan.rate else f"{plan.load:.0%} of the capacity the continuous burst sweep measured"
        lines += [f"{plan.poisson_requests} requests (announcements : assistant replies : read-outs drawn 5 : 4 : 1, "
                  "at "
                  f"least one each) at a mean {prows[0]['rate_per_s']:.3f} requests/s "
                  f"({how}"
                  "); the same arrivals for both servers.", ""]
        lines += sweep_table("continuous vs static", prows, "server")[2:]
    c = cont.get("contention")
    if c:
        lines += ["## A short announcement while rooms read long texts", "",
                  f"{plan.probes} announcements one after another (each round; {plan.rounds} rounds pooled), alone, "
                  f"then again once all {c['readers']} read-outs "
                  f"({plan.readout_words}+ words, one-shot) were speaking ({c['readers_heard']} had first audio), "
                  f"and again once they had written 5 s each ({c.get('readers_playing')} had, still running); "
                  "each probe runs to its end. Underrun seconds: what the Home Assistant 2026.11 listener model "
                  "heard of each probe (see the table above).", "",
                  "| | times to first audio (s) | median (s) | underrun s per probe | held / probes |",
                  "|---|---|---:|---|---:|",
                  *(f"| {label} | {', '.join(f'{x:.2f}' for x in c[f'{key}_ttfa_s'])} | {fmt(c[f'{key}_median_s'])} | "
                    f"{', '.join(f'{x:.2f}' for x in c.get(f'{key}_underrun_s', []))} | {c.get(f'{key}_held', '-')} / "
                    f"{len(c[f'{key}_ttfa_s'])} |"
                    for label, key in (("alone", "alone"), (f"{c['readers']} rooms reading", "busy"),
                                       (f"{c['readers']} rooms playing", "playing"))
                    if f"{key}_ttfa_s" in c), ""]
    kind_lines, rtf_groups = by_kind(phases)
    lines += ["## By kind and mode (all scenarios of each server)", "", *kind_lines, ""]

    lines += ["## Step time by stage (engine level)", "",
              "Not all stages are on /metrics (it has whole-step seconds and batch sizes only), so they are measured "
              "in "
              "this process on real runner steps with u8 KV, "
              f"{plan.context} prompt rows per request, medians of {plan.engine_steps} steps. Talker: a step that "
              "re-runs each request's last row and emits nothing; code predictor + sampling: the runner's frame minus "
              "that (the runner does not time them apart); host: the engine step's wall time minus the runner's "
              "(EngineCore.step: messages + schedule() + the stats snapshot / update()). The codec decoder runs on "
              "its own thread beside the steps.", "",
              "| batch | step (ms) | talker | code predictor + sampling | host (schedule / update) | "
              "host share | frames/s |", "|---:|---:|---:|---:|---|---:|---:|"]
    for s in engine.get("stages", []):
        ran = "" if s["batch_ran"] == s["batch"] else f" (ran {s['batch_ran']:g}: eos)"
        lines.append(f"| {s['batch']}{ran} | {s['step_ms']:.1f} | {s['talker_ms']:.1f} | "
                     f"{s['code_predictor_sampling_ms']:.1f}"
                     f" | {s['host_ms']:.2f} ({s['schedule_ms']:.2f} / {s['update_ms']:.2f}) | "
                     f"{s['host_share']:.1%} | {s['frames_per_s']:.1f} |")
    for what, why in engine.get("skipped", {}).items():
        if what.startswith("stages"):
            lines.append(f"| {what.split()[-1]} | failed: {why} | | | | | |")
    if engine.get("codec_ms_per_audio_s") is not None:
        codec = engine["codec_ms_per_audio_s"]
        precision = engine.get("codec_precision")
        as_served = f" ({precision}, as served)" if precision else ""
        lines += ["", f"Codec decoder{as_served}: {codec:.0f} ms of compute per second of audio (streamed as the "
                  f"engine streams it), i.e. {codec * 0.08:.1f} ms per frame; a step of batch B hands it B frames.", ""]
    served = [(n, r) for n, p in phases.items() for r in p.get("sweep", [])]
    if served:
        lines += ["Server side (/metrics: chorus_step_seconds, chorus_batch_size) is in the sweep tables above.", ""]
    if engine.get("error"):
        lines += [f"Engine-level measurements failed: {engine['error']}", ""]

    if kv:
        held, fits = kv["at_pool"]["held"], kv["at_pool"]["fits"]
        lines += ["## KV cache: paged blocks vs fixed buckets", "",
                  f"From the tokens each reply of the run needs ({kv['replies']} replies, {kv['sentences']} sentences: "
                  f"mean {kv['tokens_per_sentence_mean']:.0f} tokens per sentence, "
                  f"max {kv['tokens_per_sentence_max']}, "
                  f"of which {kv['prompt_rows_mean']:.0f} prompt rows on average; tokens = prompt rows + frames - 1, "
                  "built by the server's own sentence splitter and RequestBuilder). A reply holds up to "
                  f"{LOOKAHEAD} sentences at once (the server's lookahead), each at its peak. Paged: whole "
                  f"{kv['block_size']}-token blocks as needed (mean {kv['paged_tokens_per_reply_mean']:.0f} tokens per "
                  "reply). Bucket S: every sentence reserves S tokens up front; a sentence longer than S cannot run "
                  "(its reply is left out). Rooms held = pool / mean demand per room.", "",
                  f"| scheme | rooms held in the server's pool ({kv['pool_tokens']} tokens) | replies that fit |",
                  "|---|---:|---:|", f"| paged | {held['paged']} | 100% |"]
        lines += [f"| bucket {s} | {held[f'bucket {s}']}{'' if fits[s] == 1 else ' (of the replies that fit)'} | "
                  f"{fits[s]:.0%} |" for s in BUCKETS]
        bpt = engine.get("kv_bytes_per_token", {})
        f16 = engine.get("f16_batch8")
        u8_8 = next((s for s in engine.get("stages", []) if s["batch"] == 8), None)
        lines += ["", "| KV precision | bytes per token | rooms held at the same bytes "
                  f"({kv['pool_bytes'] / 2**20:.0f} MiB) | step at batch 8 (ms) |", "|---|---:|---:|---:|"]
        for p, b in bpt.items():
            step = (u8_8 if p == "u8" else f16 if p == "f16" else None)
            lines.append(f"| {p} | {b:,.0f} | {kv['rooms_by_kv_precision_same_bytes'][p]} | "
                         f"{fmt(step['step_ms'] if step else None, 1)} |")
        for p, why in engine.get("skipped", {}).items():
            if p in ("f16", "bf16"):
                lines.append(f"| {p} | skipped: {why} | | |")
        lines.append("")

    mem = [(n, p.get("peak_rss_mb")) for n, p in phases.items() if p.get("peak_rss_mb")]
    if mem:
        lines += ["## Memory", "", "| server | peak RSS (VmHWM, MB) | peak KV blocks used (of total) |",
                  "|---|---:|---:|"]
        for n, rss in mem:
            blocks = [s.extra.get("server", {}) for s in phases[n].get("scenarios", [])]
            peak = max((b.get("kv_blocks_peak") or 0 for b in blocks), default=0)
            total = next((b.get("kv_blocks_total") for b in blocks if b.get("kv_blocks_total")), None)
            lines.append(f"| {n} | {rss:.0f} | {peak:.0f} of {fmt(total, 0)} |")
        lines.append("")

    if peers:
        lines += ["## Peers", "", "Frames/s: 12.5 frames per audio second. Ours: the continuous mixed burst at 1, 4 "
                  "and "
                  "8 rooms (one stream = 1 room).", "", *peers_table(peers, cont.get("sweep", [])), ""]

    errors = {n: sum(r["errors"] for r in p.get("sweep", [])) + (p.get("poisson", {}) or {}).get("errors", 0)
              for n, p in phases.items()}
    lines += ["## Notes", "",
              f"- Client-side errors by server: {', '.join(f'{n} {e}' for n, e in errors.items())}. Server logs: "
              + ", ".join(f"`{p.get('log')}`" for p in phases.values() if p.get("log")) + ".",
              "- The model has random weights: its audio is noise and the reply length comes from "
              "engine.benchmark_frames_per_word, so these figures are the server's and the engine's speed at the "
              "model's dimensions, not speech quality.",
              "- Time to first audio is measured by the client from its first text event (a stream's "
              "synthesize-chunk) to the first audio-chunk; a streamed reply's first sentence waits for its end to "
              "arrive in the deltas (plus the splitter's 0.2 s grace when the text pauses).", ""]

    plots = {}
    sweeps = plot_sweeps(phases)
    try:
        from chorus_tools.bench import plots as bench_plots  # matplotlib: a benchmark dependency only

        plots["ttfa"] = bench_plots.ttfa_vs_rooms(sweeps, out / "ttfa_vs_rooms.png")
        plots["throughput"] = bench_plots.throughput_vs_rooms(sweeps, out / "throughput_vs_rooms.png")
        plots["rtf"] = bench_plots.rtf_distribution(rtf_groups, out / "rtf_by_workload.png")
        if kv:
            plots["kv"] = bench_plots.kv_rooms(kv["budgets"], kv["curves"], out / "kv_rooms_vs_budget.png",
                                               kv["pool_tokens"])
    except Exception as error:  # noqa: BLE001  (a plot that fails must not lose the report)
        lines += [f"- Plotting failed: {type(error).__name__}: {error}", ""]
    if plots:
        lines += ["## Plots", ""] + [f"![{k}]({p.name})" for k, p in plots.items()] + [""]
    lines += summary
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
