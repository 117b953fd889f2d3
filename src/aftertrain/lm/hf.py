"""A transformers causal LM as the model under test: a folder on disk, its
own tokenizer and text.

:func:`load_folder` reads a folder that ``transformers`` loads offline
(``config.json``, the weights, the tokenizer's files) for any causal-LM
architecture (``AutoModelForCausalLM``) and returns a :class:`HFModel`: the
model behind :class:`aftertrain.lm.protocol.NextTokenModel`, so the decoding
loop, the losses, the quantized and pruned copies and the drafts treat it as
they treat our GPT.

- **The cache.** :class:`HFCache` holds transformers' own cache
  (``DynamicCache``) and rolls a rejected draft back with its ``crop``; an
  architecture whose cache cannot be cropped (sliding-window layers) keeps
  the tokens and re-reads them after a rollback, so a rollback costs a
  forward pass there and nothing is silently wrong.
- **The matrices.** Every weight matrix is (out, in), torch's convention,
  so per-channel means per output row on every architecture: a GPT-2-style
  ``Conv1D`` (weight stored (in, out)) is replaced at load by the
  ``nn.Linear`` with the transposed weight and the same bias (the same
  function; only the order of the float sums may differ). Tied matrices
  (a head tied to the token table) are one parameter, quantized or pruned
  once for both uses.
- **The dtype.** The model computes in the dtype it was saved in; the logits
  are widened to float32 for the rule, the losses and the drafts.
- **The window.** ``block_size`` is the model's positions
  (``max_position_embeddings`` / ``n_positions``), at most
  :data:`MAX_WINDOW`: the losses read the text in windows of that length
  and decoding slides its context in it.
- **The text** (:class:`ModelText`): the bundled corpus's two splits, each
  encoded with the model's tokenizer (no special tokens), or a user's text
  file split the same way (the first 6/7 of its characters train the
  tables, the last 1/7 is the validation text); losses are per token.
- **The identity** (:func:`folder_digest`): the SHA-256 of the config and
  weight files (names and bytes), so a run says which model it measured.

Bad input is a ValueError naming the folder and what is wrong: not a
folder, no ``config.json``, not a causal LM, no tokenizer, a tokenizer with
more ids than the model scores, a weight of more than two dimensions (a
mixture of experts), ``transformers`` not installed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn

from aftertrain.core.validation import check_int
from aftertrain.lm import text as _text
from aftertrain.lm.hf_text import TRAIN_SHARE, ModelText, read_text_file  # noqa: F401  (TRAIN_SHARE re-exported)
from aftertrain.lm.protocol import check_idx, check_truncate

#: The longest window the losses and decoding use (a long-context model is
#: read in windows of this many tokens).
MAX_WINDOW = 1024

#: The files whose bytes make a folder's identity: the config and the weights.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def _transformers():
    try:
        import transformers
    except ImportError:  # pragma: no cover - the test extra installs it on Python >= 3.11
        raise ValueError(
            "a transformers model folder needs the transformers package "
            "(pip install 'transformers>=5'; the test extra installs it on Python >= 3.11)"
        ) from None
    transformers.logging.set_verbosity_error()  # no advice on stderr while a run prints its progress
    transformers.utils.logging.disable_progress_bar()  # nor a bar per loaded file
    return transformers


def is_model_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a ``config.json`` (a transformers model's folder)."""
    return Path(path).is_dir() and (Path(path) / "config.json").is_file()


def folder_digest(folder: str | os.PathLike) -> str:
    """SHA-256 over the config and weight files of ``folder``: each file's
    name and bytes, in sorted order (tokenizer files are not part of it)."""
    folder = Path(folder)
    names = sorted(
        p.name
        for p in folder.iterdir()
        if p.is_file() and (p.name == "config.json" or p.suffix in WEIGHT_SUFFIXES)
    )
    if "config.json" not in names or len(names) < 2:
        raise ValueError(f"folder {str(folder)!r} has no config.json and weight files to identify it by")
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0")
        with open(folder / name, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class HFShape:
    """The two sizes the decoder reads (:class:`aftertrain.lm.protocol.ModelShape`)."""

    vocab_size: int
    block_size: int

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, least=1)
        check_int("block_size", self.block_size, least=2)


class HFCache:
    """transformers' cache of one sequence, with the rollback the protocol asks."""

    def __init__(self, model: HFModel) -> None:
        self._model = model
        self.kv = None  # created on the first forward (DynamicCache)
        self.tokens: list[int] = []
        self._valid = 0  # positions the kv cache holds that are still the text's

    @property
    def length(self) -> int:
        """Positions held."""
        return len(self.tokens)

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` positions; 0 <= n <= length, else ValueError."""
        check_truncate(n, self.length)
        del self.tokens[n:]
        if self.kv is not None and self._valid > n:
            if self.kv.is_croppable:
                self.kv.crop(n - self._valid)  # transformers takes the count removed, negative
                self._valid = n
            else:  # re-read the kept tokens on the next forward
                self.kv, self._valid = None, 0


class HFModel(nn.Module):
    """A transformers causal LM behind :class:`aftertrain.lm.protocol.NextTokenModel`.

    ``hf`` is the transformers model (its parameters are this module's, under
    ``hf.``), ``tokenizer`` its tokenizer, ``text`` the :class:`ModelText`
    the claims read, ``folder`` where it was loaded from."""

    def __init__(self, hf: nn.Module, tokenizer, text: ModelText, folder: Path | None = None) -> None:
        super().__init__()
        self.hf = hf
        self.tokenizer = tokenizer
        self.text = text
        self.folder = folder
        positions = _positions(hf.config)
        self.config = HFShape(int(hf.config.vocab_size), min(positions, MAX_WINDOW))
        self._cache_arg = _cache_argument(hf)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the model computes in (its first floating parameter's)."""
        return next(p.dtype for p in self.parameters() if p.is_floating_point())

    def new_cache(self) -> HFCache:
        """An empty cache for a fresh sequence."""
        return HFCache(self)

    def forward(self, idx: torch.Tensor, cache: HFCache | None = None) -> torch.Tensor:
        """Logits (B, T, vocab_size) in float32 for token ids ``idx`` (B, T);
        with a cache, ``idx`` continues its positions and extends it."""
        check_idx(idx, self.config.vocab_size)
        T = idx.shape[1]
        if cache is None:
            if T > self.config.block_size:
                raise ValueError(f"context of {T} positions exceeds block_size {self.config.block_size}")
            return self.hf(input_ids=idx, use_cache=False).logits.float()
        if not isinstance(cache, HFCache) or cache._model is not self:
            raise ValueError("cache must come from this model's new_cache()")
        if idx.shape[0] != 1:
            raise ValueError(f"idx must have one row (1, T) when a cache is given, got {tuple(idx.shape)}")
        past = cache.length
        if past + T > self.config.block_size:
            raise ValueError(f"context of {past + T} positions exceeds block_size {self.config.block_size}")
        feed = idx
        if cache._valid < past:  # a cache that could not be cropped: re-read the kept tokens
            kept = torch.tensor([cache.tokens[cache._valid :]], dtype=idx.dtype)
            feed = torch.cat([kept, idx], dim=1)
        if cache.kv is None:
            cache.kv = _transformers().DynamicCache(config=self.hf.config)
        logits = self.hf(input_ids=feed, use_cache=True, **{self._cache_arg: cache.kv}).logits
        cache.tokens.extend(idx[0].tolist())
        cache._valid = cache.length
        return logits[:, -T:].float()


def _cache_argument(hf: nn.Module) -> str:
    """The name the model's forward takes its cache by: ``cache``, or
    ``past_key_values`` where the forward has no ``cache``."""
    import inspect

    return "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"


def _positions(config) -> int:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 1:
            return value
    return MAX_WINDOW


def _load(folder: str, text_file: str | None) -> HFModel:
    transformers = _transformers()
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    except Exception as err:
        raise ValueError(f"folder {folder!r}: config.json is not a transformers config ({err})") from None
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ValueError(
            f"folder {folder!r} holds a {config.model_type!r} model, which is not a causal LM "
            "(AutoModelForCausalLM does not load it)"
        )
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as err:
        raise ValueError(f"folder {folder!r} has no tokenizer transformers can load ({err})") from None
    vocab = int(config.vocab_size)
    if len(tokenizer) > vocab:
        raise ValueError(
            f"folder {folder!r}: the tokenizer has {len(tokenizer)} tokens but the model scores "
            f"{vocab}: the tokenizer does not match the model"
        )
    _matrices_only(transformers, config, folder)
    if text_file is None:
        corpus = _text.load_corpus()
        train, val, source = corpus.train_text, corpus.val_text, "the bundled corpus"
    else:
        (train, val), source = read_text_file(text_file), f"text file {text_file!r}"
    text = ModelText.encode(tokenizer, vocab, train, val, source)
    try:
        hf = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype="auto")
    except Exception as err:
        raise ValueError(f"folder {folder!r}: transformers could not load its weights ({err})") from None
    _linear_layers(hf)
    hf.eval()
    for p in hf.parameters():
        p.requires_grad_(False)
    return HFModel(hf, tokenizer, text, Path(folder)).eval()


def _matrices_only(transformers, config, folder: str) -> None:
    """Refuse, before any weight loads, a model with a weight of more than
    two dimensions (built on the meta device from its config): a mixture of
    experts stacks its experts' matrices in one (experts, out, in) tensor,
    which the quantizers and pruners here (a matrix, per output row) do not
    reach, and its router would be taken for the feed-forward input."""
    try:
        with torch.device("meta"):
            skeleton = transformers.AutoModelForCausalLM.from_config(config)
    except Exception as err:
        raise ValueError(f"folder {folder!r}: transformers could not build the model ({err})") from None
    for name, param in skeleton.named_parameters():
        if param.dim() > 2:
            raise ValueError(
                f"folder {folder!r}: weight {name!r} has shape {tuple(param.shape)}: a weight of more "
                "than two dimensions (a mixture of experts' stacked experts) is not a matrix the "
                "claims' quantizers and pruners treat per output row; aftertrain runs the claims on "
                "models whose weights are matrices"
            )


def _linear_layers(hf: nn.Module) -> None:
    """Replace every transformers ``Conv1D`` of ``hf`` by the equivalent ``nn.Linear`` (module docstring)."""
    from transformers.pytorch_utils import Conv1D

    for name, module in list(hf.named_modules()):
        if isinstance(module, Conv1D):
            nx, nf = module.weight.shape
            linear = nn.Linear(nx, nf, bias=module.bias is not None, dtype=module.weight.dtype)
            with torch.no_grad():
                linear.weight.copy_(module.weight.t())
                if module.bias is not None:
                    linear.bias.copy_(module.bias)
            parent, _, child = name.rpartition(".")
            setattr(hf.get_submodule(parent) if parent else hf, child, linear)


def load_folder(folder: str | os.PathLike, text_file: str | os.PathLike | None = None) -> HFModel:
    """The model in ``folder`` (eval mode, its own dtype) with its text: the
    bundled corpus encoded with its tokenizer, or ``text_file`` split as
    :func:`read_text_file` does. ValueError for anything transformers cannot
    load offline as a causal LM with a tokenizer that fits it."""
    if not isinstance(folder, (str, os.PathLike)) or not is_model_folder(folder):
        raise ValueError(
            f"folder {folder!r} is not a transformers model folder (a folder with config.json, "
            "the weights and the tokenizer's files)"
        )
    return _load(str(Path(folder).resolve()), None if text_file is None else str(text_file))


def decode(model: HFModel, ids) -> str:
    """``ids`` as text, through the model's tokenizer."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    return model.tokenizer.decode(ids)


def check_same_vocabulary(model: HFModel, draft: HFModel, name: str = "draft") -> None:
    """ValueError naming ``name`` unless ``draft`` scores the same vocabulary
    as ``model`` with the same tokenizer (every token string at the same id):
    a draft's proposals are ids of the target's vocabulary."""
    for which, m in (("model", model), (name, draft)):
        if not isinstance(m, HFModel):
            raise ValueError(f"{which} must be an aftertrain.lm.hf.HFModel, got {type(m).__name__}")
    if draft.config.vocab_size != model.config.vocab_size:
        raise ValueError(
            f"{name} scores {draft.config.vocab_size} tokens, the model under test "
            f"{model.config.vocab_size}: a draft needs the model's vocabulary"
        )
    ours, theirs = model.tokenizer.get_vocab(), draft.tokenizer.get_vocab()
    if ours != theirs:
        differ = sorted(set(ours.items()) ^ set(theirs.items()))[:3]
        raise ValueError(
            f"{name}'s tokenizer differs from the model's ({len(set(ours.items()) ^ set(theirs.items()))} "
            f"token/id pairs differ, e.g. {differ}): a draft needs the model's tokenizer"
        )


def model_text(model: nn.Module):
    """The text ``model`` is measured on: an :class:`HFModel`'s
    :class:`ModelText` (or a draft's made for it, which carries its
    target's), else the bundled corpus (:class:`aftertrain.lm.text.Corpus`,
    our GPT's characters). Both have ``train_text``, ``val_text``,
    ``train`` and ``val``."""
    text = getattr(model, "text", None)
    return text if isinstance(text, ModelText) else _text.load_corpus()


def encode_text(model: nn.Module, text: str, name: str = "text") -> torch.Tensor:
    """``text`` as ``model``'s token ids (int64, 1-D): its tokenizer's (no
    special tokens) for an :class:`HFModel`, our characters' otherwise."""
    if not isinstance(model, HFModel):
        return _text.encode(text, name)
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a str, got {type(text).__name__}")
    return torch.tensor(model.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=torch.long)


def prompt_of(model: nn.Module, text: str) -> str | torch.Tensor:
    """What the decoding functions take as the prompt ``text`` for ``model``:
    the string itself for our GPT (whose vocabulary is the characters), its
    tokenizer's ids for an :class:`HFModel`."""
    return encode_text(model, text, "prompt") if isinstance(model, HFModel) else text


def decode_ids(model: nn.Module, ids) -> str:
    """Token ids of ``model`` as text: its tokenizer's for an :class:`HFModel`, our characters' otherwise."""
    if isinstance(model, HFModel):
        return decode(model, ids)
    return _text.decode(ids)
