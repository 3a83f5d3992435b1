"""Text to a Sequence the engine can run: the front end's one entry point.

Everything a request needs before it reaches the serving loop happens here, on the front-end thread (frontend.worker),
the one thread that uses this builder once the service has started: the text is cleaned and bounded, the voice is
found, a cloned voice's embedding and clip codes are looked up, the language is chosen, the text is normalised, the
prompt is built, and sampling and the frame cap are decided.
"""
from __future__ import annotations

import itertools
import random

import numpy as np

from wyoming_chorus.config import EngineSettings, VoicesSettings
from wyoming_chorus.engine.sequence import SamplingParams, Sequence
from wyoming_chorus.errors import InvalidText, RequestFailed
from wyoming_chorus.frontend.clean_text import clean_text
from wyoming_chorus.frontend.clone import ClipCodes, ClipError, SpeakerEmbeddings
from wyoming_chorus.frontend.language import choose_language, load_detector, unspoken_language
from wyoming_chorus.frontend.normalize import normalize
from wyoming_chorus.frontend.prompt import PromptBuilder, PromptError
from wyoming_chorus.frontend.voices import VoiceInfo, Voices
from wyoming_chorus.modeldir.manifest import ModelDir

# A missing eos must not run away: cap frames by the text's length. Natural speech needs about 4 frames (320 ms)
# per text token; twice that plus two seconds leaves room for slow speech without letting a runaway go far.
_FRAMES_PER_TEXT_TOKEN = 8
_FRAMES_BASE = 25


class RequestBuilder:
    def __init__(self, model: ModelDir, settings: EngineSettings, voices: VoicesSettings | None = None):
        self.model = model
        self.settings = settings
        self.voices = Voices(model, voices or VoicesSettings())
        # engine.prompt_layout: streaming puts one text token in the prompt and feeds the rest one per frame (the
        # reference's non_streaming_mode=False) for every request, so a prompt costs the same few rows whatever its
        # text; reference keeps each voice kind's default of the reference's generate_* (frontend/prompt.py).
        self.prompts = PromptBuilder(model, non_streaming_mode=settings.prompt_layout == "reference")
        # Base: cloned voices speak with their clip's speaker embedding (computed on first use, then cached).
        self._embeddings = SpeakerEmbeddings(model) if model.has("speaker_encoder.xml") else None
        # ... and, when the voice has the clip's transcript, the clip's codes (in-context cloning).
        self._clip_codes = ClipCodes(model) if model.has("codec_encoder.xml") else None
        self._ids = itertools.count()

    def warm_up(self) -> Sequence:
        """Loads the language detector (0.5-1 s: not in the first room's time to first audio) and returns a
        two-frame request on the bare prompt (the default voice may be one that cannot speak yet, a cloned one)."""
        load_detector()
        prompt = self.prompts.build("Hello.")
        return self._sequence(prompt.prefill, prompt.trailing, prompt.pad, seed=0, frame_cap=2)

    def cost_probe(self) -> Sequence:
        """A short request for measuring a batch's step cost at warm-up: four frames, i.e. three decode steps."""
        prompt = self.prompts.build("Hello.")
        return self._sequence(prompt.prefill, prompt.trailing, prompt.pad, seed=0, frame_cap=4)

    def current_voices(self) -> tuple[VoiceInfo, ...]:
        return self.voices.current()

    def build(self, text: str, voice: str | None = None, speaker: str | None = None, language: str | None = None,
              seed: int | None = None) -> Sequence:
        """The request for `text`; raises InvalidText (the client's text) or RequestFailed (the voice)."""
        return self._build(text, voice, speaker, language, seed, open_text=False)[0]

    def can_stream(self, voice: str | None, speaker: str | None) -> bool:
        """Whether this voice takes its text while it speaks. An in-context clone cannot: its text track lies over
        the clip's codes inside the prompt, so the whole text must be known before the first step."""
        chosen = self.voices.find(voice, speaker)
        return not (chosen.clip is not None and chosen.clip.text and self._clip_codes is not None)

    def build_open(self, text: str, voice: str | None = None, speaker: str | None = None,
                   language: str | None = None, seed: int | None = None) -> tuple[Sequence, TextFeed]:
        """A request that starts with `text`, the beginning of a text still being written; the TextFeed turns each
        later piece (starting with its whitespace, as cut by the server) into text rows for EngineCore.feed."""
        seq, feed = self._build(text, voice, speaker, language, seed, open_text=True)
        assert feed is not None
        return seq, feed

    def _build(self, text: str, voice: str | None, speaker: str | None, language: str | None, seed: int | None,
               open_text: bool) -> tuple[Sequence, TextFeed | None]:
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
        if open_text:
            # One text token per frame, the rest fed as it comes: the layout of non_streaming_mode=False.
            clone_layout["non_streaming_mode"] = False
        # The request's language, else the voice's, else the text's among the voice's languages (Home Assistant sends
        # none); None lets the model decide, with the English number rules; text in a language the voice does not
        # speak keeps its numbers and units as written (no other language's words are read into it).
        code, detected = choose_language(language, chosen.language, text, chosen.languages)
        model_language = self.voices.model_language(code)
        rules = code or self.unspoken_language(text, voice, speaker)
        spoken = normalize(text, rules)
        try:
            prompt = self.prompts.build(spoken, speaker=chosen.speaker, language=model_language,
                                        instruct=chosen.instruct, **clone_layout)
        except PromptError as error:  # text that cannot be put into the prompt frame
            raise InvalidText(str(error)) from error
        words = len(spoken.split())
        feed = None
        trailing = prompt.trailing
        if open_text:
            # The layout ends the text track with tts_eos: that row comes when the text is complete.
            feed = TextFeed(self, rules, prompt.n_text_tokens, words, eos_row=trailing[-1])
            trailing = trailing[:-1]
        seq = self._sequence(prompt.prefill, trailing, prompt.pad, seed,
                             self.frame_cap(prompt.n_text_tokens, words))
        seq.text_open = open_text
        seq.codec_prefix = ref_codes
        seq.voice, seq.language, seq.language_detected = chosen.name, code, detected
        return seq, feed

    def unspoken_language(self, text: str, voice: str | None, speaker: str | None) -> str | None:
        """The language of `text` when it is one the voice does not speak (the model decides how to say it): its
        numbers and units are left as written, and its reply warns (frontend.worker)."""
        return unspoken_language(text, self.voices.find(voice, speaker).languages)

    def frame_cap(self, n_text_tokens: int, words: int) -> int:
        """Most frames a text of this length may take: a missing eos must not run away."""
        cap = min(self.settings.max_frames, _FRAMES_BASE + _FRAMES_PER_TEXT_TOKEN * n_text_tokens)
        if self.model.manifest.random_weights:  # it never says eos: without a cap, 15-60 s of noise per sentence
            per_word = self.settings.benchmark_frames_per_word
            # A benchmark's replies end at a natural length for their text (a minimum of one second).
            cap = (min(self.settings.max_frames, max(13, round(per_word * words))) if per_word > 0
                   else min(cap, self.settings.random_model_frames))
        return cap

    def _sequence(self, prefill: np.ndarray, trailing: np.ndarray, pad: np.ndarray, seed: int | None,
                  frame_cap: int) -> Sequence:
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
        return Sequence(seq_id=next(self._ids), prompt=prefill, trailing_text=trailing, pad_text=pad,
                        sampling=sampling, frame_cap=frame_cap)

    def text_rows(self, piece: str) -> np.ndarray:
        """Text-track rows of a later piece of a streamed text (already normalised)."""
        return self.prompts.text_rows(piece)


class TextFeed:
    """The rest of one streaming request's text: each piece normalised in the request's language and embedded.

    Pieces are cut by the server before a whitespace, so each piece tokenises as it would inside the whole text
    (the BPE pre-tokeniser splits there too, the space going with the next word)."""

    def __init__(self, requests: RequestBuilder, language: str | None, n_text_tokens: int, words: int,
                 eos_row: np.ndarray):
        self._requests = requests
        self._language = language
        self.n_text_tokens = n_text_tokens
        self.words = words
        self._eos_row = eos_row[None]

    def rows(self, piece: str) -> tuple[np.ndarray, int]:
        """(rows, the frame cap the text so far allows) for `piece`; no rows for a piece with nothing to say."""
        leading_space = piece[:1].isspace()
        piece = clean_text(piece)
        spoken = normalize(piece, self._language) if piece else ""
        if not spoken.strip():
            return np.zeros((0, self._eos_row.shape[1]), np.float32), self._cap()
        if leading_space:  # cleaning and normalising strip it; the word's token carries it
            spoken = " " + spoken.lstrip()
        rows = self._requests.text_rows(spoken)
        self.n_text_tokens += len(rows)
        self.words += len(spoken.split())
        return rows, self._cap()

    def close(self) -> tuple[np.ndarray, int]:
        """The last row (tts_eos) and the final frame cap."""
        return self._eos_row, self._cap()

    def _cap(self) -> int:
        return self._requests.frame_cap(self.n_text_tokens, self.words)
