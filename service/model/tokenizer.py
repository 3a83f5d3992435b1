"""A small byte-level BPE tokenizer for random-weight models (the real checkpoints ship their own).

Shaped like Qwen's: the same pre-tokenizer split, byte-level fallback for any text, and the special tokens appended
after the learned vocabulary. The prompt layout needs "assistant" and "\\n" to be single tokens; `train_tokenizer`
checks that rather than trusting the corpus.
"""
from __future__ import annotations

import json

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

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


def train_tokenizer(vocab_size: int, special_tokens: list[str]) -> str:
    """Train on a built-in corpus; returns tokenizer.json text with the special tokens at the last ids."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
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
