"""Text as the tokenizer can take it, whatever the client sent."""
from __future__ import annotations

import re
import unicodedata

_WHITESPACE_CONTROLS = re.compile(r"[\t\n\v\f\r\x1c-\x1f\x85]+")
_OTHER_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")


def clean_text(text: str) -> str:
    """`text` without lone surrogates and control characters, in NFC, stripped.

    Why: JSON lets a client send an escaped lone surrogate ("\\ud800"), and json.loads gives it back as one; a str
    holding it cannot be encoded, and the tokenizer rejects it (TypeError) after the reply has begun. A surrogate
    pair split across two stream chunks is joined again (the round trip through UTF-16 pairs it); one without its
    other half has no character to stand for and is dropped. C0 and C1 control characters are not text: the
    whitespace among them (tab, newline, ...) becomes a space, the rest is dropped. NFC gives one spelling of each
    accented letter ("e" + U+0301 is "é"), the form the tokenizer's vocabulary and the normaliser's tables are in.
    """
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
    text = _OTHER_CONTROLS.sub("", _WHITESPACE_CONTROLS.sub(" ", text))
    return unicodedata.normalize("NFC", text).strip()
