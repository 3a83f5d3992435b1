"""Qwen2-style byte-level BPE tokenizers as tokenizer.json text: from a checkpoint's files, or trained small.

`tokenizer_from_files` builds what transformers builds when it loads a Qwen3-TTS checkpoint (vocab.json, merges.txt
and tokenizer_config.json, no tokenizer.json) into a Qwen2TokenizerFast: its slow-to-fast converter's BPE model,
normaliser, pre-tokenizer and decoder, then the added tokens of tokenizer_config.json in id order.

`train_tokenizer` makes one for random-weight models (the real checkpoints ship their own), shaped the same way with
the special tokens appended after the learned vocabulary. The prompt layout needs "assistant" and "\\n" to be single
tokens; it checks that rather than trusting the corpus.
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from wyoming_chorus.export.checkpoint import CheckpointError, read_json

# Qwen2's pre-tokenizer split: contractions, words with one leading non-letter, single digits, punctuation runs,
# newlines, other whitespace.
_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
          r"|\s+(?!\S)|\s+")

_CORPUS = """\
The quick brown fox jumps over the lazy dog.
Turn on the kitchen lights and set the thermostat to twenty one degrees.
The front door is locked, and the garage door is closed.
Good morning! Today will be sunny with a high of eighteen degrees.
It is going to rain this afternoon, so take an umbrella with you.
Your timer for the pasta has finished.
The washing machine is done; please empty it.
Someone is at the front door.
The living room temperature is twenty two degrees and the humidity is forty percent.
Reminder: the recycling bin goes out tonight.
Playing your favourite playlist in the bedroom.
I have added milk, eggs and bread to the shopping list.
The battery of the smoke detector in the hallway is low.
Good night. All lights are off and the alarm is armed.
What time is it? It is a quarter past seven in the evening.
Welcome home! The heating has been on for ten minutes.
Guten Morgen, das Wetter ist heute sonnig.
Bonjour, la porte du garage est ouverte.
今天天气很好，我们去公园散步吧。
"""


def _qwen2(model: models.BPE, add_prefix_space: bool = False) -> Tokenizer:
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def tokenizer_from_files(directory: Path) -> str:
    """tokenizer.json text for a checkpoint directory: its own tokenizer.json if it has one, else one built from
    vocab.json + merges.txt + tokenizer_config.json."""
    directory = Path(directory)
    if (directory / "tokenizer.json").is_file():
        return (directory / "tokenizer.json").read_text(encoding="utf-8")
    config = read_json(directory / "tokenizer_config.json")
    vocab = read_json(directory / "vocab.json")
    merges_path = directory / "merges.txt"
    if not merges_path.is_file():
        raise CheckpointError(f"missing file {merges_path}")
    merges = []
    for number, line in enumerate(merges_path.read_text(encoding="utf-8").splitlines()):
        line = line.strip()
        if not line or (number == 0 and line.startswith("#version")):
            continue
        pair = line.split()
        if len(pair) != 2:
            raise CheckpointError(f"{merges_path} line {number + 1} is not a pair of tokens: {line[:40]!r}")
        merges.append((pair[0], pair[1]))
    bpe = models.BPE(vocab=vocab, merges=merges, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                     fuse_unk=False, byte_fallback=False)
    tokenizer = _qwen2(bpe, bool(config.get("add_prefix_space", False)))
    declared = sorted(((int(i), entry) for i, entry in (config.get("added_tokens_decoder") or {}).items()),
                      key=lambda item: item[0])
    for token_id, entry in declared:
        token = AddedToken(entry["content"], single_word=entry.get("single_word", False),
                           lstrip=entry.get("lstrip", False), rstrip=entry.get("rstrip", False),
                           normalized=entry.get("normalized", not entry.get("special", False)),
                           special=entry.get("special", False))
        if token.special:
            tokenizer.add_special_tokens([token])
        else:
            tokenizer.add_tokens([token])
        # transformers adds them the same way, one after another: ids only match the declared ones when the
        # declared ids are contiguous after the vocabulary, as in every released checkpoint.
        if tokenizer.token_to_id(entry["content"]) != token_id:
            raise CheckpointError(f"{directory / 'tokenizer_config.json'} declares {entry['content']!r} as id "
                                  f"{token_id}, but it lands at id {tokenizer.token_to_id(entry['content'])}")
    return tokenizer.to_str()


def train_tokenizer(vocab_size: int, special_tokens: list[str]) -> str:
    """Train on a built-in corpus; returns tokenizer.json text with the special tokens at the last ids."""
    tokenizer = _qwen2(models.BPE())
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # The chat frame is repeated so that its words win the first merges even in a tiny vocabulary.
    chat = ["assistant\n", "user\n", "assistant\n" + "\n"] * 200
    tokenizer.train_from_iterator(chat + _CORPUS.splitlines(keepends=True) * 4, trainer)
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special_tokens])
    for word in ("assistant", "\n"):
        if len(tokenizer.encode(word).ids) != 1:
            raise RuntimeError(f"the trained tokenizer splits {word!r}; the prompt layout needs one token")
    return tokenizer.to_str()


def special_token_ids(tokenizer_json: str, tokens: list[str]) -> dict[str, int]:
    vocab = {entry["content"]: entry["id"] for entry in json.loads(tokenizer_json)["added_tokens"]}
    missing = [token for token in tokens if token not in vocab]
    if missing:
        raise ValueError(f"the tokenizer has no special tokens {missing}")
    return {token: vocab[token] for token in tokens}
