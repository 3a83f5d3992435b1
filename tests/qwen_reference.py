"""The reference implementation (the `qwen-tts` package on torch) for the fidelity tests: tiny random checkpoints
made with its own classes and saved in the hub layout, and its generation with everything the tests compare
(codes, the talker's prompt, the PCM, the greedy margins) recorded.

Import this module only after `pytest.importorskip("torch")`.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
from wyoming_chorus.export.presets import talker_config
from wyoming_chorus.export.tokenizer import special_token_ids, train_tokenizer

from hub_layout import write_tokenizer_files

_AUDIO_MODULES = ("librosa", "librosa.filters", "soundfile", "sox", "onnxruntime", "torchaudio",
                  "torchaudio.compliance", "torchaudio.compliance.kaldi")


def _stub_audio_io() -> None:
    """qwen-tts imports librosa, soundfile, sox, onnxruntime and torchaudio at module level, but only its audio
    input paths (reading reference audio for voice cloning, the speaker encoder's mel filters) and its unused
    25 Hz tokenizer call them; none runs in these tests. Installing them would pull numba, scipy, scikit-learn and a
    CUDA torchaudio (which fails to import here) into the test environment, so where one is missing an empty
    module stands in for it. Each stub gets a module spec, because transformers probes optional packages with
    importlib.util.find_spec and fails on a module without one."""
    missing = {name for name in _AUDIO_MODULES if "." not in name and importlib.util.find_spec(name) is None}
    for name in _AUDIO_MODULES:  # parents before children
        parent, _, child = name.rpartition(".")
        if name.split(".")[0] not in missing:
            continue
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules[name] = module
        if parent:
            setattr(sys.modules[parent], child, module)
    if "librosa" in missing:
        sys.modules["librosa.filters"].mel = None  # imported by name; only the speaker encoder's mel calls it


_stub_audio_io()

import torch  # noqa: E402
from qwen_tts import Qwen3TTSModel  # noqa: E402
from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model  # noqa: E402
from qwen_tts.core.models import Qwen3TTSConfig, Qwen3TTSForConditionalGeneration  # noqa: E402

# The tiny models' tensors are far too small to share out: with two intra-op threads, each op only waits for the
# other thread (and for OpenVINO's, on a 2-core machine), which made generation 6x slower.
torch.set_num_threads(1)

# The special tokens of the real tokenizer that the prompt uses, plus <|endoftext|>, its pad token.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|tts_pad|>", "<|tts_text_bos|>",
                  "<|tts_text_eod|>"]
_TEXT_ID_KEYS = {"im_start_token_id": "<|im_start|>", "im_end_token_id": "<|im_end|>",
                 "tts_pad_token_id": "<|tts_pad|>", "tts_bos_token_id": "<|tts_text_bos|>",
                 "tts_eos_token_id": "<|tts_text_eod|>"}
GENERATION_CONFIG = {"do_sample": True, "temperature": 0.9, "top_p": 1.0, "top_k": 50, "repetition_penalty": 1.05,
                     "subtalker_dosample": True, "subtalker_temperature": 0.9, "subtalker_top_p": 1.0,
                     "subtalker_top_k": 50, "max_new_tokens": 8192}
# A Mimi encoder as small as the config allows: the codec checkpoint must hold one, but nothing here runs it.
_TINY_ENCODER = {"hidden_size": 32, "num_filters": 8, "num_hidden_layers": 1, "intermediate_size": 64,
                 "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 8, "codebook_dim": 32,
                 "vector_quantization_hidden_dimension": 32, "num_quantizers": 16, "upsample_groups": 32,
                 "frame_rate": 12.5, "upsampling_ratios": [8, 6, 5, 4]}


# The speaker encoder's real layout (ECAPA-TDNN: 3 SE-Res2Net blocks, kernels 5/3/3/3/1, dilations 1-4) at a tenth
# of its widths; the 128-bin mel input is fixed by the reference's mel function.
SPEAKER_ENCODER = {"mel_dim": 128, "enc_channels": [32, 32, 32, 32, 96], "enc_kernel_sizes": [5, 3, 3, 3, 1],
                   "enc_dilations": [1, 2, 3, 4, 1], "enc_attention_channels": 16, "enc_res2net_scale": 4,
                   "enc_se_channels": 16, "sample_rate": 24000}


def make_checkpoint(out: Path, model_type: str, seed: int, weight_scale: float = 1.0, bf16: bool = False) -> Path:
    """A tiny random Qwen3-TTS checkpoint of `model_type` ("custom_voice", "voice_design" or "base") in the hub
    layout.

    The talker is made by Qwen3TTSForConditionalGeneration with its own initialisation (torch seeded with `seed`),
    every matrix then multiplied by `weight_scale` (a wider logit spread: fewer near-ties for greedy decoding).
    The codec is a Qwen3TTSTokenizerV2Model whose decoder gets audible random weights (the reference
    initialisation decodes to near silence) and whose encoder gets random codebooks (the reference's are zeros).
    The VoiceDesign model also differs in shape: its code predictor is as wide as the talker (no projection between
    them, as in the 0.6B models) with the released rope_theta of 1e6.
    bf16 stores the talker in bfloat16, as the released checkpoints are (the reference then loads it as float32).
    The Base model has no speakers and a small speaker encoder (SPEAKER_ENCODER) whose embedding is as wide as the
    talker, as in the released models.
    """
    out.mkdir(parents=True, exist_ok=True)
    tokenizer_json = train_tokenizer(384, SPECIAL_TOKENS)
    write_tokenizer_files(out, tokenizer_json)
    ids = special_token_ids(tokenizer_json, SPECIAL_TOKENS)
    config = talker_config("tiny", {key: ids[token] for key, token in _TEXT_ID_KEYS.items()})
    config.update(tts_model_type=model_type, tts_model_size="1b7")
    if model_type == "voice_design":
        talker = config["talker_config"]
        talker.update(spk_id={}, spk_is_dialect={})
        talker["code_predictor_config"].update(hidden_size=talker["hidden_size"], rope_theta=1000000.0,
                                               intermediate_size=128)

    if model_type == "base":
        config["talker_config"].update(spk_id={}, spk_is_dialect={})
        config["speaker_encoder_config"] = {**SPEAKER_ENCODER, "enc_dim": config["talker_config"]["hidden_size"]}

    torch.manual_seed(seed)
    model = Qwen3TTSForConditionalGeneration(Qwen3TTSConfig(**config)).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.ndim == 2 and "embedding" not in name:
                parameter.mul_(weight_scale)
    (model.to(torch.bfloat16) if bf16 else model).save_pretrained(out)
    (out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2))
    saved = json.loads((out / "config.json").read_text())
    # qwen-tts cannot reload its own save_pretrained output: the speaker-encoder part gains an empty model_type.
    saved.get("speaker_encoder_config", {}).pop("model_type", None)
    (out / "config.json").write_text(json.dumps(saved, indent=2))

    codec_config = Qwen3TTSTokenizerV2Config(encoder_config=_TINY_ENCODER, decoder_config=CODEC_PRESETS["tiny"])
    codec = Qwen3TTSTokenizerV2Model(codec_config).eval()
    decoder = random_codec_decoder_weights(CODEC_PRESETS["tiny"], np.random.default_rng([seed, 1]))
    state = {key: torch.from_numpy(value) for key, value in decoder.items()}
    missing = [key for key in codec.state_dict() if key.startswith("decoder.") and key not in state]
    if missing:
        raise RuntimeError(f"random codec weights lack {missing[:3]}")
    # The encoder's codebooks start at zeros (every code 0): random ones, so a clip's codes say something.
    rng = np.random.default_rng([seed, 2])
    for key, value in codec.state_dict().items():
        if key.startswith("encoder.quantizer.") and key.endswith(".embed_sum"):
            state[key] = torch.from_numpy(rng.standard_normal(tuple(value.shape)).astype(np.float32))
    codec.load_state_dict(state, strict=False)
    codec.save_pretrained(out / "speech_tokenizer")
    (out / "speech_tokenizer" / "preprocessor_config.json").write_text(json.dumps({
        "feature_extractor_type": "EncodecFeatureExtractor", "feature_size": 1, "sampling_rate": 24000,
        "padding_side": "right", "padding_value": 0.0, "return_attention_mask": True}))
    return out


def load(checkpoint: Path) -> Qwen3TTSModel:
    return Qwen3TTSModel.from_pretrained(str(checkpoint), dtype=torch.float32)


@dataclass
class Generation:
    codes: np.ndarray               # int [frames, 16]
    prefill: np.ndarray             # f32 [P, H]: the talker's prompt rows
    trailing: np.ndarray            # f32 [L, H]: the text track added to generated frames' inputs
    pcm: np.ndarray                 # f32 [frames * 1920]
    margins: list[float] = field(default_factory=list)  # greedy decisions: chosen score minus the runner-up


def generate(model: Qwen3TTSModel, text: str, frames: int, speaker: str | None = None, language: str = "auto",
             instruct: str | None = None, clone_prompt: dict | list | None = None,
             non_streaming_mode: bool | None = None) -> Generation:
    """Greedy generation of `frames` frames (unless eos comes first) with the reference's own entry points.
    `clone_prompt`: a Base model's voice_clone_prompt for generate_voice_clone (its defaults otherwise);
    `non_streaming_mode`: passed on when given (the entry point's default otherwise)."""
    record: dict = {}
    margins: list[float] = []
    talker = model.model.talker
    with _recording(model, record), _margins(talker, margins):
        common = dict(language=language, do_sample=False, subtalker_dosample=False,
                      # With no eos, generate returns max_new_tokens - 1 frames: the last codebook-0 never gets
                      # its 15 sub-codes.
                      max_new_tokens=frames + 1)
        if non_streaming_mode is not None:
            common["non_streaming_mode"] = non_streaming_mode
        if model.model.tts_model_type == "base":
            wavs, _ = model.generate_voice_clone(text, voice_clone_prompt=clone_prompt, **common)
        elif model.model.tts_model_type == "custom_voice":
            wavs, _ = model.generate_custom_voice(text, speaker=speaker, instruct=instruct, **common)
        else:
            wavs, _ = model.generate_voice_design(text, instruct=instruct, **common)
    codes = record["codes"].numpy()
    # The margins include the last codebook-0 decision, whose frame is never completed: conservative.
    return Generation(codes=codes, prefill=record["prefill"], trailing=record["trailing"],
                      pcm=np.asarray(wavs[0], np.float32), margins=margins)


@contextmanager
def _recording(model: Qwen3TTSModel, record: dict):
    """Wrap the model's generate (-> codes) and the talker's generate (-> its prompt) to keep what they saw."""
    outer, inner = model.model.generate, model.model.talker.generate

    def outer_generate(*args, **kwargs):
        codes, hidden = outer(*args, **kwargs)
        record["codes"] = codes[0]
        return codes, hidden

    def inner_generate(*args, **kwargs):
        record["prefill"] = kwargs["inputs_embeds"][0].numpy().copy()
        record["trailing"] = kwargs["trailing_text_hidden"][0].numpy().copy()
        return inner(*args, **kwargs)

    model.model.generate, model.model.talker.generate = outer_generate, inner_generate
    try:
        yield
    finally:
        del model.model.generate, model.model.talker.generate


@contextmanager
def _margins(talker, margins: list[float]):
    """Forward hooks on the codebook-0 head and the 15 code-predictor heads: each greedy decision's gap between
    the best and the second-best logit of the last position. Codebook 0's control ids (2048 and up) are left out,
    as generation suppresses them; its repetition penalty only shrinks scores, which the margin threshold
    of the tests leaves room for."""
    codebook = talker.config.code_predictor_config.vocab_size

    def codec_head(module, inputs, output):
        margins.append(_gap(output[0, -1, :codebook]))

    def sub_head(module, inputs, output):
        margins.append(_gap(output[0, -1]))

    handles = [talker.codec_head.register_forward_hook(codec_head)]
    handles += [head.register_forward_hook(sub_head) for head in talker.code_predictor.lm_head]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _gap(logits) -> float:
    top = torch.topk(logits.float(), 2).values
    return float(top[0] - top[1])


def speaker_embedding(model: Qwen3TTSModel, audio: np.ndarray) -> np.ndarray:
    """The reference's extract_speaker_embedding of 24 kHz audio.

    Its mel filter bank comes from librosa.filters.mel, which these tests do not install (see _stub_audio_io);
    where librosa is missing, transformers' own port of it (audio_utils.mel_filter_bank, Slaney scale and norm)
    stands in, an implementation independent of wyoming_chorus/frontend/mel.py.
    """
    from qwen_tts.core.models import modeling_qwen3_tts as modeling

    if getattr(modeling, "librosa_mel_fn", None) is None:
        from transformers.audio_utils import mel_filter_bank

        def librosa_mel_fn(sr, n_fft, n_mels, fmin, fmax):
            return mel_filter_bank(num_frequency_bins=n_fft // 2 + 1, num_mel_filters=n_mels, min_frequency=fmin,
                                   max_frequency=fmax, sampling_rate=sr, norm="slaney", mel_scale="slaney").T
        modeling.librosa_mel_fn = librosa_mel_fn
    return model.model.extract_speaker_embedding(np.asarray(audio, np.float32), 24000).float().numpy()


def icl_prompt(model: Qwen3TTSModel, audio: np.ndarray, ref_text: str) -> list:
    """create_voice_clone_prompt of 24 kHz audio and its transcript in the reference's default (in-context) mode:
    the clip's codes from the reference's speech tokenizer, its embedding, the transcript."""
    speaker_embedding(model, audio[:2400])  # installs the mel filter bank where librosa is absent
    return model.create_voice_clone_prompt(ref_audio=(np.asarray(audio, np.float32), 24000), ref_text=ref_text,
                                           x_vector_only_mode=False)


def x_vector_prompt(embedding: np.ndarray) -> dict:
    """The voice_clone_prompt create_voice_clone_prompt(x_vector_only_mode=True) makes from a clip's embedding."""
    return {"ref_code": [None], "ref_spk_embedding": [torch.from_numpy(embedding)], "x_vector_only_mode": [True],
            "icl_mode": [False]}
