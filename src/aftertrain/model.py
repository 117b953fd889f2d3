"""The reference character-level GPT, its key/value cache, and sampling.

Shape and parameter names copy the article's model exactly (637,156
parameters, 631,808 of them in 2-D weights): ``tok``, ``pos``,
``blocks.N.{ln1, qkv, proj, ln2, f1, f2}``, ``ln``, ``head``.

Context policy. Positions are absolute (a learned ``pos`` table of 128 rows),
so a window cannot slide one character at a time and keep its cache. The
model predicts the character after ``text[:n]`` from the window
``text[context_start(n):n]``, where the start jumps by 64 once the text
passes 128 characters (the window then holds 65 to 128 characters). The
next-character distribution is therefore a function of the text so far
alone, whatever way it was produced, and a cache only has to be rebuilt
once every 64 characters. :class:`Decoder` implements the policy for plain
sampling and for speculative decoding alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from aftertrain import text as _text

SLIDE = 64  # characters the window jumps by once the text passes the context


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = _text.VOCAB_SIZE
    block_size: int = 128  # context length in characters
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class KVCache:
    """Keys and values of every layer for the first ``length`` positions.

    ``truncate(n)`` cuts the cache back to ``n`` positions, so speculative
    decoding can roll back a rejected draft without recomputing.
    """

    def __init__(self, n_layer: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * n_layer
        self.values: list[torch.Tensor | None] = [None] * n_layer
        self.length = 0

    def truncate(self, n: int) -> None:
        if not 0 <= n <= self.length:
            raise ValueError(f"n must be in [0, {self.length}], got {n}")
        for i, (k, v) in enumerate(zip(self.keys, self.values)):
            if k is not None:
                self.keys[i], self.values[i] = k[:, :, :n], v[:, :, :n]
        self.length = n

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Store this layer's new keys/values; return the full ones."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class Block(nn.Module):
    """Pre-LayerNorm transformer block; attention is inline so the parameter
    names stay the article's (``qkv``, ``proj``, ``f1``, ``f2``)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        C = config.n_embd
        self.n_head = config.n_head
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.f1 = nn.Linear(C, 4 * C)
        self.f2 = nn.Linear(4 * C, C)
        self.drop = nn.Dropout(config.dropout)

    def attend(self, x: torch.Tensor, layer: int, cache: KVCache | None) -> torch.Tensor:
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        past = 0
        if cache is not None:
            past = cache.length
            k, v = cache.append(layer, k, v)  # (B, nh, past + T, hs)
        # New query t sees keys 0 .. past + t (causal over the whole cache).
        mask = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(past)
        p = self.drop.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.drop(self.proj(y))

    def forward(self, x: torch.Tensor, layer: int, cache: KVCache | None) -> torch.Tensor:
        x = x + self.attend(self.ln1(x), layer, cache)
        x = x + self.drop(self.f2(F.gelu(self.f1(self.ln2(x)))))
        return x


class GPT(nn.Module):
    def __init__(self, config: GPTConfig = GPTConfig()) -> None:
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # GPT-2's initialisation: N(0, 0.02) weights, zero biases.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Logits (B, T, vocab) for token indices ``idx`` (B, T).

        With a cache, ``idx`` continues the cached positions and the cache is
        extended; ``cache.length + T`` must not exceed ``block_size``.
        """
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        if past + T > self.config.block_size:
            raise ValueError(
                f"context of {past + T} positions exceeds block_size "
                f"{self.config.block_size}"
            )
        positions = torch.arange(past, past + T, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(positions))  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            x = block(x, layer, cache)
        if cache is not None:
            cache.length = past + T
        return self.head(self.ln(x))

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layer)


def context_start(n: int, block_size: int = 128, slide: int = SLIDE) -> int:
    """First index of the window that predicts the character after ``text[:n]``.

    0 while ``n <= block_size``; after that it jumps in steps of ``slide`` so
    the window keeps between ``block_size - slide + 1`` and ``block_size``
    characters. Example (128, 64): n = 128 -> 0, 129 -> 64, 192 -> 64,
    193 -> 128.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 0 < slide <= block_size:
        raise ValueError(f"slide must be in [1, block_size={block_size}], got {slide}")
    if n <= block_size:
        return 0
    return slide * math.ceil((n - block_size) / slide)


class Decoder:
    """Incremental next-character logits of ``model`` under the context policy.

    ``feed(tokens)`` appends tokens to the text and returns, for each one, the
    logits of the character that follows it; ``truncate(n)`` rolls the text
    (and the cache) back to its first ``n`` characters. Works for any module
    with ``config.block_size``, ``new_cache()`` and ``forward(idx, cache)``.
    """

    def __init__(self, model: nn.Module, slide: int = SLIDE) -> None:
        self.model = model
        self.block_size = model.config.block_size
        self.slide = slide
        self.tokens: list[int] = []
        self.cache = model.new_cache()
        self.start = 0  # text index of the cache's first position

    def __len__(self) -> int:
        return len(self.tokens)

    @torch.no_grad()
    def feed(self, tokens: torch.Tensor | list[int]) -> torch.Tensor:
        """Logits (len(tokens), vocab): row i predicts the token after tokens[i]."""
        new = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        if not new:
            raise ValueError("tokens must hold at least one token")
        out = []
        i = 0
        while i < len(new):
            n0 = len(self.tokens)
            start = context_start(n0 + 1, self.block_size, self.slide)
            # The run of new tokens whose predictions share this window start.
            j = i + 1
            while j < len(new) and context_start(n0 + 1 + j - i, self.block_size, self.slide) == start:
                j += 1
            self.tokens.extend(new[i:j])
            if start != self.start or self.cache.length != n0 - start:
                self.cache = self.model.new_cache()
                self.start = start
                window = self.tokens[start:]
            else:
                window = new[i:j]
            logits = self.model(torch.tensor([window]), cache=self.cache)[0]
            out.append(logits[-(j - i):])
            i = j
        return torch.cat(out)

    def truncate(self, n: int) -> None:
        """Keep only the first ``n`` tokens of the text."""
        if not 0 <= n <= len(self.tokens):
            raise ValueError(f"n must be in [0, {len(self.tokens)}], got {n}")
        del self.tokens[n:]
        self.cache.truncate(max(0, min(self.cache.length, n - self.start)))


def probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / temperature) along the last axis; temperature > 0."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 here, got {temperature}")
    return torch.softmax(logits.double() / temperature, dim=-1)


def sample_token(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """One token from 1-D logits: argmax at temperature 0, else a draw."""
    if temperature == 0:
        return int(torch.argmax(logits))
    return int(torch.multinomial(probabilities(logits, temperature), 1, generator=generator))


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt: torch.Tensor,
    n_new: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Prompt plus ``n_new`` sampled tokens (1-D), one cached pass per token.

    Same generator state, same tokens. Temperature 0 is greedy decoding.
    """
    _check_generation_args(prompt, n_new, temperature, model.config.vocab_size)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    decoder = Decoder(model)
    logits = decoder.feed(prompt)[-1]
    for _ in range(n_new):
        token = sample_token(logits, temperature, generator)
        logits = decoder.feed([token])[-1]
    return torch.tensor(decoder.tokens, dtype=torch.long)


def _check_generation_args(prompt: torch.Tensor, n_new: int, temperature: float,
                           vocab_size: int) -> None:
    if not isinstance(prompt, torch.Tensor) or prompt.dim() != 1 or prompt.numel() < 1:
        raise ValueError("prompt must be a non-empty 1-D tensor of token indices")
    if prompt.min() < 0 or prompt.max() >= vocab_size:
        raise ValueError(f"prompt tokens must lie in [0, {vocab_size}) (the model's vocabulary)")
    if isinstance(n_new, bool) or not isinstance(n_new, int) or n_new < 0:
        raise ValueError(f"n_new must be an int >= 0, got {n_new!r}")
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature)) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")


def sample_text(
    model: nn.Module, prompt: str, length: int, temperature: float = 1.0, seed: int = 0
) -> str:
    """``length`` characters sampled after ``prompt`` (prompt not included)."""
    tokens = generate(model, _text.encode(prompt), length, temperature,
                      torch.Generator().manual_seed(seed))
    return _text.decode(tokens[len(prompt):])


# --- evaluation -----------------------------------------------------------


@torch.no_grad()
def val_loss(model: nn.Module, tokens: torch.Tensor | None = None) -> float:
    """Mean cross-entropy (nats) over every next-character target of the split.

    The split (default: the validation split) is cut into consecutive,
    non-overlapping windows of the model's context; each window predicts its
    own next characters, so a character's context is the window so far. The
    computation is fixed in order and shape, so the value is the same bit for
    bit on every call.
    """
    if tokens is None:
        tokens = _text.load_corpus().val
    if tokens.dim() != 1 or tokens.numel() < 2:
        raise ValueError("tokens must be a 1-D tensor of at least 2 tokens")
    was_training = model.training
    model.eval()
    try:
        T = model.config.block_size
        n_targets = tokens.numel() - 1
        full = n_targets // T
        total = torch.zeros((), dtype=torch.float64)
        if full:
            x = tokens[: full * T].view(full, T)
            y = tokens[1 : full * T + 1].view(full, T)
            total += _nll_sum(model(x), y)
        rest = n_targets - full * T
        if rest:
            x = tokens[full * T : full * T + rest].view(1, rest)
            y = tokens[full * T + 1 :].view(1, rest)
            total += _nll_sum(model(x), y)
        return float(total / n_targets)
    finally:
        model.train(was_training)


def _nll_sum(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # Per-target losses in float32, summed in float64 so the mean carries no
    # accumulation error (a uniform predictor then scores ln(100) to 1e-7).
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                          reduction="none")
    if not torch.isfinite(nll).all():
        raise FloatingPointError("the model produced a non-finite loss on the validation split")
    return nll.double().sum()


# --- checkpoints ------------------------------------------------------------

REFERENCE_FILE = "reference.pt"
REBUILD_HINT = "aftertrain train --out src/aftertrain/data/reference.pt"


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupted or does not match its metadata."""


def sha256_file(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_checkpoint(model: GPT, path: str | os.PathLike, meta: dict) -> dict:
    """Write ``path`` (weights) and ``path.json`` (metadata with its SHA-256)
    atomically: each goes to a temporary file in the same folder first and is
    renamed into place, so a crash leaves the old pair intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, tmp_meta = _atomic_target(path), _atomic_target(_meta_path(path))
    try:
        torch.save({"config": asdict(model.config), "state_dict": model.state_dict()}, tmp)
        meta = {**meta, "sha256": sha256_file(tmp), "config": asdict(model.config)}
        tmp_meta.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        for done in (tmp, tmp_meta):
            os.chmod(done, 0o644)  # mkstemp makes files private; checkpoints are not
        os.replace(tmp, path)
        os.replace(tmp_meta, _meta_path(path))
    finally:
        for leftover in (tmp, tmp_meta):
            leftover.unlink(missing_ok=True)
    return meta


def _atomic_target(path: Path) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    return Path(name)


def _meta_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".json")


def load_checkpoint(path: str | os.PathLike, rebuild: str | None = None) -> GPT:
    """A model from ``path``, checked against the SHA-256 in ``path.json``;
    returned in eval mode with dropout 0."""
    path = Path(path)
    hint = f"; rebuild it with `{rebuild}`" if rebuild else ""
    meta_path = _meta_path(path)
    if not path.is_file() or not meta_path.is_file():
        missing = path if not path.is_file() else meta_path
        raise CheckpointError(f"checkpoint file {missing} is missing{hint}")
    meta = json.loads(meta_path.read_text())
    digest = sha256_file(path)
    if digest != meta.get("sha256"):
        raise CheckpointError(
            f"checkpoint {path} has SHA-256 {digest}, but {meta_path} records "
            f"{meta.get('sha256')}: the file is corrupted{hint}"
        )
    blob = torch.load(path, map_location="cpu", weights_only=True)
    config = GPTConfig(**{**blob["config"], "dropout": 0.0})
    model = GPT(config)
    model.load_state_dict(blob["state_dict"])
    return model.eval()


def reference_path() -> Path:
    return Path(str(resources.files("aftertrain") / "data" / REFERENCE_FILE))


def reference_meta() -> dict:
    """The committed metadata of the reference model (SHA-256, losses, command)."""
    return json.loads(_meta_path(reference_path()).read_text())


def load_reference() -> GPT:
    """The bundled trained reference model, in eval mode."""
    return load_checkpoint(reference_path(), rebuild=REBUILD_HINT)
