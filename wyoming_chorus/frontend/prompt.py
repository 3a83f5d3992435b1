"""Turns a request (text, speaker, language, instruction) into the talker's input rows.

Every talker input row is the sum of a text-track embedding T(x) = text_projection(text_embedding(x)) and a
codec-track embedding C(x) = codec_embedding(x). Layout, following the reference's generate() with
non_streaming_mode=True, the default of generate_custom_voice (and generate_voice_design):

    ids   = tokens of "<|im_start|>assistant\\n{text}<|im_end|>\\n<|im_start|>assistant\\n"
            (ids[:3] role prefix, ids[3:-5] the text, ids[-5:] the closing frame)
    codec = [nothink, think_bos, think_eos]              language "auto"
          | [think, think_bos, language, think_eos]      explicit language (or a dialect speaker's dialect)
            + [speaker] if a speaker is named, + [pad, bos]

    prefill = T(instruct frame)                                    only with an instruction
           ++ T(ids[:3])                                           text track only
           ++ (T(tts_pad) * (len(codec) - 2) ++ T(tts_bos)) + C(codec[:-1])
           ++ (T(ids[3:-5]) ++ T(tts_eos)) + C(pad)                the whole text, up front
           ++ T(tts_pad) + C(bos)
    trailing = []          every generated frame's input gets T(tts_pad) (Prompt.pad) on its text track

With non_streaming_mode=False the reference instead ends the prefill with T(ids[3]) + C(bos) and feeds the rest of
the text one token per frame (trailing = T(ids[4:-5]) ++ T(tts_eos)); `PromptBuilder(..., non_streaming_mode=False)`
gives that layout, and so does build(..., non_streaming_mode=False) for one prompt.

Voice cloning (Base model, x-vector only): the clip's speaker embedding is the codec-track row where a speaker id's
C(speaker) would be, exactly as the reference's generate() puts `ref_spk_embedding` there. generate_voice_clone
defaults to non_streaming_mode=False, so the engine builds cloned voices' prompts that way.

In-context cloning (the reference's generate_icl_prompt; `ref_text` and `ref_codes` given, with the embedding): the
prefill ends, after the tags, with the clip's transcript and codes instead of the text's first token:

    text rows  = T(ref_ids ++ ids[3:-5]) ++ T(tts_eos)       ref_ids: tokens of ref_text (no role prefix, no close)
    codec rows = C(bos) ++ [C(code_0) + sum_i C_i(code_i) for each clip frame]   (C_i the code predictor's tables)
    non_streaming_mode=False: the first len(codec rows) rows of both tracks summed (the text track padded with
        T(tts_pad) when shorter); the text rows left over are the trailing rows
    non_streaming_mode=True:  (text rows + C(pad)) ++ (codec rows + T(tts_pad)); no trailing rows
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import openvino as ov
from tokenizers import Tokenizer

from wyoming_chorus.modeldir.manifest import ModelDir

_ROLE = "<|im_start|>assistant\n"
_CLOSE = "<|im_end|>\n<|im_start|>assistant\n"


class PromptError(ValueError):
    """A request that cannot be put into the prompt frame (its text, speaker, language or clip): the client's
    mistake, reported to it. Any other exception from here is a bug, and is logged as one."""


@dataclass(frozen=True)
class Prompt:
    prefill: np.ndarray     # f32 [P, H]: the rows of the first talker step(s)
    trailing: np.ndarray    # f32 [L, H]: text-track rows added to the first L generated frames' inputs
    pad: np.ndarray         # f32 [H]: text-track row for every later frame
    n_text_tokens: int      # tokens of the text itself (a frame-cap estimate)


class PromptBuilder:
    def __init__(self, model: ModelDir, device: str = "CPU", non_streaming_mode: bool = True):
        self.manifest = model.manifest
        self.sample_rate = self.manifest.sample_rate
        self.generation = dict(self.manifest.generation)
        self.non_streaming_mode = non_streaming_mode
        self._tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
        tables = model.embeddings
        self._codec_embedding = tables["codec_embedding"]
        self._cp_codec_embedding = tables["cp_codec_embedding"]  # [15, codebook, H]: codebooks 1-15 (ICL codes)
        # f32: the text embeddings are computed once per request, and bf16 would shift every prompt row.
        self._text = ov.Core().compile_model(model / "text.xml", device, {"INFERENCE_PRECISION_HINT": "f32"})
        self._codec_ids = self.manifest.codec_ids
        self._text_ids = self.manifest.text_ids
        self._role_ids = self._encode(_ROLE)
        self._close_ids = self._encode(_CLOSE)

    def build(self, text: str, speaker: str | None = None, language: str | None = None,
              instruct: str | None = None, speaker_embedding: np.ndarray | None = None,
              non_streaming_mode: bool | None = None, ref_text: str | None = None,
              ref_codes: np.ndarray | None = None) -> Prompt:
        """`speaker_embedding` (f32 [H], from a reference clip) stands in for a speaker; `non_streaming_mode`
        overrides the builder's layout for this prompt. `ref_text` and `ref_codes` (the clip's transcript and its
        codes [frames, 16]) make an in-context cloning prompt (with the clip's `speaker_embedding`)."""
        if speaker_embedding is not None and speaker:
            raise PromptError("a prompt has either a speaker or a speaker embedding, not both")
        if (ref_text is None) != (ref_codes is None) or (ref_codes is not None and speaker_embedding is None):
            raise PromptError("in-context cloning needs the clip's transcript, codes and speaker embedding")
        non_streaming = self.non_streaming_mode if non_streaming_mode is None else non_streaming_mode
        ids = self._encode(_ROLE + text + _CLOSE)
        role, close = len(self._role_ids), len(self._close_ids)
        text_ids = ids[role:len(ids) - close]
        if ids[:role] != self._role_ids or ids[len(ids) - close:] != self._close_ids or not text_ids:
            raise PromptError(f"text {text[:40]!r} does not tokenize to a non-empty text between the prompt frame")
        instruct_ids = (self._encode(f"<|im_start|>user\n{instruct}<|im_end|>\n")
                        if instruct and self.manifest.supports_instruct else [])
        ref_ids = self._ref_ids(ref_text) if ref_text is not None else []
        special = [self._text_ids[key] for key in ("tts_pad", "tts_bos", "tts_eos")]
        embeds = self._text_embeds(instruct_ids + ref_ids + ids[:role] + text_ids + special)
        instruct_rows, ref_rows, embeds = np.split(embeds, [len(instruct_ids), len(instruct_ids) + len(ref_ids)])
        role_rows, text_rows, (tts_pad, tts_bos, tts_eos) = np.split(embeds, [role, role + len(text_ids)])

        codec = self._codec_prefix(speaker, language)
        c = self._codec_embedding
        ids_of = self._codec_ids
        codec_rows = c[codec]
        if speaker_embedding is not None:  # before [pad, bos], where a speaker id's row goes
            row = np.asarray(speaker_embedding, np.float32).reshape(1, c.shape[1])
            codec_rows = np.concatenate([codec_rows[:-2], row, codec_rows[-2:]])
        tags = np.concatenate([np.repeat(tts_pad[None], len(codec_rows) - 2, 0), tts_bos[None]]) + codec_rows[:-1]
        if ref_codes is not None:
            ref_and_text = np.concatenate([ref_rows, text_rows, tts_eos[None]])
            codes = np.asarray(ref_codes, np.int64)
            if codes.ndim != 2 or codes.shape[1] != 1 + len(self._cp_codec_embedding) or not len(codes):
                raise PromptError(f"the clip's codes must be [frames, {1 + len(self._cp_codec_embedding)}], "
                                 f"got {list(codes.shape)}")
            frames = c[codes[:, 0]] + sum(table[codes[:, i + 1]] for i, table in enumerate(self._cp_codec_embedding))
            codec_track = np.concatenate([c[ids_of["bos"]][None], frames])
            if non_streaming:
                icl = [ref_and_text + c[ids_of["pad"]], codec_track + tts_pad]
                trailing = np.zeros((0, tts_pad.shape[0]), np.float32)
            else:
                shared = min(len(ref_and_text), len(codec_track))
                padding = np.repeat(tts_pad[None], len(codec_track) - shared, 0)
                icl = [np.concatenate([ref_and_text[:shared], padding]) + codec_track]
                trailing = ref_and_text[shared:]
            prefill = [instruct_rows, role_rows, tags, *icl]
        elif non_streaming:
            whole_text = np.concatenate([text_rows, tts_eos[None]]) + c[ids_of["pad"]]
            start = tts_pad + c[ids_of["bos"]]
            prefill = [instruct_rows, role_rows, tags, whole_text, start[None]]
            trailing = np.zeros((0, tts_pad.shape[0]), np.float32)
        else:
            prefill = [instruct_rows, role_rows, tags, (text_rows[0] + c[ids_of["bos"]])[None]]
            trailing = np.concatenate([text_rows[1:], tts_eos[None]])
        return Prompt(
            prefill=np.ascontiguousarray(np.concatenate(prefill), dtype=np.float32),
            trailing=np.ascontiguousarray(trailing, dtype=np.float32),
            pad=np.ascontiguousarray(tts_pad, dtype=np.float32),
            n_text_tokens=len(text_ids),
        )

    def _codec_prefix(self, speaker: str | None, language: str | None) -> list[int]:
        languages, speakers = self.manifest.languages, self.manifest.speakers
        language = (language or "auto").lower()
        if language != "auto" and language not in languages:
            raise PromptError(f"unknown language {language!r}; the model knows auto, {', '.join(languages)}")
        language_id = languages.get(language)
        speaker_id = None
        if speaker:
            speaker = speaker.lower()
            if speaker not in speakers:
                raise PromptError(f"unknown speaker {speaker!r}; the model has {', '.join(speakers) or 'none'}")
            speaker_id = speakers[speaker]
            # A dialect speaker speaks its dialect when the language is Chinese or left to the model.
            dialect = self.manifest.speaker_is_dialect.get(speaker, False)
            if dialect and language in ("chinese", "auto"):
                language_id = languages[dialect]
        ids = self._codec_ids
        if language_id is None:
            codec = [ids["nothink"], ids["think_bos"], ids["think_eos"]]
        else:
            codec = [ids["think"], ids["think_bos"], language_id, ids["think_eos"]]
        if speaker_id is not None:
            codec.append(speaker_id)
        return codec + [ids["pad"], ids["bos"]]

    def text_rows(self, text: str) -> np.ndarray:
        """Text-track rows [n, H] of more text, tokenised on its own: a streamed text's later pieces. Not
        thread-safe (the compiled text graph is shared): one thread, the front end's, calls it."""
        ids = self._encode(text)
        if not ids:
            return np.zeros((0, self._codec_embedding.shape[1]), np.float32)
        return self._text_embeds(ids)

    def _ref_ids(self, ref_text: str) -> list[int]:
        """The transcript's tokens as the reference takes them: "<|im_start|>assistant\\n{ref_text}<|im_end|>\\n"
        without its first 3 and last 2 tokens."""
        ids = self._encode(_ROLE + ref_text + "<|im_end|>\n")
        return ids[3:-2]

    def _encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def _text_embeds(self, ids: list[int]) -> np.ndarray:
        return self._text({"input_ids": np.asarray(ids, dtype=np.int64)})["embeds"].copy()
