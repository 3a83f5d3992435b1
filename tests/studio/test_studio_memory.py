"""What a clone / preview / delete cycle of the studio keeps: the clone front end's per-clip cache (speaker
embeddings, clip codes) holds the clips that exist, not every clip ever used (it grew by one result a cycle)."""
from __future__ import annotations

from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.frontend.clone import SpeakerEmbeddings
from wyoming_chorus.modeldir.manifest import ModelDir

from studio_helpers import clip_bytes


def test_the_clip_cache_forgets_deleted_clips(tmp_path):
    embeddings = SpeakerEmbeddings(ModelDir(resolve_model("builtin:tiny-base")))
    kept = tmp_path / "kept.wav"
    kept.write_bytes(clip_bytes())
    first = embeddings.of_clip(kept)
    for cycle in range(5):  # as the studio does: a clip made, used, and deleted with its voice
        made = tmp_path / f"voice-{cycle}.wav"
        made.write_bytes(clip_bytes(seconds=3.0 + cycle / 10))
        embeddings.of_clip(made)
        made.unlink()
    # kept.wav's, and the last clip's (forgotten at the next clip made): not one a cycle
    assert len(embeddings._cache) <= 2
    assert (embeddings.of_clip(kept) == first).all()
