"""The built-in tiny model (a CustomVoice model: ryan, serena, eric) and its variants: the same graphs under another
model type (VoiceDesign or Base), and the dims of a random speaker encoder that fits it."""
from __future__ import annotations

import json
from pathlib import Path

from wyoming_chorus.export.builtin import resolve_model

TINY = resolve_model("builtin:tiny")
MANIFEST = json.loads((TINY / "chorus.json").read_text())  # custom_voice: ryan, serena, eric (Sichuan dialect)

SPEAKER_ENCODER = {"mel_dim": 128, "enc_dim": MANIFEST["hidden_size"], "enc_channels": [16, 16, 16, 16, 48],
                   "enc_kernel_sizes": [5, 3, 3, 3, 1], "enc_dilations": [1, 2, 3, 4, 1],
                   "enc_attention_channels": 8, "enc_res2net_scale": 4, "enc_se_channels": 8}


def model_variant(tmp_path: Path, model_type: str, **manifest) -> Path:
    """The tiny model's graphs under another model type (VoiceDesign or Base): a new chorus.json, links for the rest."""
    out = tmp_path / model_type
    out.mkdir()
    for item in TINY.iterdir():
        if item.name != "chorus.json":
            (out / item.name).symlink_to(item)
    changed = {**MANIFEST, "name": model_type, "model_type": model_type, "speakers": {}, "speaker_is_dialect": {},
               **manifest}
    (out / "chorus.json").write_text(json.dumps(changed))
    return out
