"""Build the Llama-style fixture: a small ``LlamaForCausalLM`` with its own
byte-level BPE tokenizer, trained on the bundled corpus's training split.

    PYTHONPATH=src python tools/build_llama_fixture.py [--out src/aftertrain/data/llama-bpe]
        [--steps 250] [--threads 2] [--seed 0]

It (a) trains a byte-level BPE tokenizer (:data:`VOCAB_SIZE` ids: the 256
byte symbols, the end-of-text token and the merges) on the training split,
(b) trains the model (:func:`llama_config`) with AdamW, a linear warm-up and
a cosine decay, on random windows of the training split's tokens, and (c)
writes a folder ``transformers`` loads offline (``config.json``,
``model.safetensors``, ``tokenizer.json``, ``tokenizer_config.json``) plus
``fixture.json``: the command, seed, steps, threads, the validation loss per
token of the model (:func:`val_token_nats`) and of an add-alpha BPE bigram, and
the SHA-256 of every other file. The folder is written beside ``--out`` and
renamed into place, so an interrupted run leaves the old one whole.

Every validation token is scored once: the split's ids, preceded by the
end-of-text token, are cut into windows of :data:`EVAL_WINDOW` ids that
overlap by one, so each window predicts its last ``EVAL_WINDOW - 1`` ids
from at most that many before it (context restarts at each window). The
bigram predicts each id from the one before it on the same ids. Both are
computed in float64, so the recorded figures are reproducible far below
the differences they show.

Deterministic given the seed and the thread count: the tokenizer trainer
is deterministic, the model's initialisation and the windows come from the
seed, and torch's CPU kernels repeat their summation order for one thread
count. Progress goes to standard error.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "src" / "aftertrain" / "data" / "llama-bpe"
#: Ids of the tokenizer: 256 byte symbols, the end-of-text token, 255 merges.
VOCAB_SIZE = 512
EOS = "<|endoftext|>"
#: Tokens per training window (the model sees up to max_position_embeddings).
TRAIN_WINDOW = 128
#: Ids per validation window (one overlaps the previous window).
EVAL_WINDOW = 256
#: Add-alpha smoothing of the BPE bigram baseline.
BIGRAM_ALPHA = 0.1
#: The files fixture.json records a SHA-256 of (every file but itself).
FIXTURE_FILE = "fixture.json"


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def train_tokenizer(text: str):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with :data:`VOCAB_SIZE` ids
    trained on ``text``; ``decode(encode(s)) == s`` for every string ``s``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([text], trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS,
        bos_token=EOS,
        clean_up_tokenization_spaces=False,
    )


def llama_config(tokenizer):
    """The fixture's ``LlamaConfig``: hidden 128, 3 layers, 4 heads, SiLU
    gated MLP of 344, rotary positions, 256 positions, untied embeddings."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=344,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        dtype="float32",
    )


def token_ids(tokenizer, text: str) -> torch.Tensor:
    """``text``'s ids preceded by the end-of-text id (int64, 1-D)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return torch.tensor([tokenizer.eos_token_id, *ids], dtype=torch.long)


def eval_windows(ids: torch.Tensor) -> list[torch.Tensor]:
    """``ids`` cut into windows of at most :data:`EVAL_WINDOW` ids, each
    starting at the previous one's last id: every id but the first is a
    target of exactly one window."""
    step = EVAL_WINDOW - 1
    return [ids[s : s + EVAL_WINDOW] for s in range(0, len(ids) - 1, step)]


@torch.no_grad()
def val_token_nats(model, ids: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood (nats, float64, shape ``(len(ids) - 1,)``) of
    each of ``ids[1:]`` under ``model`` over :func:`eval_windows`, computed
    in the model's dtype (the recorded figure uses a float64 copy)."""
    out = []
    for window in eval_windows(ids):
        logits = model(window[None]).logits[0, :-1]
        nll = torch.nn.functional.cross_entropy(logits, window[1:], reduction="none")
        out.append(nll.double())
    return torch.cat(out)


def bigram_log_probs(ids: torch.Tensor, vocab: int, alpha: float = BIGRAM_ALPHA) -> torch.Tensor:
    """``log((count(a, b) + alpha) / (count(a, .) + alpha * vocab))`` from the
    consecutive pairs of ``ids`` (float64, ``vocab`` x ``vocab``)."""
    counts = torch.zeros(vocab * vocab, dtype=torch.float64)
    counts.index_add_(0, ids[:-1] * vocab + ids[1:], torch.ones(len(ids) - 1, dtype=torch.float64))
    counts = counts.view(vocab, vocab) + alpha
    return counts.log() - counts.sum(1, keepdim=True).log()


def bigram_nats(log_probs: torch.Tensor, ids: torch.Tensor) -> float:
    """Total negative log-likelihood (nats) of ``ids[1:]``, each given the id before it."""
    return float(-log_probs[ids[:-1], ids[1:]].sum())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then cosine to ``peak / 10``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    done = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))


def train(model, ids: torch.Tensor, steps: int, batch: int, seed: int, peak_lr: float, on_step) -> None:
    """AdamW on ``steps`` batches of ``batch`` random windows of ``ids``."""
    gen = torch.Generator().manual_seed(seed + 1)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
        lr=peak_lr,
        betas=(0.9, 0.95),
    )
    warmup = max(1, steps // 20)
    model.train()
    for step in range(steps):
        starts = torch.randint(0, len(ids) - TRAIN_WINDOW - 1, (batch,), generator=gen)
        x = torch.stack([ids[s : s + TRAIN_WINDOW] for s in starts.tolist()])
        y = torch.stack([ids[s + 1 : s + 1 + TRAIN_WINDOW] for s in starts.tolist()])
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, peak_lr, warmup)
        logits = model(x).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        on_step(step, float(loss.detach()))
    model.eval()


def build(out: Path, steps: int, threads: int, seed: int, batch: int, peak_lr: float, command: str) -> dict:
    """Train the tokenizer and the model, write the folder at ``out``; return fixture.json's dict."""
    from transformers import LlamaForCausalLM

    from aftertrain.lm.hf_export import write_folder
    from aftertrain.lm.text import load_corpus

    torch.set_num_threads(threads)
    corpus = load_corpus()
    t0 = time.perf_counter()
    tokenizer = train_tokenizer(corpus.train_text)
    train_ids = token_ids(tokenizer, corpus.train_text)
    val_ids = token_ids(tokenizer, corpus.val_text)
    _log(
        f"tokenizer: {len(tokenizer)} ids; train {len(train_ids) - 1} tokens "
        f"({len(corpus.train_text) / (len(train_ids) - 1):.2f} chars/token), val {len(val_ids) - 1}"
    )
    vocab = len(tokenizer)
    bigram = bigram_nats(bigram_log_probs(train_ids, vocab), val_ids)
    n_val = len(val_ids) - 1
    _log(f"bigram val loss {bigram / n_val:.4f} nats/token")

    torch.manual_seed(seed)  # LlamaForCausalLM draws its initial weights from the global generator
    model = LlamaForCausalLM(llama_config(tokenizer)).float()
    n_params = sum(p.numel() for p in model.parameters())
    _log(f"model: {n_params:,} parameters")

    every = max(1, steps // 10)
    t_train = time.perf_counter()

    def on_step(step: int, loss: float) -> None:
        if (step + 1) % every == 0 or step == 0:
            model.eval()
            val = float(val_token_nats(model, val_ids).mean())
            model.train()
            seconds = time.perf_counter() - t_train
            _log(f"step {step + 1}/{steps} train loss {loss:.4f} val {val:.4f} ({seconds:.0f} s)")

    train(model, train_ids, steps, batch, seed, peak_lr, on_step)
    train_seconds = time.perf_counter() - t_train
    nats = float(val_token_nats(copy.deepcopy(model).double(), val_ids).sum())
    _log(f"val loss {nats / n_val:.4f} nats/token (bigram {bigram / n_val:.4f}); {train_seconds:.0f} s")

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        files = sorted(p.name for p in tmp.iterdir() if p.is_file())
        fixture.update(sha256={name: sha256(tmp / name) for name in files})
        (tmp / FIXTURE_FILE).write_text(json.dumps(fixture, indent=1) + "\n")

    fixture = {
        "command": command,
        "seed": seed,
        "steps": steps,
        "threads": threads,
        "batch": batch,
        "peak_lr": peak_lr,
        "parameters": n_params,
        "vocab_size": vocab,
        "train_tokens": len(train_ids) - 1,
        "val_tokens": n_val,
        "val_chars": len(corpus.val_text),
        "eval_window": EVAL_WINDOW,
        "val_loss_per_token": nats / n_val,
        "val_loss_per_char": nats / len(corpus.val_text),
        "bigram_alpha": BIGRAM_ALPHA,
        "bigram_val_loss_per_token": bigram / n_val,
        "train_seconds": round(train_seconds, 1),
        "torch": torch.__version__,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_folder(out, write)
    _log(f"wrote {out} in {time.perf_counter() - t0:.0f} s")
    return fixture


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="the folder to write (default: %(default)s)"
    )
    ap.add_argument("--steps", type=int, default=250, help="optimizer steps (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default: %(default)s)")
    ap.add_argument(
        "--seed", type=int, default=0, help="initialisation and batch seed (default: %(default)s)"
    )
    ap.add_argument("--batch", type=int, default=16, help="windows per step (default: %(default)s)")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default: %(default)s)")
    args = ap.parse_args(argv)
    for name in ("steps", "threads", "batch"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.seed < 0:
        ap.error(f"--seed must be >= 0, got {args.seed}")
    if not 0 < args.lr < 1:
        ap.error(f"--lr must be in (0, 1), got {args.lr}")
    argv = sys.argv[1:] if argv is None else argv
    command = " ".join(["python tools/build_llama_fixture.py", *argv])
    build(args.out, args.steps, args.threads, args.seed, args.batch, args.lr, command)


if __name__ == "__main__":
    main()
