"""The compiled runner (`_native`, built from native/ by the install), imported in one place so that a source tree
without it says what to do instead of "cannot import name '_native'".

That happens in a checkout installed without `-e`: `python -m wyoming_chorus` (or any script run from the checkout)
puts the source tree first on sys.path, and the source tree has no compiled module; the installed copy has.
"""
from __future__ import annotations

from pathlib import Path

import openvino  # noqa: F401  (loads libopenvino before the extension that links against it)

try:
    from wyoming_chorus import _native
except ImportError as missing:  # pragma: no cover - exercised in a checkout without an editable install
    _HERE = Path(__file__).resolve().parent
    raise ImportError(
        f"wyoming-chorus's compiled runner is not in {_HERE}: this is a source tree without it. In a checkout, "
        "install it in place with `pip install -e .`, or run the installed `wyoming-chorus` command from another "
        "directory.") from missing

__all__ = ["_native"]
