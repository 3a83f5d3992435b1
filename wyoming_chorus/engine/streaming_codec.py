"""Streaming codec decoding: frames in, 24 kHz PCM out, per request, exactly as if the utterance were decoded whole.

The codec decoder graph is stateful (wyoming_chorus/graphs/codec_decoder.py): every causal op keeps its left context in
state variables, so one OpenVINO infer request is one utterance's decoding state (~5 MB at real dims).
StreamingCodecDecoder compiles the graph once, shared by every request, and each request's stream is an infer
request of it. The decoder has no lookahead: push() returns all the audio of the frames it is given.

The graph is compiled for a fixed block of frames: with static shapes the CPU plugin fuses each SnakeBeta
activation into one vector kernel, while with a dynamic frame count it runs as ~10 separate passes (~20% more
decode time on a 2-core AVX-512 machine). A push runs whole blocks; a short last block is padded with frames of
code -1, which the graph decodes but keeps out of its state, and their audio is dropped. The default block, 4
frames, costs ~30% less per frame than single-frame blocks; it is also the codec thread's chunk (each block's audio
goes out at once: engine/audio_output.py).
"""
from __future__ import annotations

import os

import numpy as np
import openvino as ov

from wyoming_chorus.modeldir.manifest import CODEC_BLOCK_FRAMES

SAMPLES_PER_FRAME = 1920
# Frames per decoder block: a reply's first audio needs this many (or its end); the playback policy's first-audio hold
# counts on it (engine/pacing.py).
BLOCK_FRAMES = CODEC_BLOCK_FRAMES
_PADDING_CODE = -1


class StreamingCodecDecoder:
    def __init__(self, model: ov.Model | str | os.PathLike, inference_precision: str = "", device: str = "CPU",
                 block_frames: int = BLOCK_FRAMES):
        """model: the (stateful) codec decoder graph or its .xml; inference_precision: "" (the plugin default),
        "f32", "bf16" or "f16"; block_frames: frames per decoder call (a push of fewer still costs a block)."""
        if block_frames < 1:
            raise ValueError(f"block_frames must be at least 1, got {block_frames}")
        core = ov.Core()
        graph = model.clone() if isinstance(model, ov.Model) else core.read_model(model)
        if not graph.get_sinks():
            raise ValueError("the codec decoder graph is stateless: build it with build_codec_decoder(stateful=True)")
        self.num_quantizers = graph.input("codes").get_partial_shape()[1].get_length()
        graph.reshape({"codes": [1, self.num_quantizers, block_frames]})
        config = {"INFERENCE_PRECISION_HINT": inference_precision} if inference_precision else {}
        self._compiled = core.compile_model(graph, device, config)
        self.block_frames = block_frames

    def runtime_model(self) -> ov.Model:
        """The executed graph: each op's kernel (tools/kernels.py)."""
        return self._compiled.get_runtime_model()

    def new_stream(self) -> ov.InferRequest:
        """A new utterance: its own infer request, whose state starts at zeros."""
        return self._compiled.create_infer_request()

    def snapshot(self, stream: ov.InferRequest) -> list[np.ndarray]:
        """A copy of the stream's decoding state (the causal context of every op), to start other streams from."""
        return [np.array(state.state.data, copy=True) for state in stream.query_state()]

    def stream_from(self, snapshot: list[np.ndarray]) -> ov.InferRequest:
        """A new utterance whose decoding continues from a snapshot (as if its frames had been pushed into it)."""
        stream = self.new_stream()
        for state, value in zip(stream.query_state(), snapshot, strict=True):
            state.state = ov.Tensor(np.array(value, copy=True))
        return stream

    def push(self, stream: ov.InferRequest, codes: np.ndarray) -> np.ndarray:
        """codes [n, num_quantizers] of the utterance's next n frames -> their f32 PCM [n * 1920] in [-1, 1]."""
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != self.num_quantizers:
            raise ValueError(f"codes must be [frames, {self.num_quantizers}], got {list(codes.shape)}")
        pieces = [np.zeros(0, np.float32)]
        for start in range(0, len(codes), self.block_frames):
            block = codes[start: start + self.block_frames]
            padded = np.full((self.num_quantizers, self.block_frames), _PADDING_CODE, np.int64)
            padded[:, : len(block)] = block.T
            stream.infer({"codes": padded[None]})
            # The output tensor is reused by the next infer: copy.
            pieces.append(stream.get_output_tensor(0).data[0, 0, : len(block) * SAMPLES_PER_FRAME].copy())
        return np.concatenate(pieces)
