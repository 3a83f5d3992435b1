"""Peer benchmark: two other Qwen3-TTS implementations on this machine's CPU, at the same model dimensions as ours,
so that wyoming-chorus can be compared against them.

Peers:
  qwen-tts  the official package (PyPI qwen-tts 0.1.1) on torch, float32, torch.set_num_threads(--threads). It has
            no streaming output: a request's audio arrives whole, so it has no time to first audio.
  vox       vox-tts (PyPI), a C++ engine: the checkpoint converted by `python -m vox build --dtype f32`, run by
            vox.Engine(tmod, device="cpu", threads=--threads).stream(...), which yields audio chunks as decoded.

The model is one random-weight CustomVoice checkpoint (nothing can be downloaded here), made with qwen-tts's own
classes at the dimensions of wyoming_chorus/export/presets.py (0.6b by default, tiny with --quick) and saved in the
Hugging Face layout; both peers load that same directory. It is built once and cached under --cache.

Measured for each peer, every request the same text and speaker, greedy, and ended after exactly --frames frames
by each peer's own frame cap (max_new_tokens, max_frames): the checkpoint's end-of-speech logit is held at 0, below
the best code's, so that no request ends early on either peer:
  one stream   frames/s, RTF (wall seconds / audio seconds, audio = frames x 0.08 s) and, where the peer streams,
               the time to its first audio chunk; after one short warm-up request.
  concurrent   the aggregate frames/s of N requests started at once (N = --concurrency, 4 and 8), each in its own
               thread, the way each peer runs several requests: qwen-tts threads on one model (its generate is
               reentrant: no state on the model), vox threads each calling stream() on one Engine (the engine's
               own synthesize_many does exactly this). Each thread's audio is compared with the one-stream
               request's (same_audio): identical output is the evidence that the threads did not disturb each
               other. qwen-tts also takes a list of texts in one generate call, which batches them through one
               forward pass; that is measured too, under "batched".

Every stage runs in a child process of this script (`--stage`): a peer that is missing, fails or crashes is
recorded as {"error": "..."} and the run goes on, and each peer starts with the machine's memory to itself.
Nothing is installed at run time: the peers come from the `peers` extra. The machine is shared, so the figures
are rough; the 1-minute load average at each peer's start is recorded.

    python tools/bench_peers.py [--quick] [--frames 50] [--concurrency 4 8] [--json PATH] [--cache DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chorus_tools.peers.checkpoint import build_checkpoint, build_tmod, last_line, model_dir
from chorus_tools.peers.measure import LANGUAGE, SECONDS_PER_FRAME, SPEAKER, TEXT, bench_qwen_tts, bench_vox

PEERS = ("qwen-tts", "vox")


# ---------------------------------------------------------------- the machine

def isa() -> list[str]:
    """The vector extensions that decide CPU kernel choice, as /proc/cpuinfo lists them."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    return [name for name in ("avx2", "avx512f", "amx_tile") if name in flags]


# ---------------------------------------------------------------- stages in child processes

def run_stage(stage: str, args, timeout: float) -> dict:
    """Run `stage` in a child process of this script; its JSON result, or {"error": ...} if it failed, crashed
    or ran out of time. The child's stdout is dropped (qwen-tts prints a flash-attn banner there); its stderr
    shows, for progress and tracebacks."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "result.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--stage", stage, "--stage-out", str(out),
                   "--preset", args.preset, "--seed", str(args.seed), "--frames", str(args.frames),
                   "--threads", str(args.threads), "--cache", str(args.cache),
                   "--concurrency", *map(str, args.concurrency)]
        try:
            done = subprocess.run(command, stdout=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"{stage} took longer than {timeout:.0f} s (--timeout)"}
        if out.exists():
            return json.loads(out.read_text())
        return {"error": f"{stage} exited with status {done.returncode} and no result (see its stderr above)"}


def stage_main(args) -> None:
    """A child's work: one stage, its result (or its error, in one line) written as JSON to --stage-out."""
    args.checkpoint = model_dir(args.cache, args.preset, args.seed) / "checkpoint"
    args.tmod = model_dir(args.cache, args.preset, args.seed) / "vox-f32.tmod"
    try:
        if args.stage == "checkpoint":
            build_checkpoint(args.checkpoint, args.preset, args.seed)
            result: dict = {}
        elif args.stage == "tmod":
            build_tmod(args.checkpoint, args.tmod)
            result = {}
        else:
            result = {"qwen-tts": bench_qwen_tts, "vox": bench_vox}[args.stage](args)
    except Exception as error:  # recorded, not raised: one peer's failure must not end the run
        result = {"error": f"{type(error).__name__}: {last_line(str(error))}"}
    args.stage_out.write_text(json.dumps(result))


# ---------------------------------------------------------------- the run

def prepare(args) -> dict[str, str]:
    """Build what is not cached yet: the checkpoint (needs qwen-tts's classes), then vox's .tmod. Returns the error
    each peer inherits from a build that failed."""
    base = model_dir(args.cache, args.preset, args.seed)
    marker = base / "checkpoint.done"  # written last: a half-written checkpoint is rebuilt, not reused
    if not marker.exists():
        if importlib.util.find_spec("qwen_tts") is None or importlib.util.find_spec("torch") is None:
            why = "checkpoint: not cached, and building it needs qwen-tts and torch (the peers extra)"
            return dict.fromkeys(PEERS, why)
        _log(f"building the random {args.preset} checkpoint in {base / 'checkpoint'}")
        (base / "vox-f32.tmod").unlink(missing_ok=True)  # converted from the checkpoint being replaced
        built = run_stage("checkpoint", args, args.timeout)
        if "error" in built:
            return dict.fromkeys(PEERS, f"checkpoint: {built['error']}")
        marker.write_text("")
    errors = {}
    if importlib.util.find_spec("vox") is None:
        errors["vox"] = "not installed: pip install vox-tts (the peers extra)"
    elif not (base / "vox-f32.tmod").exists():
        _log("converting it with python -m vox build --dtype f32")
        built = run_stage("tmod", args, args.timeout)
        if "error" in built:
            errors["vox"] = built["error"]
    return errors


def bench_peer(name: str, args, inherited: str | None) -> dict:
    base = {"name": name, "isa": isa(), "threads": args.threads}
    if inherited:
        return {**base, "error": inherited}
    if importlib.util.find_spec({"qwen-tts": "qwen_tts", "vox": "vox"}[name]) is None:
        return {**base, "error": f"not installed: the peers extra provides {name}"}
    base["loadavg_1m_at_start"] = round(os.getloadavg()[0], 2)
    _log(f"{name}: one stream, then {', '.join(map(str, args.concurrency))} concurrent, {args.frames} frames each")
    began = time.perf_counter()
    result = {**base, **run_stage(name, args, args.timeout)}
    _log(f"{name}: done in {time.perf_counter() - began:.0f} s")
    return result


def _cell(value, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


def table(peers: list[dict]) -> str:
    rows = ["| peer | version | 1 stream frames/s | RTF | first audio | " + " | ".join(
        f"{n} concurrent frames/s" for n in _levels(peers)) + " |"]
    rows.append("|" + "---|" * (4 + 1 + len(_levels(peers))))
    for peer in peers:
        if "error" in peer:
            rows.append(f"| {peer['name']} | {peer.get('version', '-')} | error: {peer['error']} |")
            continue
        one = peer["one_stream"]
        cells = []
        for level in _levels(peers):
            threads = peer["concurrent"].get(level, {}).get("aggregate_frames_per_s")
            batched = peer.get("batched", {}).get(level, {}).get("aggregate_frames_per_s")
            cells.append(_cell(threads) + ("" if batched is None else f" (batched: {batched})"))
        first = one["first_audio_s"]
        rows.append(f"| {peer['name']} | {peer['version']} | {one['frames_per_s']} | {one['rtf']} | "
                    f"{_cell(first, ' s') if peer.get('streams') else 'no streaming'} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _levels(peers: list[dict]) -> list[str]:
    return sorted({level for peer in peers for level in peer.get("concurrent", {})}, key=int)


def _log(message: str) -> None:
    print(f"[bench_peers] {message}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny model, 8 frames, 1 thread: a smoke run for CI")
    parser.add_argument("--preset", default=None, help="model dimensions (export/presets.py); default 0.6b")
    parser.add_argument("--frames", type=int, default=None, help="frames per request (default 50, quick 8)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads each peer is given (default 2, quick 1: the tiny model's ops are too small "
                             "to share, and torch's two threads spend the run waiting for each other, 13x slower)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "wyoming-chorus" / "peers")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed to each stage")
    parser.add_argument("--stage", choices=("checkpoint", "tmod", *PEERS), help=argparse.SUPPRESS)
    parser.add_argument("--stage-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.preset = args.preset or ("tiny" if args.quick else "0.6b")
    args.frames = args.frames or (8 if args.quick else 50)
    args.threads = args.threads or (1 if args.quick else 2)
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.stage:
        stage_main(args)
        return
    errors = prepare(args)
    peers = [bench_peer(name, args, errors.get(name)) for name in PEERS]
    report = {"preset": args.preset, "frames_per_request": args.frames, "seconds_per_frame": SECONDS_PER_FRAME,
              "text": TEXT, "speaker": SPEAKER, "language": LANGUAGE, "isa": isa(), "cpus": os.cpu_count(),
              "threads": args.threads, "peers": peers}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{args.preset} dims, {args.frames} frames per request, {args.threads} threads, ISA {'/'.join(isa())}")
    print(table(peers))


if __name__ == "__main__":
    main()
