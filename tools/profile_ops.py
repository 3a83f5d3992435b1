"""Where a step's time goes, op by op: the plugin's own per-node counters (PERF_COUNT) for the paged talker and the
code predictor's body (its 15 infers of one frame), at one batch size, summed by layer type and kernel.

    python tools/profile_ops.py models/0.6b-int8 [--batch 1] [--property DYNAMIC_QUANTIZATION_GROUP_SIZE=256]
    python tools/profile_ops.py models/0.6b-int8 --batch 8 --property ... --against INFERENCE_PRECISION_HINT=f32

Why: a stage's distance from its floor (tools/bench_floor.py) is either its products reading weights slower than
memory streams them (FullyConnected's share), or everything else: reference kernels (`ref_*`), Converts, Reorders,
Gathers, and the time outside every op (an infer's fixed cost: thread wake-ups, the plugin's own bookkeeping),
which the 15 small infers of the code predictor pay 15 times. The per-node counters of openvino 2026.4's CPU plugin
do not add up to an infer's wall time (their sum runs above it, and drifts from infer to infer), so each kind of op
is given as its share of the counted time, and that share of the wall time. The graphs are compiled here as the
runner compiles them (the talker paged with a u8 cache, the predictor's body without its heads, and those 15 heads
as models of their own), from Python, so the figures are the plugin's, not the runner's host code
(tools/bench_engine.py times that).

`--against KEY=VALUE` times instead of profiling: each graph compiled twice, once with `--property` alone (A) and once
with these on top (B), passes of A and B alternated in one process (in turn, first one then the other leading), and
the ratio B/A of their medians printed per round. On a shared machine only such ratios mean anything.
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("CI", "true")  # OpenVINO's telemetry opt-out, before anything imports it

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import openvino.opset13 as opset  # noqa: E402
from openvino._offline_transformations import paged_attention_transformation  # noqa: E402

from wyoming_chorus.cpu import cpu_facts  # noqa: E402

CONTEXT = 128  # tokens already in each request's cache
HEAD_GROUP = {"DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}  # the runner's heads (native/code_predictor.cpp says why)
Pass = list[tuple[ov.InferRequest, Callable[[], None]]]  # one graph's infers of a step, each with its request


def paged_talker(core: ov.Core, xml: Path, batch: int, properties: dict) -> Pass:
    model = core.read_model(xml)
    paged_attention_transformation(model, False, False, False, False, False, False, False)
    compiled = core.compile_model(model, "CPU", {"KV_CACHE_PRECISION": "u8", **properties})
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
    return [(request, request.infer)]


def predictor_body(core: ov.Core, xml: Path, batch: int, properties: dict) -> Pass:
    model = core.read_model(xml)
    hidden = model.output("logits").get_node().input_value(0).get_node().input_value(0)  # Result <- MatMul(hidden)
    inputs = [p for p in model.get_parameters() if p.get_friendly_name() != "head_index"]
    body = ov.Model([hidden], model.get_sinks(), inputs, "code_predictor_body")
    width = model.input("inputs_embeds").get_partial_shape()[-1].get_length()
    compiled = core.compile_model(body, "CPU", {"KV_CACHE_PRECISION": "bf16", **properties})
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

    return [(request, infer(j)) for j in range(15)]


def predictor_heads(core: ov.Core, xml: Path, batch: int, properties: dict) -> Pass:
    """The 15 output heads as the runner compiles them (native/predictor_heads.cpp): the stacked, compressed weights
    sliced per head (the same Convert / Subtract / Multiply chain over each head's constants), their activations
    unquantised."""
    model = core.read_model(xml)
    gather = model.output("logits").get_node().input_value(0).get_node().input_value(1).get_node()
    heads = gather.input_value(0).get_partial_shape()[0].get_length()
    width = gather.input_value(0).get_partial_shape()[2].get_length()
    hidden = ov.Tensor(np.random.default_rng(2).normal(0, 1, (batch, width)).astype(np.float32))
    compiled = []
    for j in range(heads):
        x = opset.parameter([-1, width], np.float32, name="hidden")
        model = ov.Model([opset.matmul(x, sliced(gather.input_value(0), heads, j), False, True)], [x], f"head_{j}")
        request = core.compile_model(model, "CPU", {**properties, **HEAD_GROUP}).create_infer_request()
        request.set_input_tensor(hidden)
        compiled.append((request, request.infer))
    return compiled


def sliced(source: ov.Output, heads: int, index: int) -> ov.Output:
    """Head `index` of the stacked weights' decompression chain (the plugin finds the pattern by itself)."""
    node = source.get_node()
    if node.get_type_name() == "Constant":
        data = node.get_data()
        if data.ndim and data.shape[0] not in (heads, 1):
            raise ValueError(f"a constant of shape {data.shape} among {heads} stacked heads")
        head = data if not data.ndim else data[index if data.shape[0] == heads else 0]
        return opset.constant(head, node.get_output_element_type(0)).output(0)
    inputs = [sliced(value, heads, index) for value in node.input_values()]
    kind = node.get_type_name()
    if kind == "Convert":
        clone = opset.convert(inputs[0], node.get_output_element_type(0))
    elif kind in ("Subtract", "Multiply"):
        clone = (opset.subtract if kind == "Subtract" else opset.multiply)(*inputs)
    else:
        raise ValueError(f"the code predictor's stacked heads pass through a {kind}: not split by the runner either")
    return clone.output(0)


GRAPHS = (("talker", "talker.xml", paged_talker),
          ("code predictor body, 15 infers", "code_predictor.xml", predictor_body),
          ("code predictor heads, 15 infers", "code_predictor.xml", predictor_heads))


def run_pass(infers: Pass) -> float:
    started = time.perf_counter()
    for _, run in infers:
        run()
    return (time.perf_counter() - started) * 1000


def profile(infers: Pass, repeats: int) -> tuple[float, collections.Counter]:
    """Median wall ms of one pass over `infers`, and ms per pass by (layer type, kernel) of the median pass."""
    for _ in range(2):
        run_pass(infers)
    passes = []
    for _ in range(repeats):
        wall, ops = 0.0, collections.Counter()
        for request, run in infers:
            wall += run_pass([(request, run)])
            for info in request.get_profiling_info():
                if info.status == info.Status.EXECUTED:
                    ops[(info.node_type, info.exec_type)] += info.real_time.total_seconds() * 1000
        passes.append((wall, ops))
    passes.sort(key=lambda p: p[0])
    return passes[len(passes) // 2]


def compare(a: Pass, b: Pass, repeats: int) -> tuple[float, float]:
    """Medians of `repeats` passes of each, alternated, the one leading swapped at every pair."""
    for _ in range(2):
        run_pass(a), run_pass(b)
    walls: dict[int, list[float]] = {0: [], 1: []}
    for i in range(repeats):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            walls[side].append(run_pass((a, b)[side]))
    return statistics.median(walls[0]), statistics.median(walls[1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--property", action="append", default=[], help="KEY=VALUE, a compile property for all")
    parser.add_argument("--against", action="append", default=[],
                        help="KEY=VALUE on top of --property: time both, alternated, instead of profiling")
    parser.add_argument("--rounds", type=int, default=3, help="with --against: rounds of --repeats pairs")
    args = parser.parse_args(argv)
    properties = dict(p.split("=", 1) for p in args.property)
    against = {**properties, **dict(p.split("=", 1) for p in args.against)}
    core = ov.Core()
    print(f"model {args.model}, batch {args.batch}, ISA {cpu_facts().isa}, properties {properties or '(none)'}"
          + (f", against {against}" if args.against else ""))
    for name, xml, build in GRAPHS:
        if args.against:
            a = build(core, args.model / xml, args.batch, properties)
            b = build(core, args.model / xml, args.batch, against)
            for round_ in range(args.rounds):
                wall_a, wall_b = compare(a, b, args.repeats)
                print(f"{name}, round {round_ + 1}: A {wall_a:.2f} ms, B {wall_b:.2f} ms, B/A {wall_b / wall_a:.3f}")
            continue
        infers = build(core, args.model / xml, args.batch, {**properties, "PERF_COUNT": True})
        wall, ops = profile(infers, args.repeats)
        inside = sum(ops.values())
        print(f"\n{name}: {wall:.2f} ms a pass (median of {args.repeats}, {len(infers)} infer"
              f"{'s' if len(infers) > 1 else ''})")
        for (layer, kernel), ms in ops.most_common(args.top):
            print(f"  {layer:<38} {kernel:<28} {ms / inside:6.1%}  ~{wall * ms / inside:7.2f} ms")


if __name__ == "__main__":
    main()
