"""Writes the files of a hub checkpoint that need no torch: the slow-tokenizer files every released Qwen3-TTS
checkpoint ships instead of a tokenizer.json, and safetensors shards with their index."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file


def write_tokenizer_files(out: Path, tokenizer_json: str, extra_config: dict | None = None) -> None:
    """vocab.json, merges.txt and tokenizer_config.json (its added tokens as in the released checkpoints) from a
    byte-level BPE tokenizer.json; no tokenizer.json is written, so readers must convert these files."""
    data = json.loads(tokenizer_json)
    model = data["model"]
    (out / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (out / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    added = {str(t["id"]): {"content": t["content"], "lstrip": False, "normalized": False, "rstrip": False,
                            "single_word": False, "special": True} for t in data["added_tokens"]}
    config = {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": added, "bos_token": None,
              "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
              "model_max_length": 32768, "pad_token": "<|endoftext|>", "split_special_tokens": False,
              "tokenizer_class": "Qwen2Tokenizer", "unk_token": None, **(extra_config or {})}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def write_shards(out: Path, tensors: dict[str, np.ndarray], shards: int) -> None:
    """model-0000i-of-0000n.safetensors plus model.safetensors.index.json, as large checkpoints are saved."""
    names = sorted(tensors)
    weight_map = {}
    for i in range(shards):
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = names[i::shards]
        save_file({name: np.ascontiguousarray(tensors[name]) for name in part}, str(out / file))
        weight_map.update({name: file for name in part})
    index = {"metadata": {"total_size": int(sum(t.nbytes for t in tensors.values()))}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def write_bf16_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A safetensors file of bfloat16 tensors, as the released checkpoints are stored (numpy has no bfloat16, so
    the bytes are written by hand: each value's upper 16 bits). Returns the float32 values the file holds."""
    header, blobs, offset, stored = {}, [], 0, {}
    for name, value in sorted(tensors.items()):
        bits = (np.ascontiguousarray(value, np.float32).view(np.uint32) >> 16).astype("<u2")
        blobs.append(bits.tobytes())
        header[name] = {"dtype": "BF16", "shape": list(value.shape), "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
        stored[name] = (bits.astype(np.uint32) << 16).view(np.float32).reshape(value.shape)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))
    return stored
