"""A plain float32 numpy Qwen3-TTS talker / code predictor / text projection, written from the HF reference's maths
(not from the OpenVINO graphs) so that the graph tests compare two independent implementations."""
from __future__ import annotations

import numpy as np


def rms_norm(x, gamma, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope(x, positions, theta):
    """x [heads, S, D], positions [S]: HF rotate_half RoPE."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2) / d)
    angles = positions[:, None] * inv_freq[None, :]
    cos = np.cos(np.concatenate([angles, angles], -1))
    sin = np.sin(np.concatenate([angles, angles], -1))
    rotated = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos + rotated * sin


class Decoder:
    """One sequence's Qwen3 decoder with a growing K/V cache."""

    def __init__(self, weights, prefix, config):
        self.w, self.prefix, self.c = weights, prefix, config
        self.head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        self.cache = [(None, None) for _ in range(config["num_hidden_layers"])]
        self.length = 0

    def _attention(self, i, x, positions):
        w, c, d = self.w, self.c, self.head_dim
        p = f"{self.prefix}.layers.{i}.self_attn"
        eps = c["rms_norm_eps"]
        s = x.shape[0]
        q = (x @ w[f"{p}.q_proj.weight"].T).reshape(s, -1, d)
        k = (x @ w[f"{p}.k_proj.weight"].T).reshape(s, -1, d)
        v = (x @ w[f"{p}.v_proj.weight"].T).reshape(s, -1, d)
        q = rope(rms_norm(q, w[f"{p}.q_norm.weight"], eps).transpose(1, 0, 2), positions, c["rope_theta"])
        k = rope(rms_norm(k, w[f"{p}.k_norm.weight"], eps).transpose(1, 0, 2), positions, c["rope_theta"])
        v = v.transpose(1, 0, 2)
        past_k, past_v = self.cache[i]
        if past_k is not None:
            k, v = np.concatenate([past_k, k], 1), np.concatenate([past_v, v], 1)
        self.cache[i] = (k, v)
        groups = q.shape[0] // k.shape[0]
        k, v = np.repeat(k, groups, 0), np.repeat(v, groups, 0)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        total = k.shape[1]
        allowed = np.arange(total)[None, :] <= (total - s + np.arange(s))[:, None]
        scores = np.where(allowed[None], scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        out = (scores / scores.sum(-1, keepdims=True)) @ v
        return out.transpose(1, 0, 2).reshape(s, -1) @ w[f"{p}.o_proj.weight"].T

    def forward(self, x):
        """x [S, hidden] -> final-normed hidden [S, hidden]; positions continue from the cache."""
        w, c = self.w, self.c
        eps = c["rms_norm_eps"]
        positions = np.arange(self.length, self.length + x.shape[0], dtype=np.float64)
        for i in range(c["num_hidden_layers"]):
            p = f"{self.prefix}.layers.{i}"
            x = x + self._attention(i, rms_norm(x, w[f"{p}.input_layernorm.weight"], eps), positions)
            h = rms_norm(x, w[f"{p}.post_attention_layernorm.weight"], eps)
            gated = silu(h @ w[f"{p}.mlp.gate_proj.weight"].T) * (h @ w[f"{p}.mlp.up_proj.weight"].T)
            x = x + gated @ w[f"{p}.mlp.down_proj.weight"].T
        self.length += x.shape[0]
        return rms_norm(x, w[f"{self.prefix}.norm.weight"], eps)


class Talker:
    def __init__(self, weights, config):
        self.w = weights
        self.decoder = Decoder(weights, "talker.model", config["talker_config"])

    def forward(self, embeds):
        hidden = self.decoder.forward(embeds.astype(np.float64))
        return hidden @ self.w["talker.codec_head.weight"].T, hidden


class CodePredictor:
    def __init__(self, weights, config):
        self.w = weights
        self.decoder = Decoder(weights, "talker.code_predictor.model", config["talker_config"]["code_predictor_config"])

    def forward(self, embeds, head):
        x = embeds.astype(np.float64)
        key = "talker.code_predictor.small_to_mtp_projection"
        if f"{key}.weight" in self.w:
            x = x @ self.w[f"{key}.weight"].T + self.w[f"{key}.bias"]
        hidden = self.decoder.forward(x)
        return hidden[-1] @ self.w[f"talker.code_predictor.lm_head.{head}.weight"].T


def text_embeds(weights, ids):
    w = {name.removeprefix("talker.text_projection."): value for name, value in weights.items()}
    x = weights["talker.model.text_embedding.weight"][ids].astype(np.float64)
    x = silu(x @ w["linear_fc1.weight"].T + w["linear_fc1.bias"])
    return x @ w["linear_fc2.weight"].T + w["linear_fc2.bias"]
