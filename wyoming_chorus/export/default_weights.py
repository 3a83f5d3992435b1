"""The weight format an export gets when none is asked for: `wyoming-chorus export` without --weights, and the first
start of a hub model (hub.py), which exports it once and serves it from then on.

"auto" (int4_choice.py) wherever NNCF is installed: INT4 for each language-model graph whose error on this very
checkpoint is within the threshold, INT8 for the others. INT4 runs one room ~1.5x faster than INT8 (0.6b, 2 Zen 4
cores: RTF 0.89-0.95 against 1.37-1.54), which is the difference between a reply heard without gaps and one that
is not, and the check is what makes it safe to take unasked. Its price is paid once per household, at export,
beside a download of ~2 GB: measured on the 0.6b preset (random weights; 2 Zen 4 cores shared with other work, so
CPU seconds, not wall), INT8 alone compresses in 21 s of CPU; auto adds the float model speaking 20 household
sentences (199 s), NNCF's AWQ + scale estimation (~300 s) and the INT4 and INT8 replays, ~9 min of CPU in all,
at the same peak memory (3.5 GB either way; random weights never stop a sentence early, so real ones cost
no more). A graph INT4
does not suit costs nothing afterwards: it is served at INT8 as before. --weights int8 (or f16, f32, int4) skips
the check.

Without NNCF (the `compress` extra) no compressed format can be made: f16, the only one left that runs well.
"""
from __future__ import annotations

import importlib.util

# What the log says the check costs, so that a first start that takes minutes is not taken for a hang.
AUTO_COST = "adds ~5-10 min on 2 cores for a 0.6b model, once"


def default_weights() -> tuple[str, str]:
    """The weight mode to export with when none is given, and why (one clause for the log)."""
    if importlib.util.find_spec("nncf") is not None:
        return "auto", (f"INT4 where this checkpoint's check allows (~1.5x faster than INT8), INT8 elsewhere; "
                        f"the check {AUTO_COST}")
    return "f16", "NNCF is not installed (pip install 'wyoming-chorus[compress]' for faster INT4/INT8 weights)"
