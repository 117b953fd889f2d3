"""The bug set of the mutation harness (tools/mutate.py).

Each mutant is one realistic bug: a snippet of code that must occur exactly
once in the files under ``src/aftertrain/`` (searched at run time, so a
mutant survives functions moving between files) and its replacement. A
snippet found nowhere or twice makes the mutant "stale": the harness reports
it instead of skipping it silently; refresh the snippet then.

Written from the source alone (not from the tests), by module. ``equivalent``
gives the reason when a mutant cannot change any observable behaviour; such
mutants are run but kept out of the kill rate.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    id: str
    module: str
    description: str
    find: str
    replace: str
    equivalent: str | None = None
    #: Search only this file (relative to src/aftertrain/) when the snippet
    #: also occurs in a deliberate copy elsewhere (the bug zoo of
    #: aftertrain.checks holds broken copies of the rule on purpose).
    file: str | None = None


M = Mutant

MUTANTS: tuple[Mutant, ...] = (
    # --- model ---------------------------------------------------------------------------
    M(
        "model-01",
        "model",
        "causal mask one position too far (sees the next token)",
        ".tril(past)",
        ".tril(past + 1)",
    ),
    M(
        "model-02",
        "model",
        "positions restart at 0 after the cache",
        "positions = torch.arange(past, past + T, device=idx.device)",
        "positions = torch.arange(0, T, device=idx.device)",
    ),
    M(
        "model-03",
        "model",
        "cache length not advanced after a forward",
        "cache.length = past + T",
        "cache.length = past",
    ),
    M(
        "model-04",
        "model",
        "truncate cuts keys only, values kept whole",
        "self.keys[i], self.values[i] = k[:, :, :n], v[:, :, :n]",
        "self.keys[i], self.values[i] = k[:, :, :n], v",
    ),
    M(
        "model-05",
        "model",
        "cache appends along the head axis instead of time",
        "k = torch.cat([self.keys[layer], k], dim=2)",
        "k = torch.cat([self.keys[layer], k], dim=1)",
    ),
    M(
        "model-06",
        "model",
        "post-norm residual: attention reads x, not ln1(x)",
        "x = x + self.attend(self.ln1(x), layer, cache)",
        "x = x + self.attend(x, layer, cache)",
    ),
    M(
        "model-07",
        "model",
        "window slides by one step too few",
        "return slide * math.ceil((n - block_size) / slide)",
        "return slide * math.floor((n - block_size) / slide)",
    ),
    M(
        "model-08",
        "model",
        "window starts sliding one character late",
        "if n <= block_size:\n        return 0",
        "if n <= block_size + 1:\n        return 0",
    ),
    M(
        "model-09",
        "model",
        "Decoder rebuilds its window one token short",
        "window = self.tokens[start:]",
        "window = self.tokens[start + 1:]",
    ),
    M(
        "model-10",
        "model",
        "Decoder.truncate keeps one token too many",
        "del self.tokens[n:]\n        self.cache.truncate",
        "del self.tokens[n + 1:]\n        self.cache.truncate",
    ),
    M(
        "model-11",
        "model",
        "GELU replaced by ReLU in the MLP",
        "self.f2(F.gelu(self.f1(self.ln2(x))))",
        "self.f2(F.relu(self.f1(self.ln2(x))))",
    ),
    # --- checkpoint ----------------------------------------------------------------------
    M(
        "checkpoint-01",
        "checkpoint",
        "checkpoint loader ignores the SHA-256 mismatch",
        "if digest != recorded:",
        "if recorded is None:",
    ),
    M(
        "checkpoint-02",
        "checkpoint",
        "recorded SHA-256 of the weights minus their last byte",
        '"sha256": hashlib.sha256(weights).hexdigest()',
        '"sha256": hashlib.sha256(weights[:-1]).hexdigest()',
    ),
    M(
        "checkpoint-03",
        "checkpoint",
        "loaded model left in training mode",
        'holds NaN or inf weights (in {bad}){hint}")\n    return model.eval()',
        'holds NaN or inf weights (in {bad}){hint}")\n    return model',
    ),
    M(
        "checkpoint-04",
        "checkpoint",
        "weights loaded non-strictly (missing tensors keep their random init)",
        'model.load_state_dict(blob["state_dict"])',
        'model.load_state_dict(blob["state_dict"], strict=False)',
    ),
    # --- protocol ------------------------------------------------------------------------
    M(
        "protocol-01",
        "protocol",
        "rollback accepts n = length + 1",
        'check_int("n", n, least=0, most=length)',
        'check_int("n", n, least=0, most=length + 1)',
        file="lm/protocol.py",
    ),
    M(
        "protocol-02",
        "protocol",
        "TokenCache.truncate keeps one token too many",
        "del self.tokens[n:]",
        "del self.tokens[n + 1:]",
        file="lm/protocol.py",
    ),
    M(
        "protocol-03",
        "protocol",
        "check_idx accepts the index vocab_size",
        "int(idx.max()) >= vocab_size):",
        "int(idx.max()) > vocab_size):",
    ),
    M(
        "protocol-04",
        "protocol",
        "table models with a cache see only the new row, not the cached text",
        "return [cache.extend(idx)]",
        "cache.extend(idx)\n    return idx.tolist()",
    ),
    # --- decoding ------------------------------------------------------------------------
    M(
        "decoding-01",
        "decoding",
        "temperature multiplies the logits instead of dividing",
        "scaled = scaled / temperature",
        "scaled = scaled * temperature",
        file="lm/decoding.py",
    ),
    M(
        "decoding-02",
        "decoding",
        "sample_token ignores its temperature",
        "torch.multinomial(probabilities(logits, temperature), 1, generator=generator)",
        "torch.multinomial(probabilities(logits, 1.0), 1, generator=generator)",
    ),
    M(
        "decoding-03",
        "decoding",
        "greedy decoding takes the argmin",
        "return int(torch.argmax(check_logits(logits)))",
        "return int(torch.argmin(check_logits(logits)))",
    ),
    M(
        "decoding-04",
        "decoding",
        "generate samples at temperature 1 whatever asked",
        "token = sample_token(logits, temperature, generator)",
        "token = sample_token(logits, 1.0 if temperature else 0, generator)",
    ),
    M(
        "decoding-05",
        "decoding",
        "generate samples from the first position's logits",
        # lm/decoding.py: generate prefills the prompt but its last character and samples
        # after feeding that one, so the prompt's logits are not read; the bug rewritten:
        # the first character sampled from the first prompt position's logits (no prefill).
        "    if len(ids) > 1:\n        decoder.feed(ids[:-1])\n"
        "    new = decode(decoder, ids[-1], n_new, temperature, generator)",
        "    new = decode(decoder, ids[0], n_new, temperature, generator)",
    ),
    M(
        "decoding-06",
        "decoding",
        "generate produces one token too few",
        "for i in range(n_new):\n        token",
        "for i in range(n_new - 1):\n        token",
    ),
    M(
        "decoding-07",
        "decoding",
        "softmax over the wrong axis",
        "return torch.softmax(scaled, dim=-1)",
        "return torch.softmax(scaled, dim=0)",
        file="lm/decoding.py",
    ),
    # --- evaluation ----------------------------------------------------------------------
    M(
        "evaluation-01",
        "evaluation",
        "loss accumulated in float32",
        "return nll.double().sum()",
        "return nll.sum().double()",
    ),
    M(
        "evaluation-02",
        "evaluation",
        "mean divides by the token count, not the targets",
        "return float(total / n_targets)",
        "return float(total / tokens.numel())",
    ),
    M(
        "evaluation-03",
        "evaluation",
        "targets not shifted by one (predicts the input)",
        "y = tokens[1 : full * T + 1].view(full, T)",
        "y = tokens[: full * T].view(full, T)",
    ),
    M(
        "evaluation-04",
        "evaluation",
        "last partial window dropped",
        "        if rest:\n            x = tokens",
        "        if rest and False:\n            x = tokens",
    ),
    M(
        "evaluation-05",
        "evaluation",
        "val_loss leaves the model in eval mode",
        "n_targets)\n    finally:\n        model.train(was_training)",
        "n_targets)\n    finally:\n        model.eval()",
    ),
    # --- bigram --------------------------------------------------------------------------
    M(
        "bigram-01",
        "bigram",
        "pairs counted reversed (next, previous)",
        # the pairs are counted in lm/counts.py (PairCounts.of) for every vocabulary
        "torch.unique(tokens[:-1] * vocab_size + tokens[1:], return_counts=True)",
        "torch.unique(tokens[1:] * vocab_size + tokens[:-1], return_counts=True)",
    ),
    M(
        "bigram-02",
        "bigram",
        "rows normalised over the wrong axis",
        "counts / counts.sum(dim=1, keepdim=True)",
        "counts / counts.sum(dim=0, keepdim=True)",
    ),
    M(
        "bigram-03",
        "bigram",
        "smoothing added twice",
        # the dense table (the character vocabulary's) is PairCounts.dense_log_probs
        "counts = self.dense() + alpha",
        "counts = self.dense() + 2 * alpha",
    ),
    M(
        "bigram-04",
        "bigram",
        "bigram forward does not extend the cache",
        "texts(check_idx(idx, self.config.vocab_size), cache)  # extends the cache\n        return self.rows(idx)",
        "check_idx(idx, self.config.vocab_size)\n        return self.rows(idx)",
    ),
    M(
        "bigram-05",
        "bigram",
        "uniform predictor gives logits of one, not zero",
        "return torch.zeros(*idx.shape, self.config.vocab_size)",
        "return torch.ones(*idx.shape, self.config.vocab_size)",
        equivalent="constant logits: softmax is uniform whatever the constant",
    ),
    # --- drafts --------------------------------------------------------------------------
    M(
        "drafts-01",
        "drafts",
        "n-gram table drops its first count",
        "for i in range(j, len(ids)):",
        "for i in range(j + 1, len(ids)):",
    ),
    M(
        "drafts-02",
        "drafts",
        "unigram without add-one smoothing",
        # the add-one unigram is lm/counts.py's add_alpha_unigram at alpha 1
        "return cls(tables, add_alpha_unigram(tokens, V, 1.0))",
        "return cls(tables, add_alpha_unigram(tokens, V, 1e-9))",
    ),
    M(
        "drafts-03",
        "drafts",
        "Witten-Bell weight uses the count instead of the type count",
        "total, types = sum(seen.values()), len(seen)",
        "total, types = sum(seen.values()), sum(seen.values())",
    ),
    M(
        "drafts-04",
        "drafts",
        "context drops the newest character instead of the oldest",
        "dist = self._distribution(h[1:]) if h else self.unigram",
        "dist = self._distribution(h[:-1]) if h else self.unigram",
    ),
    M(
        "drafts-05",
        "drafts",
        "n-gram uses one character of context fewer",
        "h = context[max(0, len(context) - self.order + 1) :]",
        "h = context[max(0, len(context) - self.order + 2) :]",
    ),
    M(
        "drafts-06",
        "drafts",
        "n-gram forward reads one character of context fewer than distribution()",
        "self._distribution(tuple(seen[max(0, i - self.order + 2) : i + 1]))",
        "self._distribution(tuple(seen[max(0, i - self.order + 3) : i + 1]))",
    ),
    M(
        "drafts-07",
        "drafts",
        "INT4 draft built at 8 bits",
        "bits = 8 if kind is DraftKind.INT8 else 4",
        "bits = 8",
    ),
    M(
        "drafts-08",
        "drafts",
        "unigram counts drop the first token",
        # the unigram's counts are lm/counts.py's add_alpha_unigram
        "counts = torch.bincount(tokens, minlength=vocab_size).double()",
        "counts = torch.bincount(tokens[1:], minlength=vocab_size).double()",
    ),
    # --- quant ---------------------------------------------------------------------------
    M("quant-01", "quant", "qmax one too large", "return 2 ** (bits - 1) - 1", "return 2 ** (bits - 1)"),
    M(
        "quant-02",
        "quant",
        "per-channel scale over columns instead of rows",
        "m = a.amax(dim=1, keepdim=True)",
        "m = a.amax(dim=0, keepdim=True)",
    ),
    M(
        "quant-03",
        "quant",
        "rounding truncates toward zero",
        "q = torch.round(w.detach().to(torch.float32) / s)",
        "q = torch.trunc(w.detach().to(torch.float32) / s)",
    ),
    M(
        "quant-04",
        "quant",
        "rounding half away from zero",
        "q = torch.round(w.detach().to(torch.float32) / s)",
        "q = torch.sign(w.detach().to(torch.float32) / s) * torch.floor((w.detach().to(torch.float32) / s).abs() + 0.5)",
    ),  # noqa: E501
    M(
        "quant-05",
        "quant",
        "clamp symmetric (drops the extra negative code)",
        ".clamp(-qmax - 1, qmax)",
        ".clamp(-qmax, qmax)",
        equivalent="codes never reach -qmax-1 since |w| <= max|w| (module docstring)",
    ),
    M(
        "quant-06",
        "quant",
        "scale floor missing (0/0 on an all-zero row)",
        "return (m / qmax).clamp_min(SCALE_FLOOR)",
        "return m / qmax",
    ),
    # --- packing -------------------------------------------------------------------------
    M(
        "packing-01",
        "packing",
        "pack values least significant bit first",
        "planes = np.unpackbits(u[:, None], axis=1)[:, 8 - bits :]",
        "planes = np.unpackbits(u[:, None], axis=1, bitorder='little')[:, :bits]",
    ),
    M(
        "packing-02",
        "packing",
        "unpack sign threshold off by one",
        "out = torch.where(out >= 2 ** (bits - 1), out - 2**bits, out)",
        "out = torch.where(out > 2 ** (bits - 1), out - 2**bits, out)",
    ),
    # --- quant ---------------------------------------------------------------------------
    M(
        "quant-09",
        "quant",
        "storage counts 2 bytes per scale",
        "scale_bytes += FLOAT32_BYTES * qt.scales.numel()",
        "scale_bytes += 2 * qt.scales.numel()",
    ),
    M(
        "quant-10",
        "quant",
        "nbytes forgets the scales",
        "return self.packed.numel() + FLOAT32_BYTES * self.scales.numel()",
        "return self.packed.numel()",
    ),
    M(
        "quant-11",
        "quant",
        "sensitivity table sorted least harmful first",
        "rows.sort(key=lambda r: (-r.penalty, r.name))",
        "rows.sort(key=lambda r: (r.penalty, r.name))",
    ),
    M(
        "quant-12",
        "quant",
        "compounding excess with the sign flipped",
        "Compounding(total, float(joint_penalty), float(joint_penalty) - total)",
        "Compounding(total, float(joint_penalty), total - float(joint_penalty))",
    ),
    M(
        "quant-13",
        "quant",
        "divergence position 0-based",
        "position = next((i + 1 for i, (a, b)",
        "position = next((i for i, (a, b)",
    ),
    M(
        "quant-14",
        "quant",
        "reconstruction error is the mean signed error",
        "(w.detach().double() - w_hat.double()).abs().mean()",
        "(w.detach().double() - w_hat.double()).mean().abs()",
    ),
    M(
        "quant-15",
        "quant",
        "quantized_model quantizes per tensor whatever asked",
        "params[name].copy_(fake_quantize(params[name], bits, granularity))",
        "params[name].copy_(fake_quantize(params[name], bits, Granularity.PER_TENSOR))",
    ),
    # --- prune ---------------------------------------------------------------------------
    M(
        "prune-01",
        "prune",
        "count rounds half up",
        "return round(check_sparsity(sparsity) * n)",
        "return math.floor(check_sparsity(sparsity) * n + 0.5)",
    ),
    M(
        "prune-02",
        "prune",
        "count truncates",
        "return round(check_sparsity(sparsity) * n)",
        "return int(check_sparsity(sparsity) * n)",
    ),
    M(
        "prune-03",
        "prune",
        "magnitude order by signed value",
        "return torch.sort(flat.abs(), stable=True).indices",
        "return torch.sort(flat, stable=True).indices",
    ),
    M(
        "prune-04",
        "prune",
        "magnitude sort not stable (tie order left to the sort)",
        "return torch.sort(flat.abs(), stable=True).indices",
        "return torch.sort(flat.abs(), descending=True).indices.flip(0)",
    ),
    M(
        "prune-05",
        "prune",
        "removes one weight too many",
        "keep[order[:k]] = False",
        "keep[order[:k + 1]] = False",
    ),
    M(
        "prune-06",
        "prune",
        "2:4 groups along columns (first dimension)",
        "groups = w.reshape(-1, 4).abs()",
        "groups = w.t().reshape(-1, 4).abs()",
    ),
    M(
        "prune-07",
        "prune",
        "2:4 removes the two largest",
        "keep.scatter_(1, order[:, :2], False)",
        "keep.scatter_(1, order[:, 2:], False)",
    ),
    M(
        "prune-08",
        "prune",
        "apply_masks zeroes the kept weights",
        "p.masked_fill_(~masks[name], 0.0)",
        "p.masked_fill_(masks[name], 0.0)",
    ),
    M(
        "prune-09",
        "prune",
        "sparsity_of counts kept positions",
        "return sum(int((~m).sum()) for m in masks.values()) / total",
        "return sum(int(m.sum()) for m in masks.values()) / total",
    ),
    M(
        "prune-10",
        "prune",
        "bitmask format forgets the values' bytes",
        'return Stored(fmt, shape, {"bits": bits, "values": flat[kept].clone()})',
        'return Stored(fmt, shape, {"bits": bits, "values": flat[kept].clone().half()})',
    ),
    M(
        "prune-11",
        "prune",
        "CSR row pointers off by one row",
        "crow[1:] = rows.sum(1).cumsum(0)",
        "crow[:-1] = rows.sum(1).cumsum(0)",
    ),
    # --- packing -------------------------------------------------------------------------
    M(
        "packing-03",
        "packing",
        "signed range one too wide at the top (2**(bits-1) wraps to the lowest code)",
        "return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1",
        "return -(2 ** (bits - 1)), 2 ** (bits - 1)",
    ),
    M(
        "packing-04",
        "packing",
        "unpack reads the bits of the last byte's padding (offset by one value)",
        "planes = np.unpackbits(packed.numpy())[: n * bits].reshape(n, bits)",
        "planes = np.unpackbits(packed.numpy())[-n * bits:].reshape(n, bits) if n else np.zeros((0, bits), np.uint8)",
    ),  # noqa: E501
    # --- prune ---------------------------------------------------------------------------
    M(
        "prune-13",
        "prune",
        "random table std with ddof 0",
        "float(losses.std(ddof=1)) if len(losses) > 1",
        "float(losses.std(ddof=0)) if len(losses) > 1",
    ),
    M(
        "prune-14",
        "prune",
        "matching sparsity returns the last grid point below target",
        "    return round(hi * resolution, 12)",
        "    return round(lo * resolution, 12)",
    ),
    M(
        "prune-15",
        "prune",
        "first sparsity above uses >=",
        'above = [r["sparsity"] for r in rows if r[key] > level]',
        'above = [r["sparsity"] for r in rows if r[key] >= level]',
    ),
    M(
        "prune-16",
        "prune",
        "LossCurve memo ignores the seed for random pruning",
        "key = (method, check_sparsity(sparsity), seed if method is Method.RANDOM else 0)",
        "key = (method, check_sparsity(sparsity), 0)",
    ),
    # --- speculative-rule ----------------------------------------------------------------
    M(
        "rule-01",
        "speculative-rule",
        "acceptance test u < q/p instead of p/q",
        "ok = u * qx < px",
        "ok = u * px < qx",
        file="speculative/rule.py",
    ),
    M(
        "rule-02",
        "speculative-rule",
        "acceptance with <= (accepts p(x) = 0 at u = 0)",
        "ok = u * qx < px",
        "ok = u * qx <= px",
        file="speculative/rule.py",
    ),
    M(
        "rule-03",
        "speculative-rule",
        "acceptances counted anywhere, not leading",
        "accepted = ok.long().cumprod(dim=1).sum(dim=1)",
        "accepted = ok.long().sum(dim=1)",
    ),
    M(
        "rule-04",
        "speculative-rule",
        "residual q - p instead of p - q",
        "residual = (p_n - q_n).clamp_min(0)",
        "residual = (q_n - p_n).clamp_min(0)",
        file="speculative/rule.py",
    ),
    M(
        "rule-05",
        "speculative-rule",
        "residual not clamped at zero",
        "residual = (p_n - q_n).clamp_min(0)",
        "residual = (p_n - q_n).abs()",
        file="speculative/rule.py",
    ),
    M(
        "rule-06",
        "speculative-rule",
        "bonus drawn from the residual of the last draft",
        "q_n = torch.cat([q, q.new_zeros(N, 1, q.shape[-1])], dim=1)[rows, accepted]",
        "q_n = torch.cat([q, q[:, -1:]], dim=1)[rows, accepted]",
    ),
    M(
        "rule-07",
        "speculative-rule",
        "inverse CDF with right=False",
        "torch.searchsorted(cdf, x, right=True)",
        "torch.searchsorted(cdf, x, right=False)",
        file="speculative/rule.py",
    ),
    M(
        "rule-08",
        "speculative-rule",
        "uniforms drawn in another order (v before u)",
        "    u = torch.rand(n, k, dtype=torch.float64, generator=generator)\n    v = torch.rand(n, dtype=torch.float64, generator=generator)",  # noqa: E501
        "    v = torch.rand(n, dtype=torch.float64, generator=generator)\n    u = torch.rand(n, k, dtype=torch.float64, generator=generator)",
    ),  # noqa: E501
    M(
        "rule-09",
        "speculative-rule",
        "greedy one-hot takes the last argmax on ties",
        "top = torch.argmax(logits, dim=-1)",
        "top = logits.shape[-1] - 1 - torch.argmax(logits.flip(-1), dim=-1)",
    ),
    M(
        "rule-10",
        "speculative-rule",
        "empty residual falls back to q instead of p",
        "residual = torch.where(empty, p_n, residual)",
        "residual = torch.where(empty, q_n, residual)",
        file="speculative/rule.py",
    ),
    M(
        "rule-12",
        "speculative-rule",
        "inverse-CDF draw not scaled by the row total (unnormalised residual)",
        "x = torch.minimum(v.unsqueeze(-1) * total,",
        "x = torch.minimum(v.unsqueeze(-1) + 0 * total,",
        file="speculative/rule.py",
    ),
    M(
        "rule-11",
        "speculative-rule",
        "predicted acceptance divides by k + 1",
        "return a1 * (1 - a1**k) / (k * (1 - a1))",
        "return a1 * (1 - a1**k) / ((k + 1) * (1 - a1))",
    ),
    # --- speculative-generator -----------------------------------------------------------
    M(
        "generator-01",
        "speculative-generator",
        "drafts sampled at temperature 1 whatever asked (law exact, acceptance moves)",  # noqa: E501
        "    table = table_draft(draft, temperature)\n",
        "    temperature = 1.0 if temperature else 0\n    table = table_draft(draft, temperature)\n",
    ),
    M(
        "generator-02",
        "speculative-generator",
        "drafts one character too many at the end",
        "kk = min(k, end - len(text) - 1)",
        "kk = min(k, end - len(text))",
        file="speculative/generator.py",
    ),
    M(
        "generator-03",
        "speculative-generator",
        "target p at temperature 1 whatever asked",
        "p = probabilities_unchecked(logits, temperature).tolist()",
        "p = probabilities_unchecked(logits, 1.0 if temperature else 0).tolist()",
    ),
    M(
        "generator-04",
        "speculative-generator",
        "decoders keep one character too many after a round",
        "dec.truncate(min(len(dec), len(text) - 1))",
        "dec.truncate(min(len(dec), len(text)))",
    ),
    M(
        "generator-05",
        "speculative-generator",
        "draft passes not counted",
        "draft_passes += kk",
        "draft_passes += 0",
        file="speculative/generator.py",  # the round account replays the same count
    ),
    M(
        "generator-06",
        "speculative-generator",
        "accepted counts the bonus token too",
        "        accepted += n\n",
        "        accepted += n + 1 if n == kk else n\n",
        file="speculative/generator.py",  # the round account replays the same count
    ),
    M(
        "generator-07",
        "speculative-generator",
        "chars per pass counts the prompt",
        "n = self.tokens.numel() - self.prompt_length",
        "n = self.tokens.numel()",
    ),
    M(
        "generator-08",
        "speculative-generator",
        "S2 null drawn with another sample size",
        "null = stats.tv_null_distribution(p.numpy(), n, null_trials, seed)",
        "null = stats.tv_null_distribution(p.numpy(), n // 2, null_trials, seed)",
    ),
    M(
        "generator-09",
        "speculative-generator",
        "S2 null with n and trials swapped",
        "null = stats.tv_null_distribution(p.numpy(), n, null_trials, seed)",
        "null = stats.tv_null_distribution(p.numpy(), null_trials, n, seed)",
    ),
    M(
        "generator-10",
        "speculative-generator",
        "first-token samples use the draft's p for the bonus",
        "p = torch.stack([p1.expand(n, V), _second_rows(target, ids, x, temperature)], dim=1)",
        "p = torch.stack([p1.expand(n, V), p1.expand(n, V)], dim=1)",
        equivalent=(
            "first_token_samples returns only the first emitted character: x when the "
            "draft is accepted (the bonus token drawn from p_2 is discarded), else the "
            "residual of p_1 - q_1; the uniforms drawn are the same, so no output changes"
        ),
    ),
    # --- stats ---------------------------------------------------------------------------
    M(
        "stats-01",
        "stats",
        "TV without the factor one half",
        "return float(0.5 * np.abs(p - q).sum())",
        "return float(np.abs(p - q).sum())",
    ),
    M(
        "stats-02",
        "stats",
        "null TV without the factor one half",
        "return 0.5 * np.abs(counts / n - p).sum(axis=1)",
        "return np.abs(counts / n - p).sum(axis=1)",
    ),
    M(
        "stats-03",
        "stats",
        "threshold from the null's 99% quantile",
        "return float(arr.mean() + math.sqrt(",
        "return float(np.quantile(arr, 0.99) + math.sqrt(",
    ),
    M(
        "stats-04",
        "stats",
        "threshold from the null's median",
        "return float(arr.mean() + math.sqrt(",
        "return float(np.median(arr) + math.sqrt(",
        # not equivalent: a skewed null's median and mean differ by more than the tolerance
        # (tests/experiments/test_speculative_figures.py recomputes the threshold from the mean)
    ),
    M(
        "stats-05",
        "stats",
        "McDiarmid margin with n instead of 2n",
        "math.log(1.0 / alpha) / (2.0 * n)",
        "math.log(1.0 / alpha) / n",
    ),
    M(
        "stats-06",
        "stats",
        "McDiarmid margin shrunk by sqrt(2) (square root of alpha)",
        "math.log(1.0 / alpha) / (2.0 * n)",
        "math.log(1.0 / math.sqrt(alpha)) / (2.0 * n)",
    ),
    M(
        "stats-07",
        "stats",
        "null multinomial with n and trials swapped",
        "counts = np.random.default_rng(seed).multinomial(n, p, size=trials)",
        "counts = np.random.default_rng(seed).multinomial(trials, p, size=n)",
    ),
    M(
        "stats-08",
        "stats",
        "pooling takes the largest cells first",
        'order = np.argsort(expected, kind="stable")',
        'order = np.argsort(-expected, kind="stable")',
    ),
    M(
        "stats-09",
        "stats",
        "pool stops short of min_expected",
        "pooled = min(max(below, reach), expected.size) if below else 0",
        "pooled = below",
    ),
    M(
        "stats-10",
        "stats",
        "a cell at exactly min_expected is pooled",
        "below = int((expected < min_expected).sum())",
        "below = int((expected <= min_expected).sum())",
    ),
    M(
        "stats-11",
        "stats",
        "rejects with p-value <= alpha",
        "return self.pvalue < _check_alpha(alpha)",
        "return self.pvalue <= _check_alpha(alpha)",
    ),
    M(
        "stats-12",
        "stats",
        "expected counts not renormalised over the possible cells",
        "n * p[~impossible] / p[~impossible].sum()",
        "n * p[~impossible]",
    ),
    M("stats-13", "stats", "impossible outcomes ignored", "if np.any(obs[impossible] > 0):", "if False:"),
    M(
        "stats-14",
        "stats",
        "dof counts the pooled cell twice",
        "dof=int(obs.size - 1),",
        "dof=int(obs.size),",
    ),
    M(
        "stats-15",
        "stats",
        "McDiarmid margin doubled (a check loosened by two)",
        "return float(arr.mean() + math.sqrt(",
        "return float(arr.mean() + 2 * math.sqrt(",
    ),
    M(
        "stats-16",
        "stats",
        "chi-square rejects only at a p-value 100 times smaller",
        "return self.pvalue < _check_alpha(alpha)",
        "return self.pvalue < _check_alpha(alpha) / 100",
    ),
    M(
        "stats-17",
        "stats",
        "chi-square statistic halved before its p-value",
        "stat, pvalue = scipy.stats.chisquare(obs, expected)",
        "stat = scipy.stats.chisquare(obs, expected)[0] / 2\n    pvalue = scipy.stats.chi2.sf(stat, obs.size - 1)",
    ),  # noqa: E501
    # --- timing --------------------------------------------------------------------------
    M(
        "timing-01",
        "timing",
        "ratio of medians instead of median of pair ratios",
        "ratios = np.asarray(self.cand) / np.asarray(self.base)",
        "ratios = np.full(len(self.base), np.median(self.cand) / np.median(self.base))",
    ),
    M(
        "timing-02",
        "timing",
        "timing not divided by its call count",
        "return (math.fsum(own) if own else wall) / self.calls, wall",
        "return (math.fsum(own) if own else wall), wall",
    ),
    M(
        "timing-03",
        "timing",
        "pairs not alternated",
        "if i % 2 == 0:\n                b, b_wall = self._time(self.baseline)",
        "if True:\n                b, b_wall = self._time(self.baseline)",
    ),
    M(
        "timing-04",
        "timing",
        "interval rank off by one",
        "return float(x[k - 1]), float(x[n - k]), coverage",
        "return float(x[k]), float(x[n - k - 1]), coverage",
    ),
    M(
        "timing-05",
        "timing",
        "coverage from one tail only",
        "coverage = 1.0 - 2.0 * float(scipy.stats.binom.cdf(k - 1, n, 0.5))",
        "coverage = 1.0 - float(scipy.stats.binom.cdf(k - 1, n, 0.5))",
    ),
    M(
        "timing-06",
        "timing",
        "faster-by uses the lower bound",
        "return self.ci_high <= 1.0 / factor",
        "return self.ci_low <= 1.0 / factor",
    ),
    M(
        "timing-07",
        "timing",
        "no-difference band open on one side",
        "return low <= self.ci_low and self.ci_high <= high",
        "return self.ci_high <= high",
    ),
    M(
        "timing-08",
        "timing",
        "threads not restored",
        "torch.set_num_threads(self.threads_before)",
        "torch.set_num_threads(self.threads)",
    ),
    M(
        "timing-09",
        "timing",
        "ratio baseline / candidate",
        "ratios = np.asarray(self.cand) / np.asarray(self.base)",
        "ratios = np.asarray(self.base) / np.asarray(self.cand)",
    ),
    M(
        "timing-10",
        "timing",
        "Bonferroni split over the looks only, not the ratios",
        "confidence = 1.0 - alpha / (looks * len(sides))",
        "confidence = 1.0 - alpha / looks",
    ),
    M(
        "timing-11",
        "timing",
        "look schedule grows linearly instead of doubling",
        "return tuple(first * 2**j for j in range(looks))",
        "return tuple(first * (j + 1) for j in range(looks))",
    ),
    M(
        "timing-12",
        "timing",
        "broken as soon as the interval crosses a bound (not wholly outside)",
        "if ci_high < self.low or ci_low > self.high:",
        "if ci_low < self.low or ci_high > self.high:",
    ),
    M(
        "timing-13",
        "timing",
        "a judgement's verdict overwritten by later looks",
        "if name in decided:\n            continue\n        said = judgement.decide(timings)",
        "if False:\n            continue\n        said = judgement.decide(timings)",
    ),
    M(
        "timing-14",
        "timing",
        "budget check ignores the next round's estimated time",
        "if look > 1 and clock() - start + round_cost(runs, need, size, clock() - start) > budget_s:",
        "if look > 1 and clock() - start > budget_s:",
    ),
    # --- ledger --------------------------------------------------------------------------
    M(
        "ledger-01",
        "ledger",
        "weakest outcome wins among a test's phases",
        "if current is None or OUTCOMES.index(outcome) < OUTCOMES.index(current):",
        "if current is None or OUTCOMES.index(outcome) > OUTCOMES.index(current):",
    ),
    M(
        "ledger-02",
        "ledger",
        "xfailed counted as holds",
        "Outcome.XFAILED: DOES_NOT_REPRODUCE,",
        "Outcome.XFAILED: HOLDS,",
    ),
    M(
        "ledger-03",
        "ledger",
        "claim verdict from the weakest of its tests",
        "return VERDICT_OF[min(ran, key=OUTCOMES.index)]",
        "return VERDICT_OF[max(ran, key=OUTCOMES.index)]",
    ),
    M(
        "ledger-04",
        "ledger",
        "only the first claim marker counts",
        "            if claim_id not in ids:\n                ids.append(claim_id)",
        "            if claim_id not in ids and not ids:\n                ids.append(claim_id)",
    ),
    M(
        "ledger-05",
        "ledger",
        "a failing setup is neutral",
        'if not (report.when != "call" and report.passed):',
        'if report.when == "call":',
    ),
    M(
        "ledger-06",
        "ledger",
        "an untimed timing claim reads as holds",
        # ledger/state.py: an untimed test no longer has a verdict of its own (it is in
        # NOT_RAN, filtered out before VERDICT_OF); the bug is untimed read as a run
        # whose verdict is holds. (VERDICT_OF's entry alone reaches only the reasons.)
        "NOT_RAN = (Outcome.UNTIMED, Outcome.SKIPPED)\nVERDICT_OF = {\n    Outcome.ERROR: BROKEN,\n    Outcome.FAILED: BROKEN,\n    Outcome.XPASSED: BROKEN,\n    Outcome.XFAILED: DOES_NOT_REPRODUCE,\n    Outcome.INCONCLUSIVE: INCONCLUSIVE,\n    Outcome.UNTIMED: SKIPPED,\n",
        "NOT_RAN = (Outcome.SKIPPED,)\nVERDICT_OF = {\n    Outcome.ERROR: BROKEN,\n    Outcome.FAILED: BROKEN,\n    Outcome.XPASSED: BROKEN,\n    Outcome.XFAILED: DOES_NOT_REPRODUCE,\n    Outcome.INCONCLUSIVE: INCONCLUSIVE,\n    Outcome.UNTIMED: HOLDS,\n",
    ),
    # --- report --------------------------------------------------------------------------
    M(
        "report-01",
        "report",
        "percent cell without the factor 100",
        'return DASH if x is None else f"{100 * x:.{digits}f}%"',
        'return DASH if x is None else f"{x:.{digits}f}%"',
    ),
    M(
        "report-02",
        "report",
        "pipe in a cell not escaped",
        'return str(value).replace("|", "\\\\|").replace("\\n", " ")',
        'return str(value).replace("\\n", " ")',
    ),
    M(
        "report-03",
        "report",
        "NaN printed as a number",
        "if x is None or (isinstance(x, float) and math.isnan(x)):",
        "if x is None:",
    ),
    M(
        "report-04",
        "report",
        "missing verdict reads as holds",
        "return ClaimEntry(claim_id, NOT_COVERED)",
        "return ClaimEntry(claim_id, HOLDS)",
    ),
    M(
        "report-05",
        "report",
        "only the first figure shown in the claims table",
        "return figures_once(list(ledger.claim(claim_id).measured)) or DASH",
        "return figures_once(list(ledger.claim(claim_id).measured)[:1]) or DASH",
    ),
    M(
        "report-06",
        "report",
        "quant plot draws the per-channel series as per-tensor",
        'ax.plot(xs, [r.per_tensor for r in bits], "o-"',
        'ax.plot(xs, [r.per_channel for r in bits], "o-"',
    ),
    M(
        "report-07",
        "report",
        "acceptance plot's prediction series drawn from the measured rates",
        "ax.plot(ks, [r.predicted_acceptance for r in rs]",
        "ax.plot(ks, [r.acceptance for r in rs]",
    ),
    # --- text ----------------------------------------------------------------------------
    M(
        "text-01",
        "text",
        "decode accepts index 100",
        "if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < VOCAB_SIZE:",
        "if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t <= VOCAB_SIZE:",
    ),
    # --- checks --------------------------------------------------------------------------
    M(
        "checks-01",
        "checks",
        "quant round-trip check loosened by two",
        "excess = err / ref.round_trip_bound()\n    bad = ref.judged & ~(excess <= 1)",
        "excess = err / ref.round_trip_bound()\n    bad = ref.judged & ~(excess <= 2)",
    ),
    M(
        "checks-02",
        "checks",
        "prune magnitude check loosened by two",
        "ok = removed <= kept",
        "ok = removed <= 2 * kept",
    ),
    M(
        "checks-03",
        "checks",
        "a failed row without a detail is not recorded as a failure",
        "if row.passed:\n            return row",
        "if row.passed or not row.detail:\n            return row",
    ),
    M(
        "checks-04",
        "checks",
        "no Bonferroni split across the battery's tests",
        "return alpha / max(1, tests)",
        "return alpha",
    ),
    M(
        "checks-05",
        "checks",
        "rule battery's chi-square loosened (p-value vs alpha / 100)",
        '"chi-square",\n            fit.pvalue >= alpha,\n            position=j,',
        '"chi-square",\n            fit.pvalue >= alpha / 100,\n            position=j,',
    ),
    M(
        "checks-06",
        "checks",
        "rule battery's TV check loosened by two",
        "tv <= limit,\n            position=j,",
        "tv <= 2 * limit,\n            position=j,",
    ),
    # --- speedup (the speculative timing claims' rules) ------------------------------------
    M(
        "speedup-01",
        "speedup",
        "the speedup interval keeps the ratio's order (low and high swapped)",
        "return 1.0 / t.median, 1.0 / t.ci_high, 1.0 / t.ci_low",
        "return 1.0 / t.median, 1.0 / t.ci_low, 1.0 / t.ci_high",
    ),
    M(
        "speedup-02",
        "speedup",
        "the predicted range takes v at its low end for both bounds",
        "return cpp / (v[1] + k * c[1]), cpp / (v[0] + k * c[0])",
        "return cpp / (v[0] + k * c[1]), cpp / (v[0] + k * c[0])",
    ),
    M(
        "speedup-03",
        "speedup",
        "abs_gap's lower end ignores the case a above b",
        "low = max(0.0, b[0] - a[1], a[0] - b[1])",
        "low = max(0.0, b[0] - a[1])",
    ),
    M(
        "speedup-04",
        "speedup",
        "one holding part is enough for the combination",
        "return HOLDS if verdicts and all(v == HOLDS for v in verdicts) else None",
        "return HOLDS if verdicts and any(v == HOLDS for v in verdicts) else None",
    ),
    M(
        "speedup-05",
        "speedup",
        "S7 judged on the median end of the slack (broken on the low end only)",
        "BROKEN if s_lo > FORMULA_SLACK * p_hi else None",
        "BROKEN if s_hi > FORMULA_SLACK * p_hi else None",
    ),
    M(
        "speedup-06",
        "speedup",
        "X2 compares with the bigram's best low end",
        "if any(lo > 1.0 and lo > BETTER_THAN_BIGRAM * best_high for lo, _ in cheap):",
        "if any(lo > 1.0 and lo > BETTER_THAN_BIGRAM * best_low for lo, _ in cheap):",
    ),
    M(
        "speedup-07",
        "speedup",
        "the fit gain's upper bound reads the speedup's low end",
        "high = max(-u(c[1], v[0]), min(g(s[1], c[1], v[1]), u(c[0], v[1])))",
        "high = max(-u(c[1], v[0]), min(g(s[0], c[1], v[1]), u(c[0], v[1])))",
    ),
    M(
        "speedup-08",
        "speedup",
        "verification growth read the wrong way round",
        "grows = HOLDS if hi_k[0] > lo_k[1] else BROKEN if hi_k[1] < lo_k[0] else None",
        "grows = HOLDS if hi_k[1] > lo_k[0] else BROKEN if hi_k[1] < lo_k[0] else None",
    ),
    M(
        "speedup-09",
        "speedup",
        "the bigram's speedup needs only its high end above REAL_SPEEDUP",
        "if any(low > REAL_SPEEDUP for low, _ in lows_highs):",
        "if any(high > REAL_SPEEDUP for _, high in lows_highs):",
    ),
    M(
        "speedup-10",
        "speedup",
        "S5 leaves the n-gram's cost unjudged",
        "for d in (BIGRAM, D.DraftKind.NGRAM.value)]",
        "for d in (BIGRAM,)]",
    ),
    M(
        "speedup-11",
        "speedup",
        "the fit's joint bound used when only some v lies above 1",
        'if not all(r["v"][0] >= 1.0 for r in rows):',
        'if not any(r["v"][0] >= 1.0 for r in rows):',
    ),
    M(
        "speedup-12",
        "speedup",
        "the fit gain forgets the independent ranges' bounds",
        "return max(low, a_gap[0] - b_gap[1]), min(high, a_gap[1] - b_gap[0])",
        "return low, high",
    ),
)
