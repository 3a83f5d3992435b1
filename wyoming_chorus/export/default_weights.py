"""The weight format an export gets when none is asked for: `wyoming-chorus export` without --weights, and the first
start of a hub model (hub.py), which exports it once and serves it from then on.

"auto" (int4_choice.py) wherever NNCF is installed: INT4 for each language-model graph whose error on this very
checkpoint is within the threshold, INT8 for the others. INT4 runs one room ~1.5x faster than INT8 (0.6b, 2 Zen 4
cores: RTF 0.89-0.95 against 1.37-1.54), which is the difference between a reply heard without gaps and one that
is not, and the check is what makes it safe to take unasked. Its price is paid once per household, at export,
beside a download of ~2 GB. Measured on the 0.6b preset (random weights: no sentence stops early, the worst case),
2 Zen 4 cores shared with other work (load ~8, so CPU seconds, not wall): INT8 compresses in 21 s of CPU (peak RSS
3.5 GB); auto takes 703 s of CPU (peak RSS 4.1 GB): the float model speaking 20 household sentences 199 s, AWQ +
scale estimation 298 s (talker) and 69 s (code predictor), the INT8 graphs 21 s, replaying the held-out sentences
through both 116 s. On an idle 2-core box that is some 6-12 minutes (703 s over two busy threads or one), once,
for INT4's speed on every later reply where it passes; a graph INT4 does not suit costs nothing afterwards (it
is served at INT8, as before). On these random weights INT4 missed the threshold for both graphs (talker agreement
32%, TVD 0.14; code predictor 56%, 0.27): what real weights give is what the check is there to find out.
--weights int8 (or f16, f32, int4) skips the check.

Without NNCF (the `compress` extra) no compressed format can be made: f16, the only one left that runs well.
"""
from __future__ import annotations

import importlib.util

# What the log says the check costs, so that a first start that takes minutes is not taken for a hang.
AUTO_COST = "adds ~12 min of CPU for a 0.6b model (some 6-12 min on 2 cores; more for 1.7b), once"


def default_weights() -> tuple[str, str]:
    """The weight mode to export with when none is given, and why (one clause for the log)."""
    if importlib.util.find_spec("nncf") is not None:
        return "auto", (f"INT4 where this checkpoint's check allows (~1.5x faster than INT8), INT8 elsewhere; "
                        f"the check {AUTO_COST}")
    return "f16", "NNCF is not installed (pip install 'wyoming-chorus[compress]' for faster INT4/INT8 weights)"
