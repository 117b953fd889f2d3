"""The vocabulary (``string.printable``) and the bundled corpus.

The corpus is the plain-text language reference that CPython ships in
``pydoc_data/topics.py`` (Python Software Foundation License), taken as
:func:`corpus_from_pydoc_topics` describes: every topic's text in the order of
its sorted key, joined by one newline, with every character outside the
vocabulary dropped, cut to the first 70,000 characters. The first 60,000 are
the training split (the article trained on 60,000 characters) and the next
10,000 the validation split.
"""

from __future__ import annotations

import functools
import hashlib
import string
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import torch

VOCAB: str = string.printable
VOCAB_SIZE: int = len(VOCAB)
assert VOCAB_SIZE == 100, "string.printable must hold exactly 100 characters"
_INDEX = {ch: i for i, ch in enumerate(VOCAB)}

TRAIN_CHARS = 60_000
VAL_CHARS = 10_000
CORPUS_FILE = "corpus.txt"
CORPUS_SHA256 = "15aafab201e65dfd6e07684cc393e64505985a08bf1a4bb8821e37f69f16aa10"


def encode(text: str, name: str = "text") -> torch.Tensor:
    """Map each character to its index in ``string.printable`` (int64, 1-D).
    ``name`` is the argument named in the error (a caller's ``prompt``)."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a str, got {type(text).__name__}")
    bad = [(i, ch) for i, ch in enumerate(text) if ch not in _INDEX]
    if bad:
        shown = ", ".join(f"{ch!r} at position {i}" for i, ch in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise ValueError(
            f"{name} has {len(bad)} character(s) outside the vocabulary (string.printable): {shown}{more}"
        )
    return torch.tensor([_INDEX[ch] for ch in text], dtype=torch.long)


def decode(tokens: torch.Tensor | Sequence[int]) -> str:
    """Inverse of :func:`encode`: indices in [0, 100) back to characters."""
    if isinstance(tokens, torch.Tensor):
        if tokens.dim() > 1:
            raise ValueError(f"tokens must be 1-D, got shape {tuple(tokens.shape)}")
        if tokens.dtype == torch.bool:
            raise ValueError("tokens must be integer indices in [0, 100), got a bool tensor")
        tokens = tokens.tolist()
    if (
        isinstance(tokens, (str, bytes))
        or not hasattr(tokens, "__iter__")
        or type(tokens).__module__ == "numpy"
    ):
        raise ValueError(
            f"tokens must be a 1-D tensor or a sequence of ints in [0, {VOCAB_SIZE}), "
            f"got {type(tokens).__name__}"
            + (" (convert with torch.from_numpy or .tolist())" if type(tokens).__module__ == "numpy" else "")
        )
    out = []
    for i, t in enumerate(tokens):
        if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < VOCAB_SIZE:
            raise ValueError(f"tokens[{i}] = {t!r} is not an index in [0, {VOCAB_SIZE})")
        out.append(VOCAB[t])
    return "".join(out)


def corpus_from_pydoc_topics() -> str:
    """Rebuild the corpus text from this interpreter's ``pydoc_data.topics``.

    The shipped file was made on CPython 3.11.7; other versions ship other
    topic texts, so the result only matches :data:`CORPUS_SHA256` there.
    """
    from pydoc_data.topics import topics

    joined = "\n".join(topics[key] for key in sorted(topics))
    return "".join(ch for ch in joined if ch in _INDEX)[: TRAIN_CHARS + VAL_CHARS]


@dataclass(frozen=True)
class Corpus:
    """The two splits, as text and as token tensors."""

    train_text: str
    val_text: str

    def __post_init__(self) -> None:
        for name in ("train_text", "val_text"):
            value = getattr(self, name)
            if not isinstance(value, str) or len(value) < 2:
                raise ValueError(
                    f"{name} must be a str of at least 2 characters, got {type(value).__name__} {value!r:.40}"
                )

    @functools.cached_property
    def train(self) -> torch.Tensor:
        """The training split as token ids (int64, 1-D)."""
        return encode(self.train_text)

    @functools.cached_property
    def val(self) -> torch.Tensor:
        """The validation split as token ids (int64, 1-D)."""
        return encode(self.val_text)


class CorpusError(RuntimeError):
    """The bundled corpus file is missing or does not match its SHA-256."""


@functools.lru_cache(maxsize=1)
def load_corpus() -> Corpus:
    """The bundled corpus, its SHA-256 checked; train = first 60,000 chars."""
    path = resources.files("aftertrain") / "data" / CORPUS_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CorpusError(
            f"corpus file {path} is missing; reinstall aftertrain (pip install -e .) or restore it from git"
        ) from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CORPUS_SHA256:
        raise CorpusError(
            f"corpus file {path} has SHA-256 {digest}, expected {CORPUS_SHA256}; "
            "restore it with `git checkout -- src/aftertrain/data/corpus.txt`"
        )
    text = raw.decode("ascii")
    return Corpus(train_text=text[:TRAIN_CHARS], val_text=text[TRAIN_CHARS:])
