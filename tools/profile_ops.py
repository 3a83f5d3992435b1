"""Where a step's time goes, op by op: the plugin's own per-node counters (PERF_COUNT) for the paged talker and the
code predictor's body (its 15 infers of one frame), at one batch size, summed by layer type and kernel.

    python tools/profile_ops.py models/0.6b-int8 [--batch 1] [--property DYNAMIC_QUANTIZATION_GROUP_SIZE=256]

Why: a stage's distance from its floor (tools/bench_floor.py) is either its products reading weights slower than
memory streams them (FullyConnected's share), or everything else: reference kernels (`ref_*`), Converts, Reorders,
Gathers, and the time outside every op (an infer's fixed cost: thread wake-ups, the plugin's own bookkeeping),
which the 15 small infers of the code predictor pay 15 times. The per-node counters of openvino 2026.4's CPU plugin
do not add up to an infer's wall time (their sum runs above it, and drifts from infer to infer), so each kind of op
is given as its share of the counted time, and that share of the wall time. The graphs are compiled here as the
runner compiles them (the talker paged with a u8 cache, the predictor without its heads, which the runner splits
off), from Python, so the figures are the plugin's, not the runner's host code (tools/bench_engine.py times that).
"""
from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path

os.environ.setdefault("CI", "true")  # OpenVINO's telemetry opt-out, before anything imports it

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
from openvino._offline_transformations import paged_attention_transformation  # noqa: E402

from wyoming_chorus.cpu import cpu_facts  # noqa: E402

CONTEXT = 128  # tokens already in each request's cache


def paged_talker(core: ov.Core, xml: Path, batch: int, properties: dict):
    model = core.read_model(xml)
    paged_attention_transformation(model, False, False, False, False, False, False, False)
    compiled = core.compile_model(model, "CPU", {"KV_CACHE_PRECISION": "u8", "PERF_COUNT": True, **properties})
    request = compiled.create_infer_request()
    per_request = CONTEXT // 32 + 2  # blocks of 32 tokens (the CPU plugin's), room for the new one
    for port in compiled.inputs:
        if port.get_any_name().startswith(("key_cache", "value_cache")):
            shape = port.get_partial_shape()
            request.set_tensor(port, ov.Tensor(port.get_element_type(), [batch * per_request] + [
                shape[i].get_length() for i in range(1, shape.rank.get_length())]))
    width = compiled.output("hidden").get_partial_shape()[-1].get_length()
    inputs = {"inputs_embeds": np.random.default_rng(0).normal(0, 0.05, (batch, width)),
              "position_ids": np.full(batch, CONTEXT, np.int64), "past_lens": np.full(batch, CONTEXT, np.int32),
              "subsequence_begins": np.arange(batch + 1, dtype=np.int32),
              "block_indices": np.arange(batch * per_request, dtype=np.int32),
              "block_indices_begins": np.arange(batch + 1, dtype=np.int32) * per_request,
              "max_context_len": np.array(CONTEXT + 1, np.int32)}
    for name, value in inputs.items():
        request.set_tensor(name, ov.Tensor(value.astype(np.float32) if name == "inputs_embeds" else value))
    return request, [request.infer]


def predictor_body(core: ov.Core, xml: Path, batch: int, properties: dict):
    model = core.read_model(xml)
    hidden = model.output("logits").get_node().input_value(0).get_node().input_value(0)  # Result <- MatMul(hidden)
    inputs = [p for p in model.get_parameters() if p.get_friendly_name() != "head_index"]
    body = ov.Model([hidden], model.get_sinks(), inputs, "code_predictor_body")
    width = model.input("inputs_embeds").get_partial_shape()[-1].get_length()
    compiled = core.compile_model(body, "CPU", {"PERF_COUNT": True, "KV_CACHE_PRECISION": "bf16", **properties})
    request = compiled.create_infer_request()
    rng = np.random.default_rng(1)
    first = ov.Tensor(rng.normal(0, 0.05, (batch, 2, width)).astype(np.float32))
    step = ov.Tensor(rng.normal(0, 0.05, (batch, 1, width)).astype(np.float32))

    def infer(j: int):
        def run():
            if j == 0:
                request.reset_state()
            request.set_tensor("inputs_embeds", first if j == 0 else step)
            request.infer()
        return run

    return request, [infer(j) for j in range(15)]


def profile(request, infers, repeats: int) -> tuple[float, dict]:
    """Median wall ms of one pass over `infers`, and ms per pass by (layer type, kernel) of the median pass."""
    for _ in range(2):
        for run in infers:
            run()
    passes = []
    for _ in range(repeats):
        wall, ops = 0.0, collections.Counter()
        for run in infers:
            started = time.perf_counter()
            run()
            wall += time.perf_counter() - started
            for info in request.get_profiling_info():
                if info.status == info.Status.EXECUTED:
                    ops[(info.node_type, info.exec_type)] += info.real_time.total_seconds() * 1000
        passes.append((wall * 1000, ops))
    passes.sort(key=lambda p: p[0])
    return passes[len(passes) // 2]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--property", action="append", default=[], help="KEY=VALUE, a compile property for both")
    args = parser.parse_args(argv)
    properties = dict(p.split("=", 1) for p in args.property)
    core = ov.Core()
    print(f"model {args.model}, batch {args.batch}, ISA {cpu_facts().isa}, properties {properties or '(none)'}")
    for name, build in (("talker", paged_talker), ("code predictor body, 15 infers", predictor_body)):
        xml = args.model / ("talker.xml" if build is paged_talker else "code_predictor.xml")
        request, infers = build(core, xml, args.batch, properties)
        wall, ops = profile(request, infers, args.repeats)
        inside = sum(ops.values())
        print(f"\n{name}: {wall:.2f} ms a pass (median of {args.repeats}, {len(infers)} infer"
              f"{'s' if len(infers) > 1 else ''})")
        for (layer, kernel), ms in ops.most_common(args.top):
            print(f"  {layer:<38} {kernel:<28} {ms / inside:6.1%}  ~{wall * ms / inside:7.2f} ms")

if __name__ == "__main__":
    main()
