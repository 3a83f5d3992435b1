"""Text to a Sequence the engine can run: the front end's one entry point.

Everything a request needs before it reaches the serving loop happens here, on a worker thread of the caller (the
prompt builder's text graph is compiled once and shared, so building is serialised by a lock): the text is cleaned
and bounded, the voice is found, a cloned voice's embedding and clip codes are looked up, the language is chosen,
the text is normalised, the prompt is built, and sampling and the frame cap are decided.
"""
from __future__ import annotations

import itertools
import random
import threading

from service.config import EngineSettings, VoicesSettings
from service.engine.sequence import SamplingParams, Sequence
from service.errors import InvalidText, RequestFailed
from service.frontend.clean_text import clean_text
from service.frontend.clone import ClipCodes, ClipError, SpeakerEmbeddings
from service.frontend.language import choose_language, load_detector
from service.frontend.normalize import normalize
from service.frontend.prompt import Prompt, PromptBuilder, PromptError
from service.frontend.voices import VoiceInfo, Voices
from service.modeldir.manifest import ModelDir

# A missing eos must not run away: cap frames by the text's length. Natural speech needs about 4 frames (320 ms)
# per text token; twice that plus two seconds leaves room for slow speech without letting a runaway go far.
_FRAMES_PER_TEXT_TOKEN = 8
_FRAMES_BASE = 25


class RequestBuilder:
    def __init__(self, model: ModelDir, settings: EngineSettings, voices: VoicesSettings | None = None):
        self.model = model
        self.settings = settings
        self.voices = Voices(model, voices or VoicesSettings())
        self.prompts = PromptBuilder(model)
        # Base: cloned voices speak with their clip's speaker embedding (computed on first use, then cached).
        self._embeddings = SpeakerEmbeddings(model) if model.has("speaker_encoder.xml") else None
        # ... and, when the voice has the clip's transcript, the clip's codes (in-context cloning).
        self._clip_codes = ClipCodes(model) if model.has("codec_encoder.xml") else None
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def warm_up(self) -> Sequence:
        """Loads the language detector (0.5-1 s: not in the first room's time to first audio) and returns a
        two-frame request on the bare prompt (the default voice may be one that cannot speak yet, a cloned one)."""
        load_detector()
        return self._sequence(self.prompts.build("Hello."), seed=0, frame_cap=2)

    def current_voices(self) -> tuple[VoiceInfo, ...]:
        return self.voices.current()

    def build(self, text: str, voice: str | None = None, speaker: str | None = None, language: str | None = None,
              seed: int | None = None) -> Sequence:
        """The request for `text`; raises InvalidText (the client's text) or RequestFailed (the voice)."""
        text = clean_text(text)
        if not text:
            raise InvalidText("the text is empty")
        if len(text) > self.settings.max_text_length:  # what the client sent, not what normalising made of it
            raise InvalidText(f"the text has {len(text)} characters; the limit is {self.settings.max_text_length}")
        chosen = self.voices.find(voice, speaker)
        clone_layout: dict = {}
        ref_codes = None
        if chosen.clip is not None:
            if self._embeddings is None:
                raise RequestFailed(f"voice {chosen.name!r}: the model has no speaker encoder; re-export it")
            try:
                embedding = self._embeddings.of_clip(chosen.clip.wav)
                # In-context cloning needs the clip's transcript, and codec_encoder.xml (older exports lack it:
                # their clones speak from the embedding alone).
                if chosen.clip.text and self._clip_codes is not None:
                    ref_codes = self._clip_codes.of_clip(chosen.clip.wav)
            except ClipError as error:
                raise RequestFailed(f"voice {chosen.name!r}: {error}") from error
            # generate_voice_clone's default: the text is fed one token per frame.
            clone_layout = {"speaker_embedding": embedding, "non_streaming_mode": False}
            if ref_codes is not None:
                clone_layout.update(ref_text=chosen.clip.text, ref_codes=ref_codes)
        # The request's language, else the voice's, else the text's among the voice's languages (Home Assistant sends
        # none); None lets the model decide, with the English number rules.
        code, detected = choose_language(language, chosen.language, text, chosen.languages)
        model_language = self.voices.model_language(code)
        spoken = normalize(text, code)
        try:
            with self._lock:
                prompt = self.prompts.build(spoken, speaker=chosen.speaker, language=model_language,
                                            instruct=chosen.instruct, **clone_layout)
        except PromptError as error:  # text that cannot be put into the prompt frame
            raise InvalidText(str(error)) from error
        seq = self._sequence(prompt, seed, words=len(spoken.split()))
        seq.codec_prefix = ref_codes
        seq.voice, seq.language, seq.language_detected = chosen.name, code, detected
        return seq

    def _sequence(self, prompt: Prompt, seed: int | None, frame_cap: int | None = None, words: int = 0) -> Sequence:
        gen = self.prompts.generation
        greedy = self.settings.greedy
        if seed is None:
            seed = self.settings.seed if self.settings.seed is not None else random.getrandbits(63)
        sampling = SamplingParams(
            temperature=0.0 if greedy else gen["temperature"],
            top_k=gen["top_k"],
            top_p=gen["top_p"],
            repetition_penalty=gen["repetition_penalty"],
            sub_temperature=0.0 if greedy else gen["subtalker_temperature"],
            sub_top_k=gen["subtalker_top_k"],
            sub_top_p=gen["subtalker_top_p"],
            seed=seed,
        )
        if frame_cap is None:
            frame_cap = min(self.settings.max_frames, _FRAMES_BASE + _FRAMES_PER_TEXT_TOKEN * prompt.n_text_tokens)
            if self.model.manifest.random_weights:  # it never says eos: without a cap, 15-60 s of noise per sentence
                per_word = self.settings.benchmark_frames_per_word
                # A benchmark's replies end at a natural length for their text (a minimum of one second).
                frame_cap = (min(self.settings.max_frames, max(13, round(per_word * words))) if per_word > 0
                             else min(frame_cap, self.settings.random_model_frames))
        return Sequence(
            seq_id=next(self._ids),
            prompt=prompt.prefill,
            trailing_text=prompt.trailing,
            pad_text=prompt.pad,
            sampling=sampling,
            frame_cap=frame_cap,
        )
