"""tools/bench.py's KV capacity: rooms a pool holds with paged blocks vs fixed buckets, from the tokens each reply of
the run needs."""
from __future__ import annotations

import math
import statistics

from chorus_tools.bench.plan import BUCKETS, LOOKAHEAD


def reply_demand(reply: dict, block: int) -> tuple[int, list[int]]:
    """(paged tokens a reply holds at its peak, its sentences' tokens). A reply has up to LOOKAHEAD sentences
    generating at once: its peak is the largest sum of LOOKAHEAD consecutive sentences, each in whole blocks."""
    tokens = [s["tokens"] for s in reply["sentences"]]
    padded = [math.ceil(t / block) * block for t in tokens]
    window = min(LOOKAHEAD, len(padded))
    return max(sum(padded[i:i + window]) for i in range(len(padded) - window + 1)), tokens


def rooms_held(replies: list[dict], block: int, budget_tokens: int) -> dict:
    """Rooms (replies at once, each at its peak) a pool of `budget_tokens` holds on average over this run's replies:
    paged (whole blocks as needed) vs each bucket size S (every in-flight sentence reserves S tokens up front; a
    sentence longer than S cannot run, so those replies are left out and counted as not fitting)."""
    demands = [reply_demand(r, block) for r in replies]
    held = {"paged": math.floor(budget_tokens / statistics.mean(d for d, _ in demands))}
    fits = {}
    for size in BUCKETS:
        ok = [min(LOOKAHEAD, len(t)) * size for _, t in demands if max(t) <= size]
        fits[size] = len(ok) / len(demands)
        held[f"bucket {size}"] = math.floor(budget_tokens / statistics.mean(ok)) if ok else 0
    return {"held": held, "fits": fits}


def kv_analysis(engine: dict, pool_blocks: float | None) -> dict:
    replies = [r for r in engine.get("replies", []) if r["sentences"]]
    if not replies or "block_size" not in engine:
        return {}
    block = engine["block_size"]
    pool_tokens = int((pool_blocks or 126) * block)
    demands = [reply_demand(r, block)[0] for r in replies]
    sentences = [s for r in replies for s in r["sentences"]]
    budgets = [2 ** k for k in range(9, 16)]
    curves: dict[str, list[float]] = {}
    for budget in budgets:
        for scheme, rooms in rooms_held(replies, block, budget)["held"].items():
            curves.setdefault(f"paged ({block}-token blocks)" if scheme == "paged" else scheme, []).append(rooms)
    at_pool = rooms_held(replies, block, pool_tokens)
    bpt = engine["kv_bytes_per_token"]
    pool_bytes = pool_tokens * bpt["u8"]
    by_precision = {p: math.floor(pool_bytes / b / statistics.mean(demands)) for p, b in bpt.items()}
    return {"block_size": block, "pool_tokens": pool_tokens, "pool_bytes": pool_bytes, "replies": len(replies),
            "sentences": len(sentences),
            "tokens_per_sentence_mean": statistics.mean(s["tokens"] for s in sentences),
            "tokens_per_sentence_max": max(s["tokens"] for s in sentences),
            "prompt_rows_mean": statistics.mean(s["prompt_rows"] for s in sentences),
            "paged_tokens_per_reply_mean": statistics.mean(demands),
            "at_pool": at_pool, "budgets": budgets, "curves": curves,
            "rooms_by_kv_precision_same_bytes": by_precision}
