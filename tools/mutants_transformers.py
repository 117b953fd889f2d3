# ruff: noqa: E501  (a mutant's snippet is quoted whole, as it stands in src/)
"""The transformers path's bug set (``tools/mutate.py --set transformers``):
a transformers causal-LM folder as the model under test, its roles by
structure, the large-vocabulary tables and drafts, and our GPT exported as
GPT-2.

Written from ``src/`` alone (``lm/hf.py``, ``lm/anatomy.py``,
``lm/counts.py``, ``lm/ngram.py``, ``speculative/drafts.py``,
``lm/hf_export.py``), before any of their test files was opened, by a
helper who did not write those tests.

- ``hf``: ``lm/hf.py``. The cache's rollback (the crop's count off by one
  or of the wrong sign, the valid count not updated, the uncroppable path
  not re-reading, the re-read tokens recorded twice, the logits of the
  re-read positions returned), the window (no cap at :data:`MAX_WINDOW`), ``Conv1D`` made ``nn.Linear``
  (reshaped instead of transposed, the bias not copied), the text (the
  split's share reversed, an id equal to
  the vocabulary let through, ``model_text`` and ``encode_text`` not the
  model's tokenizer's), the identity (tokenizer files digested, ``.bin``
  weights not, a folder of a config alone identified) and the refusals
  (a tokenizer one token larger, a model that is not a causal LM, a draft
  tokenizer of the same size but other ids).
- ``anatomy``: ``lm/anatomy.py``. The feed-forward input taken from the
  attention, the last block's first norm, the first norm outside the
  blocks, the last block's index off by one.
- ``counts``: ``lm/counts.py``. The add-alpha denominators (unigram and
  sparse rows), the row totals counting the last token, the dense table
  transposed.
- ``ngram-tf``: the large-vocabulary paths of ``lm/ngram.py``. The dense
  table's threshold off by one, the sparse rows at the default alpha, the
  unigram's vocabulary taken from its tokens, the n-gram's memo bounded in
  contexts, not floats.
- ``drafts-tf``: ``speculative/drafts.py``'s ``_transformers_draft``. The
  tables fitted on the validation split, left at their own window, the
  user's draft not checked for the tokenizer.
- ``export``: ``lm/hf_export.py``. The fold's sign, the rounding bound
  without the LayerNorm's bias, the bound over columns, the two block
  norms swapped, GPT-2's tanh GELU, the tokenizer without its decoder.

Same format as tools/mutants.py (:class:`mutants.Mutant`); ids ``tf-NN``;
``python tools/mutate.py --set transformers --list`` locates every snippet.
"""

from __future__ import annotations

from mutants import Mutant

M = Mutant

MUTANTS: tuple[Mutant, ...] = (
    # --- lm/hf.py: the cache ------------------------------------------------------------------
    M(
        "tf-01",
        "hf",
        "crop removes one position too many (count off by one)",
        "self.kv.crop(n - self._valid)",
        "self.kv.crop(n - self._valid - 1)",
    ),
    M(
        "tf-02",
        "hf",
        "crop's sign: the count removed passed positive (transformers keeps that many)",
        "self.kv.crop(n - self._valid)",
        "self.kv.crop(self._valid - n)",
    ),
    M(
        "tf-03",
        "hf",
        "valid count not updated after a crop (a second truncate crops from the old length)",
        "                self._valid = n\n",
        "                pass\n",
    ),
    M(
        "tf-04",
        "hf",
        "uncroppable cache dropped but the kept tokens counted valid: never re-read",
        "self.kv, self._valid = None, 0",
        "self.kv, self._valid = None, n",
    ),
    M(
        "tf-05",
        "hf",
        "the tokens recorded are the fed ones: a re-read records the kept tokens twice",
        "cache.tokens.extend(idx[0].tolist())",
        "cache.tokens.extend(feed[0].tolist())",
    ),
    M(
        "tf-06",
        "hf",
        "after a re-read the logits of the first T fed positions are returned",
        "return logits[:, -T:].float()",
        "return logits[:, :T].float()",
    ),
    M(
        "tf-07",
        "hf",
        "window not capped at MAX_WINDOW (a long-context model read whole)",
        "HFShape(int(hf.config.vocab_size), min(positions, MAX_WINDOW))",
        "HFShape(int(hf.config.vocab_size), positions)",
    ),
    # --- lm/hf.py: Conv1D -> Linear ---------------------------------------------------------------
    M(
        "tf-08",
        "hf",
        "Conv1D's weight reshaped to (out, in) instead of transposed",
        "linear.weight.copy_(module.weight.t())",
        "linear.weight.copy_(module.weight.reshape(nf, nx))",
    ),
    M(
        "tf-09",
        "hf",
        "Conv1D's bias not copied (the Linear keeps its random init)",
        "                    linear.bias.copy_(module.bias)\n",
        "                    pass\n",
    ),
    # --- lm/hf.py: the text -----------------------------------------------------------------------
    M(
        "tf-10",
        "hf",
        "text file split reversed: the first 1/7 trains, the last 6/7 validates",
        "cut = round(len(text) * TRAIN_SHARE)",
        "cut = round(len(text) * (1 - TRAIN_SHARE))",
    ),
    M(
        "tf-11",
        "hf",
        "an id equal to vocab_size let through by ModelText.encode",
        "bad = [t for t in ids if not 0 <= t < vocab_size]",
        "bad = [t for t in ids if not 0 <= t <= vocab_size]",
    ),
    M(
        "tf-12",
        "hf",
        "model_text gives the bundled character corpus for a transformers model too",
        "return text if isinstance(text, ModelText) else _text.load_corpus()",
        "return _text.load_corpus()",
    ),
    M(
        "tf-13",
        "hf",
        "encode_text adds the tokenizer's special tokens (a BOS in front on Llama)",
        "return torch.tensor(model.tokenizer(text, add_special_tokens=False)",
        "return torch.tensor(model.tokenizer(text, add_special_tokens=True)",
    ),
    # --- lm/hf.py: the identity -------------------------------------------------------------------
    M(
        "tf-14",
        "hf",
        "digest includes the tokenizer's JSON files",
        'if p.is_file() and (p.name == "config.json" or p.suffix in WEIGHT_SUFFIXES)',
        'if p.is_file() and (p.name == "config.json" or p.suffix in WEIGHT_SUFFIXES + (".json",))',
    ),
    M(
        "tf-15",
        "hf",
        "a weight suffix missing: .bin (pytorch_model.bin) not digested",
        'WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")',
        'WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth")',
    ),
    M(
        "tf-16",
        "hf",
        "a folder with a config.json and no weights gets a digest",
        'if "config.json" not in names or len(names) < 2:',
        'if "config.json" not in names:',
    ),
    # --- lm/hf.py: the refusals -------------------------------------------------------------------
    M(
        "tf-17",
        "hf",
        "a tokenizer one token larger than the model's vocabulary let through",
        "    if len(tokenizer) > vocab:\n",
        "    if len(tokenizer) > vocab + 1:\n",
    ),
    M(
        "tf-18",
        "hf",
        "the causal-LM refusal loosened: any model type goes on to AutoModelForCausalLM",
        "if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:",
        "if not config.model_type:",
    ),
    M(
        "tf-19",
        "hf",
        "check_same_vocabulary compares the tokenizers' sizes, not their token/id pairs",
        "    if ours != theirs:\n",
        "    if len(ours) != len(theirs):\n",
    ),
    # --- lm/anatomy.py ----------------------------------------------------------------------------
    M(
        "tf-20",
        "anatomy",
        "feed-forward input may be an attention matrix named 'attn' (only 'attention' excluded)",
        'and not any(a in n for a in ("attn", "attention"))',
        'and not any(a in n for a in ("attention",))',
    ),
    M(
        "tf-21",
        "anatomy",
        "the last block's first norm taken for its last",
        'f"{blocks_name}.{last}.{norms[-1]}"',
        'f"{blocks_name}.{last}.{norms[0]}"',
    ),
    M(
        "tf-22",
        "anatomy",
        "the first norm outside the blocks taken for the final one",
        "finals[-1]\n    )",
        "finals[0]\n    )",
    ),
    M(
        "tf-23",
        "anatomy",
        "the last block's index off by one (the one before the last)",
        "    last = len(blocks) - 1\n",
        "    last = len(blocks) - 2\n",
    ),
    # --- lm/counts.py -----------------------------------------------------------------------------
    M(
        "tf-24",
        "counts",
        "add-alpha unigram's denominator without the V: N + alpha",
        "return (counts + alpha) / (counts.sum() + alpha * vocab_size)",
        "return (counts + alpha) / (counts.sum() + alpha)",
    ),
    M(
        "tf-25",
        "counts",
        "row totals count every token, the last one (which has no successor) too",
        "totals = torch.bincount(tokens[:-1], minlength=vocab_size).double()",
        "totals = torch.bincount(tokens, minlength=vocab_size).double()",
    ),
    M(
        "tf-26",
        "counts",
        "sparse rows' denominator count(a, .) + alpha (the V dropped)",
        "denom = self.totals[flat] + alpha * V  # (N,) float64",
        "denom = self.totals[flat] + alpha  # (N,) float64",
    ),
    M(
        "tf-27",
        "counts",
        "dense count table transposed (cell (b, a) holds count(a, b))",
        "table[rows * V + self.nexts] = self.counts",
        "table[self.nexts * V + rows] = self.counts",
    ),
    # --- lm/ngram.py: the large-vocabulary paths --------------------------------------------------
    M(
        "tf-28",
        "ngram-tf",
        "dense/sparse threshold off by one: a vocabulary of exactly DENSE_MAX_VOCAB goes sparse",
        "        if V <= DENSE_MAX_VOCAB:\n",
        "        if V < DENSE_MAX_VOCAB:\n",
    ),
    M(
        "tf-29",
        "ngram-tf",
        "sparse bigram rows smoothed with the default alpha, not the one fitted",
        "return self.pairs.log_rows(prev, self.alpha)",
        "return self.pairs.log_rows(prev, BIGRAM_ALPHA)",
    ),
    M(
        "tf-30",
        "ngram-tf",
        "Unigram's vocabulary taken from the tokens seen (max + 1), not vocab_size",
        "return cls(add_alpha_unigram(tokens, V, alpha))",
        "return cls(add_alpha_unigram(tokens, int(tokens.max()) + 1, alpha))",
    ),
    M(
        "tf-31",
        "ngram-tf",
        "n-gram memo bounded in contexts, not in floats (unbounded memory on a large vocabulary)",
        "if (len(self._memo) + 1) * self.config.vocab_size > MEMO_MAX_FLOATS:",
        "if len(self._memo) + 1 > MEMO_MAX_FLOATS:",
    ),
    # --- speculative/drafts.py: _transformers_draft -----------------------------------------------
    M(
        "tf-32",
        "drafts-tf",
        "a transformers target's table drafts fitted on its validation split",
        ".fit(target.text.train, vocab_size=V)",
        ".fit(target.text.val, vocab_size=V)",
    ),
    M(
        "tf-33",
        "drafts-tf",
        "the table drafts keep their own window (128), not the target's",
        "table.config = TableConfig(V, T)  # decoded in the target's window",
        "table.config = TableConfig(V, table.config.block_size)",
    ),
    M(
        "tf-34",
        "drafts-tf",
        "the user's draft not checked for the target's tokenizer",
        "    check_same_vocabulary(target, draft)\n    return draft",
        "    return draft",
    ),
    # --- lm/hf_export.py --------------------------------------------------------------------------
    M(
        "tf-35",
        "export",
        "head-bias fold with the wrong sign (ln_f.bias = b - d)",
        '(sd["ln.bias"].to(torch.float64) + fold.d)',
        '(sd["ln.bias"].to(torch.float64) - fold.d)',
    ),
    M(
        "tf-36",
        "export",
        "rounding bound of the fold without the LayerNorm's bias (|e| = u |d|)",
        "e = FLOAT32_UNIT_ROUNDOFF * (ln_bias.detach().to(torch.float64) + d).abs()",
        "e = FLOAT32_UNIT_ROUNDOFF * d.abs()",
    ),
    M(
        "tf-37",
        "export",
        "HeadBiasFold.bound over the columns of W' - W, not its rows",
        "(changed - self.weight).norm(dim=1).max()",
        "(changed - self.weight).norm(dim=0).max()",
    ),
    M(
        "tf-38",
        "export",
        "state-dict mapping: the two block norms swapped (ln1 -> ln_2, ln2 -> ln_1)",
        '"ln1": "ln_1",\n        "qkv": "attn.c_attn",\n        "proj": "attn.c_proj",\n        "ln2": "ln_2",',
        '"ln1": "ln_2",\n        "qkv": "attn.c_attn",\n        "proj": "attn.c_proj",\n        "ln2": "ln_1",',
    ),
    M(
        "tf-39",
        "export",
        "GPT-2's tanh GELU (gelu_new) instead of the exact one",
        'activation_function="gelu",',
        'activation_function="gelu_new",',
    ),
    M(
        "tf-40",
        "export",
        "the character tokenizer without its Fuse decoder (decode joins with spaces)",
        "    tok.decoder = decoders.Fuse()\n",
        "",
    ),
)
