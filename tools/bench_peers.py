"""Peer benchmark: two other Qwen3-TTS implementations on this machine's CPU, at the same model dimensions as ours,
so that wyoming-chorus can be compared against them.

Peers:
  qwen-tts  the official package (PyPI qwen-tts 0.1.1) on torch, float32, torch.set_num_threads(--threads). It has
            no streaming output: a request's audio arrives whole, so it has no time to first audio.
  vox       vox-tts (PyPI), a C++ engine: the checkpoint converted by `python -m vox build --dtype f32`, run by
            vox.Engine(tmod, device="cpu", threads=--threads).stream(...), which yields audio chunks as decoded.

The model is one random-weight CustomVoice checkpoint (nothing can be downloaded here), made with qwen-tts's own
classes at the dimensions of service/export/presets.py (0.6b by default, tiny with --quick) and saved in the
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
import threading
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECONDS_PER_FRAME = 0.08
SAMPLES_PER_FRAME = 1920
TEXT = "Turn off the kitchen lights and lock the front door, please."
SPEAKER = "ryan"
LANGUAGE = "auto"
PEERS = ("qwen-tts", "vox")
# Part of the cache key: bump it when the checkpoint recipe below changes, so that no stale model is reused.
RECIPE = 2


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


# ---------------------------------------------------------------- the checkpoint

def model_dir(cache: Path, preset: str, seed: int) -> Path:
    return cache / f"{preset}-seed{seed}-r{RECIPE}"


def _import_reference():
    """tests/qwen_reference.py: the fidelity tests' helpers. Importing it stands in empty modules for qwen-tts's
    audio-input dependencies (librosa, torchaudio...), which the `--no-deps` install leaves out and nothing here
    runs, and then imports qwen-tts."""
    for path in (ROOT, ROOT / "tests"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    import qwen_reference

    return qwen_reference


def build_checkpoint(out: Path, preset: str, seed: int) -> None:
    """A random CustomVoice checkpoint in the hub layout, as tests/qwen_reference.make_checkpoint makes its tiny
    one, at `preset`'s dimensions: the talker by Qwen3TTSForConditionalGeneration with its own initialisation, the
    codec decoder with audible random weights (the reference initialisation decodes to near silence), a minimal
    Mimi encoder (the layout needs one; nothing runs it). Stored in bfloat16 as the released checkpoints are; both
    peers compute in float32."""
    reference = _import_reference()
    import numpy as np
    import torch
    from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model
    from qwen_tts.core.models import Qwen3TTSConfig, Qwen3TTSForConditionalGeneration

    from service.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
    from service.export.presets import TEXT_SPECIAL_TOKENS, talker_config, tokenizer_vocab_size
    from service.export.tokenizer import special_token_ids, train_tokenizer

    from hub_layout import write_tokenizer_files

    out.mkdir(parents=True, exist_ok=True)
    tokenizer_json = train_tokenizer(tokenizer_vocab_size(preset), reference.SPECIAL_TOKENS)
    write_tokenizer_files(out, tokenizer_json)
    ids = special_token_ids(tokenizer_json, reference.SPECIAL_TOKENS)
    config = talker_config(preset, {key: ids[token] for key, token in TEXT_SPECIAL_TOKENS.items()})

    torch.manual_seed(seed)
    model = Qwen3TTSForConditionalGeneration(Qwen3TTSConfig(**config)).eval()
    with torch.no_grad():
        # A random model does emit end-of-speech now and then (vox stopped after 5 frames on the tiny one): a zero
        # row gives it a logit of 0, below the best of 2048 random code logits, so greedy decoding never picks it
        # and every request runs to the frame cap on both peers.
        model.talker.codec_head.weight[config["talker_config"]["codec_eos_token_id"]] = 0.0
    model.to(torch.bfloat16).save_pretrained(out)
    del model
    (out / "generation_config.json").write_text(json.dumps(reference.GENERATION_CONFIG, indent=2))
    saved = json.loads((out / "config.json").read_text())
    # qwen-tts cannot reload its own save_pretrained output: the speaker-encoder part gains an empty model_type.
    saved.get("speaker_encoder_config", {}).pop("model_type", None)
    (out / "config.json").write_text(json.dumps(saved, indent=2))

    decoder_config = CODEC_PRESETS["tiny" if preset == "tiny" else "real"]
    codec = Qwen3TTSTokenizerV2Model(Qwen3TTSTokenizerV2Config(
        encoder_config=reference._TINY_ENCODER, decoder_config=decoder_config)).eval()
    decoder = random_codec_decoder_weights(decoder_config, np.random.default_rng([seed, 1]))
    missing = [key for key in codec.state_dict() if key.startswith("decoder.") and key not in decoder]
    if missing:
        raise RuntimeError(f"random codec weights lack {missing[:3]}")
    codec.load_state_dict({key: torch.from_numpy(value) for key, value in decoder.items()}, strict=False)
    codec.save_pretrained(out / "speech_tokenizer")
    (out / "speech_tokenizer" / "preprocessor_config.json").write_text(json.dumps({
        "feature_extractor_type": "EncodecFeatureExtractor", "feature_size": 1, "sampling_rate": 24000,
        "padding_side": "right", "padding_value": 0.0, "return_attention_mask": True}))


def build_tmod(checkpoint: Path, out: Path) -> None:
    """vox's own converter, as its users run it; written aside and renamed, so an interrupted build is not cached."""
    partial = out.with_suffix(".partial")
    done = subprocess.run([sys.executable, "-m", "vox", "build", "--model", str(checkpoint), "--dtype", "f32",
                           "-o", str(partial)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"vox build failed: {_last_line(done.stderr or done.stdout)}")
    partial.rename(out)


# ---------------------------------------------------------------- measuring

def timed_threads(count: int, request) -> tuple[float, list]:
    """Wall seconds for `count` threads each running request(i) started together, and their results in order."""
    results: list = [None] * count
    errors: list[BaseException] = []
    start = threading.Barrier(count + 1)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = request(i)
        except BaseException as error:  # re-raised in the caller: a failed thread must not pass as a fast one
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if errors:
        raise errors[0]
    return wall, results


def one_stream_figures(wall: float, frames: int, first_audio: float | None) -> dict:
    audio = frames * SECONDS_PER_FRAME
    return {"frames": frames, "wall_s": round(wall, 3), "frames_per_s": round(frames / wall, 2),
            "rtf": round(wall / audio, 3), "first_audio_s": None if first_audio is None else round(first_audio, 3)}


def aggregate_figures(wall: float, frames: list[int], how: str, same: bool | None = None) -> dict:
    figures = {"aggregate_frames_per_s": round(sum(frames) / wall, 2), "wall_s": round(wall, 3),
               "frames": sum(frames), "how": how}
    if same is not None:
        figures["same_audio"] = same
    return figures


def frames_of(pcm) -> int:
    return len(pcm) // SAMPLES_PER_FRAME


def bench_qwen_tts(args) -> dict:
    reference = _import_reference()  # also sets torch to one thread, for the tiny test models: reset below
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()  # "pad_token_id set to eos" and unused-flag notices, per call
    result = {"version": metadata.version("qwen-tts"),
              "runtime": f"torch {torch.__version__}, transformers {transformers.__version__}, float32"}
    load = time.perf_counter()
    model = reference.Qwen3TTSModel.from_pretrained(str(args.checkpoint), dtype=torch.float32)
    result["load_s"] = round(time.perf_counter() - load, 2)
    result["attention"] = model.model.config._attn_implementation

    def generate(texts, frames: int):
        # With no end-of-speech, generate stops at max_new_tokens and returns one frame fewer (the last
        # codebook-0 never gets its sub-codes): +1 gives exactly `frames`.
        wavs, _ = model.generate_custom_voice(texts, speaker=SPEAKER, language=LANGUAGE, do_sample=False,
                                              subtalker_dosample=False, max_new_tokens=frames + 1)
        return [np.asarray(wav, np.float32) for wav in wavs]

    generate(TEXT, min(args.frames, 4))  # warm-up: first-call allocations and kernel selection
    began = time.perf_counter()
    single = generate(TEXT, args.frames)[0]
    result["one_stream"] = one_stream_figures(time.perf_counter() - began, frames_of(single), None)
    result["streams"] = False
    result["concurrent"], result["batched"] = {}, {}
    for count in args.concurrency:
        wall, outputs = timed_threads(count, lambda i: generate(TEXT, args.frames)[0])
        result["concurrent"][str(count)] = aggregate_figures(
            wall, [frames_of(pcm) for pcm in outputs],
            f"{count} threads, each generate_custom_voice(one text) on one model; torch intra-op threads "
            f"{args.threads} per call", same=all(np.array_equal(pcm, single) for pcm in outputs))
        began = time.perf_counter()
        outputs = generate([TEXT] * count, args.frames)
        result["batched"][str(count)] = aggregate_figures(
            time.perf_counter() - began, [frames_of(pcm) for pcm in outputs],
            f"one generate_custom_voice call with a list of {count} texts (one batched forward pass)")
    return result


def bench_vox(args) -> dict:
    import numpy as np
    import vox

    result = {"version": vox.__version__, "runtime": "vox C++ engine, f32 weights (vox build --dtype f32)"}
    load = time.perf_counter()
    engine = vox.Engine(str(args.tmod), device="cpu", threads=args.threads)
    result["load_s"] = round(time.perf_counter() - load, 2)
    plan = engine.plan
    result["plan"] = {key: plan.get(key) for key in ("backend", "mode", "threads", "max_sessions", "spin")}
    voice = engine.speaker_voice(SPEAKER)

    def stream(frames: int) -> tuple[np.ndarray, float]:
        """The request's audio and the seconds to its first chunk; temperature 0 is vox's greedy decoding."""
        began, first, chunks = time.perf_counter(), None, []
        for chunk in engine.stream(TEXT, voice, language=LANGUAGE, max_frames=frames, temperature=0.0,
                                   sub_temperature=0.0, seed=0):
            if first is None:
                first = time.perf_counter() - began
            chunks.append(chunk)
        return np.concatenate(chunks) if chunks else np.zeros(0, np.float32), first

    stream(min(args.frames, 4))  # warm-up
    began = time.perf_counter()
    single, first = stream(args.frames)
    result["one_stream"] = one_stream_figures(time.perf_counter() - began, frames_of(single), first)
    result["streams"] = True
    result["concurrent"] = {}
    for count in args.concurrency:
        wall, outputs = timed_threads(count, lambda i: stream(args.frames))
        figures = aggregate_figures(
            wall, [frames_of(pcm) for pcm, _ in outputs],
            f"{count} threads, each Engine.stream() on one shared Engine (threads={args.threads})",
            same=all(np.array_equal(pcm, single) for pcm, _ in outputs))
        figures["first_audio_s_max"] = round(max(first or wall for _, first in outputs), 3)
        result["concurrent"][str(count)] = figures
    return result


# ---------------------------------------------------------------- stages in child processes

def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


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
        result = {"error": f"{type(error).__name__}: {_last_line(str(error))}"}
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
    parser.add_argument("--preset", default=None, help="model dimensions (service/export/presets.py); default 0.6b")
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
