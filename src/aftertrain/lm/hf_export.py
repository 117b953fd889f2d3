"""The reference GPT as a Hugging Face ``GPT2LMHeadModel`` with a character
tokenizer, so the claims can run on it through ``transformers``.

The two architectures compute the same function: pre-LayerNorm blocks
(eps 1e-5), exact GELU (``activation_function="gelu"``, not GPT-2's
``gelu_new``), attention scaled by ``1/sqrt(head size)``, learned absolute
positions. The names map one to one (``tok`` -> ``wte``, ``pos`` -> ``wpe``,
``blocks.N.{ln1, qkv, proj, ln2, f1, f2}`` -> ``h.N.{ln_1, attn.c_attn,
attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}``, ``ln`` -> ``ln_f``, ``head`` ->
``lm_head``); GPT-2's ``Conv1D`` stores ``x @ W + b``, so every linear
weight is transposed.

GPT-2's ``lm_head`` has no bias. The head's bias ``c`` is folded into the
final LayerNorm's bias: with ``h`` the normalised, scaled hidden state and
``b`` the LayerNorm's bias, ``W (h + b + d) = W (h + b) + c`` whenever
``W d = c``. ``W`` is ``vocab x n_embd`` = 100 x 128 with full row rank, so
an exact solution exists; :func:`fold_head_bias` takes the minimum-norm one,
``d = pinv(W) c``, in float64.

What the fold changes (:class:`HeadBiasFold`):

* The float model: only rounding. ``b + d`` is stored in float32, so the
  folded bias is ``b + d + e`` with ``|e_j| <= u |b_j + d_j|``
  (``u = 2**-24``) and the logit of token ``r`` moves by
  ``W_r . e``, ``|W_r . e| <= ||W_r||_2 ||e||_2``
  (:attr:`HeadBiasFold.rounding_bound`), besides float32's reordering of
  the head's sums.
* A copy whose head weight is changed to ``W'`` (quantized, pruned): the
  original computes ``W' (h + b) + c``, the folded model
  ``W' (h + b + d) = W' (h + b) + c + (W' - W) d``, so each logit moves by
  ``((W' - W) d)_r`` and, by Cauchy-Schwarz, row by row
  ``|((W' - W) d)_r| <= ||(W' - W)_r||_2 ||d||_2``
  (:meth:`HeadBiasFold.shift` gives the exact shift, :meth:`HeadBiasFold.bound`
  the bound ``max_r ||(W' - W)_r||_2 * ||d||_2``). For a round-to-nearest
  quantizer with scale ``s`` every element moves by at most ``s / 2``, so
  ``||(W' - W)_r||_2 <= sqrt(n_embd) s / 2`` and the shift is at most
  ``sqrt(128) s / 2 * ||d||_2``. The shift is the same for every position,
  so a claim about the folded model's logits states it next to its own
  tolerance.

The tokenizer (:func:`char_tokenizer`) is a ``tokenizers`` word-level model
over single characters whose id ``i`` is ``string.printable[i]``, exactly
:func:`aftertrain.lm.text.encode`; it has no special tokens, and decoding
concatenates the characters.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from aftertrain.core.validation import check_type
from aftertrain.lm import text as _text
from aftertrain.lm.model import GPT

#: float32's unit roundoff (half its machine epsilon).
FLOAT32_UNIT_ROUNDOFF = 2.0**-24


@dataclass(frozen=True)
class HeadBiasFold:
    """The head's bias ``c`` folded into the final LayerNorm's bias as ``d``
    (``W d = c``, minimum norm; float64) and what that changes.

    Attributes:
        weight: the head weight ``W`` the fold was solved for, float64.
        d: the shift added to the LayerNorm's bias, shape (n_embd,), float64.
        residual: ``max_r |(W d - c)_r|`` in float64 (about 1e-15 of ``c``).
        rounding_bound: ``max_r ||W_r||_2 * ||e||_2`` with ``|e_j| = u |b_j + d_j|``:
            the most the float32 storage of ``b + d`` moves a logit.
    """

    weight: torch.Tensor
    d: torch.Tensor
    residual: float
    rounding_bound: float

    @property
    def d_norm(self) -> float:
        """``||d||_2``."""
        return float(self.d.norm())

    def shift(self, changed_weight: torch.Tensor) -> torch.Tensor:
        """``(W' - W) d``: how much each logit (shape (vocab,)) of the folded
        model moves from the unfolded one when the head weight is ``W'``."""
        changed = self._check(changed_weight)
        return (changed - self.weight) @ self.d

    def bound(self, changed_weight: torch.Tensor) -> float:
        """``max_r ||(W' - W)_r||_2 * ||d||_2`` >= ``max |shift(W')|`` (Cauchy-Schwarz)."""
        changed = self._check(changed_weight)
        return float((changed - self.weight).norm(dim=1).max()) * self.d_norm

    def _check(self, changed_weight: torch.Tensor) -> torch.Tensor:
        if not isinstance(changed_weight, torch.Tensor) or changed_weight.shape != self.weight.shape:
            got = getattr(changed_weight, "shape", None) or type(changed_weight).__name__
            raise ValueError(
                f"changed_weight must be a tensor of the head's shape {tuple(self.weight.shape)}, got {got}"
            )
        return changed_weight.detach().to(torch.float64)


def fold_head_bias(weight: torch.Tensor, bias: torch.Tensor, ln_bias: torch.Tensor) -> HeadBiasFold:
    """The minimum-norm ``d`` with ``weight @ d = bias`` (float64, via the
    pseudo-inverse), for a ``weight`` of shape (vocab, n_embd) with
    vocab <= n_embd and full row rank (else ValueError: no exact ``d``),
    and the rounding bound of storing ``ln_bias + d`` in float32 (see the
    module docstring)."""
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.shape[0] > weight.shape[1]:
        got = getattr(weight, "shape", None) or type(weight).__name__
        raise ValueError(f"weight must be a 2-D tensor (vocab, n_embd) with vocab <= n_embd, got {got}")
    for name, vec in (("bias", bias), ("ln_bias", ln_bias)):
        want = weight.shape[0] if name == "bias" else weight.shape[1]
        if not isinstance(vec, torch.Tensor) or vec.shape != (want,):
            got = getattr(vec, "shape", None) or type(vec).__name__
            raise ValueError(f"{name} must be a tensor of shape ({want},), got {got}")
    W = weight.detach().to(torch.float64)
    c = bias.detach().to(torch.float64)
    d = torch.linalg.pinv(W) @ c
    residual = float((W @ d - c).abs().max())
    if residual > 1e-9 * max(1.0, float(c.abs().max())):
        raise ValueError(
            f"weight has rank below its {W.shape[0]} rows: no d solves weight @ d = bias "
            f"(least-squares residual {residual:.3g}); the bias cannot be folded"
        )
    e = FLOAT32_UNIT_ROUNDOFF * (ln_bias.detach().to(torch.float64) + d).abs()
    rounding = float(W.norm(dim=1).max() * e.norm())
    return HeadBiasFold(weight=W, d=d, residual=residual, rounding_bound=rounding)


def gpt2_config(net: GPT):
    """The ``GPT2Config`` of ``net``'s sizes: exact GELU, LayerNorm eps 1e-5,
    no dropout, untied head, attention scaled by ``1/sqrt(head size)``."""
    from transformers import GPT2Config

    c = net.config
    return GPT2Config(
        vocab_size=c.vocab_size,
        n_positions=c.block_size,
        n_embd=c.n_embd,
        n_layer=c.n_layer,
        n_head=c.n_head,
        n_inner=4 * c.n_embd,
        activation_function="gelu",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        scale_attn_weights=True,
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def gpt2_state_dict(net: GPT) -> tuple[dict[str, torch.Tensor], HeadBiasFold]:
    """``net``'s weights under GPT-2's names (float32, linear weights
    transposed for ``Conv1D``), the head's bias folded into ``ln_f.bias``."""
    sd = {k: v.detach().to(torch.float32) for k, v in net.state_dict().items()}
    out = {"transformer.wte.weight": sd["tok.weight"], "transformer.wpe.weight": sd["pos.weight"]}
    names = {
        "ln1": "ln_1",
        "qkv": "attn.c_attn",
        "proj": "attn.c_proj",
        "ln2": "ln_2",
        "f1": "mlp.c_fc",
        "f2": "mlp.c_proj",
    }
    for i in range(net.config.n_layer):
        for ours, theirs in names.items():
            weight = sd[f"blocks.{i}.{ours}.weight"]
            out[f"transformer.h.{i}.{theirs}.weight"] = weight if ours.startswith("ln") else weight.T
            out[f"transformer.h.{i}.{theirs}.bias"] = sd[f"blocks.{i}.{ours}.bias"]
    fold = fold_head_bias(sd["head.weight"], sd["head.bias"], sd["ln.bias"])
    out["transformer.ln_f.weight"] = sd["ln.weight"]
    out["transformer.ln_f.bias"] = (sd["ln.bias"].to(torch.float64) + fold.d).to(torch.float32)
    out["lm_head.weight"] = sd["head.weight"]
    return {k: v.contiguous() for k, v in out.items()}, fold


def to_gpt2(net: GPT):
    """``net`` as a float32 ``GPT2LMHeadModel`` in eval mode, computing the
    same logits up to float32 rounding (the head's bias folded as the module
    docstring says). The fold is the model's ``aftertrain_head_fold``."""
    from transformers import GPT2LMHeadModel

    check_type("net", net, GPT, "an aftertrain.lm.model.GPT")
    state, fold = gpt2_state_dict(net)
    model = GPT2LMHeadModel(gpt2_config(net))
    model.load_state_dict(state, strict=True)
    model.aftertrain_head_fold = fold
    return model.float().eval()


def char_tokenizer():
    """A ``PreTrainedTokenizerFast`` whose id ``i`` is ``string.printable[i]``:
    ``encode(s)`` equals :func:`aftertrain.lm.text.encode` for every printable
    ``s`` (no special tokens are added), ``decode(encode(s)) == s``, and a
    character outside the vocabulary is an error."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    # The unknown token is outside the vocabulary, so an unknown character
    # raises ("Missing [UNK] token from the vocabulary") instead of mapping to an id.
    vocab = {ch: i for i, ch in enumerate(_text.VOCAB)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        clean_up_tokenization_spaces=False,
        model_max_length=128,
    )


def write_folder(folder: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` on a new temporary folder beside ``folder``, then
    rename it to ``folder`` (an existing one is moved aside first and removed
    after), so a reader sees the old folder or the new one, never half of
    one. Returns ``folder`` as a Path; the parent folder must exist."""
    check_type("folder", folder, (str, os.PathLike), "a folder path (str or os.PathLike)")
    folder = Path(folder)
    if not folder.parent.is_dir():
        raise ValueError(f"folder {str(folder)!r}: parent {str(folder.parent)!r} does not exist")
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"folder {str(folder)!r} is a file, expected a folder path")
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    old = tmp.with_name(tmp.name + "-old")
    try:
        write(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0o700
        for path in tmp.iterdir():
            if path.is_file():
                os.chmod(path, 0o644)  # safetensors writes its file 0o600
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return folder


def save_gpt2(net: GPT, folder: str | os.PathLike) -> HeadBiasFold:
    """Write ``net`` as a ``transformers`` folder (``config.json``,
    ``model.safetensors``, the tokenizer's files) that
    ``AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)``
    and ``AutoTokenizer.from_pretrained(folder, local_files_only=True)`` load;
    atomically (:func:`write_folder`). Returns the head-bias fold."""
    check_type("net", net, GPT, "an aftertrain.lm.model.GPT")
    if net.config.vocab_size != _text.VOCAB_SIZE:
        raise ValueError(
            f"net has vocab_size {net.config.vocab_size}; the character tokenizer has {_text.VOCAB_SIZE} ids"
        )
    model = to_gpt2(net)
    tokenizer = char_tokenizer()
    tokenizer.model_max_length = net.config.block_size

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)

    write_folder(folder, write)
    return model.aftertrain_head_fold
