# ruff: noqa: E501  (a mutant's snippet is quoted whole, as it stands in src/)
"""The generator-kit bug set (``tools/mutate.py --set generator-kit``): the
decoding loop "in one line".

Written from ``src/`` and ``docs/`` alone (docs/checks.md's generator
sections and examples, docs/commands.md), before any file under ``tests/``
was opened, by a helper who did not write those tests. Targets:
``assert_generator`` (checks/speculative.py, re-exported by
checks/assertions.py); the adapters ``from_logits_loop``,
``from_logits_step`` and ``from_model_pruner`` (checks/model_adapters.py)
and ``forced_uniforms`` (checks/adapters.py); ``aftertrain check generator``
(cli/check.py, cli/check_common.py); ``check_generator``'s one torch thread
and progress lines (checks/generator_battery.py,
``rule_battery.one_torch_thread``); the ``(at file:line)`` of a pruner's
and a quantizer's exception lines (``rule_battery.describe_exception``,
checks/prune.py, checks/quant_guarantees.py).

Each is a slip that changes what the adapters hand the user's code, what
the check concludes, or what the command says: a seed not forwarded, the
global state not restored, arguments in the wrong order, an off-by-one
cut, a mask read from the wrong attribute, a comparison inverted, a
thread count not restored, a progress interval wrong, options swapped, a
bound off by one, a raise turned into a return, the wrong frame named.

Same format as tools/mutants.py (:class:`mutants.Mutant`); ids
``gk-<area>-NN``; ``python tools/mutate.py --set generator-kit --list``
locates every snippet.
"""

from __future__ import annotations

from mutants import Mutant

M = Mutant

MUTANTS: tuple[Mutant, ...] = (
    # --- checks/model_adapters.py: from_logits_loop / from_logits_step ---------------
    M(
        "gk-loop-01",
        "gk-adapters",
        "from_logits_loop seeds the global generator with 0, not the seed drawn from the check's generator (every call draws the same tokens)",
        "            torch.manual_seed(seed)\n            out = loop(",
        "            torch.manual_seed(0)\n            out = loop(",
    ),
    M(
        "gk-loop-02",
        "gk-adapters",
        "from_logits_loop drops fork_rng: the caller's global generator is left reseeded",
        "        with torch.random.fork_rng(devices=[]):\n            torch.manual_seed(seed)\n            out = loop(_LogitsOf(target), _LogitsOf(draft), prompt[None].clone(), n_new, k, temperature)",
        "        if True:\n            torch.manual_seed(seed)\n            out = loop(_LogitsOf(target), _LogitsOf(draft), prompt[None].clone(), n_new, k, temperature)",
    ),
    M(
        "gk-loop-03",
        "gk-adapters",
        "from_logits_loop hands the loop the draft as target and the target as draft",
        "out = loop(_LogitsOf(target), _LogitsOf(draft), prompt[None].clone(), n_new, k, temperature)",
        "out = loop(_LogitsOf(draft), _LogitsOf(target), prompt[None].clone(), n_new, k, temperature)",
    ),
    M(
        "gk-loop-04",
        "gk-adapters",
        "from_logits_loop hands k where n_new goes and n_new where k goes",
        "out = loop(_LogitsOf(target), _LogitsOf(draft), prompt[None].clone(), n_new, k, temperature)",
        "out = loop(_LogitsOf(target), _LogitsOf(draft), prompt[None].clone(), k, n_new, temperature)",
    ),
    M(
        "gk-loop-05",
        "gk-adapters",
        "from_logits_loop no longer notices a loop that changed the prompt (compares the returned prefix with itself)",
        "if not torch.equal(out[: prompt.numel()].cpu(), prompt):",
        "if not torch.equal(out[: prompt.numel()].cpu(), out[: prompt.numel()].cpu()):",
    ),
    M(
        "gk-loop-06",
        "gk-adapters",
        "model(input_ids=ids).logits fails: the wrapper's parameter renamed, so the keyword form is a TypeError",
        "    def __call__(self, input_ids: torch.Tensor, **kwargs) -> SimpleNamespace:\n        return SimpleNamespace(logits=self.model(input_ids))",
        "    def __call__(self, ids: torch.Tensor, **kwargs) -> SimpleNamespace:\n        return SimpleNamespace(logits=self.model(ids))",
    ),
    M(
        "gk-loop-07",
        "gk-adapters",
        "the wrapped model's other attributes (config) are no longer forwarded",
        'return getattr(self.__dict__["model"], name)',
        "raise AttributeError(name)",
    ),
    M(
        "gk-step-01",
        "gk-adapters",
        "from_logits_step keeps one token past n_new when the last round overshoots (cut off by one)",
        "        return ids[:, :end]",
        "        return ids[:, : end + 1]",
    ),
    M(
        "gk-step-02",
        "gk-adapters",
        "from_logits_step hands every round k = 1, not the check's k",
        "out = step(target, draft, ids, k, temperature)",
        "out = step(target, draft, ids, 1, temperature)",
    ),
    M(
        "gk-step-03",
        "gk-adapters",
        "from_logits_step misses a change to the last token of the text it handed (compares one token short)",
        "if not torch.equal(out[:, : ids.shape[1]], ids):",
        "if not torch.equal(out[:, : ids.shape[1] - 1], ids[:, :-1]):",
    ),
    # --- checks/model_adapters.py: from_model_pruner ----------------------------------
    M(
        "gk-pruner-01",
        "gk-adapters",
        "from_model_pruner reads the mask from weight_orig (the unpruned weight) instead of weight_mask",
        'mask = getattr(layer, "weight_mask", None)',
        'mask = getattr(layer, "weight_orig", None)',
    ),
    M(
        "gk-pruner-02",
        "gk-adapters",
        "from_model_pruner's fallback mask inverted: weight == 0 read as kept",
        "masks[name] = (layer.weight != 0 if mask is None else mask.bool()).detach()",
        "masks[name] = (layer.weight == 0 if mask is None else mask.bool()).detach()",
    ),
    M(
        "gk-pruner-03",
        "gk-adapters",
        "from_model_pruner ignores weight_mask and always reads weight != 0 (a weight that was 0 before pruning reads as removed even under torch.nn.utils.prune)",
        "masks[name] = (layer.weight != 0 if mask is None else mask.bool()).detach()",
        "masks[name] = (layer.weight != 0).detach()",
    ),
    M(
        "gk-pruner-04",
        "gk-adapters",
        "from_model_pruner keeps the trailing .weight in the module path (named_modules gives blocks.0.qkv.weight)",
        'path = name.removesuffix(".weight")',
        "path = name",
    ),
    M(
        "gk-pruner-05",
        "gk-adapters",
        "from_model_pruner wraps the kit's tensor without a copy: a pruner zeroing in place modifies the weights it was given",
        "layer.weight = nn.Parameter(w.clone())",
        "layer.weight = nn.Parameter(w)",
    ),
    # --- checks/adapters.py: forced_uniforms -----------------------------------------
    M(
        "gk-forced-01",
        "gk-adapters",
        "forced_uniforms' multinomial skips torch's validation (a negative or all-zero row no longer raises)",
        "        real_multinomial(probs, num_samples)\n",
        "",
    ),
    M(
        "gk-forced-02",
        "gk-adapters",
        "forced_uniforms' multinomial draws at the first u, not at v",
        "inverse_cdf(probs.reshape(-1, probs.shape[-1]), v.reshape(-1))",
        "inverse_cdf(probs.reshape(-1, probs.shape[-1]), u.reshape(len(v), -1)[:, 0])",
    ),
    # --- checks/speculative.py: assert_generator ------------------------------------
    M(
        "gk-assert-01",
        "gk-speculative",
        "assert_generator returns the report instead of raising on failure",
        "    check_generator(generate, target, draft, **kwargs).raise_for_failures()",
        "    return check_generator(generate, target, draft, **kwargs)",
    ),
    M(
        "gk-assert-02",
        "gk-speculative",
        "assert_generator drops the target and draft it was given (always the toys)",
        "    check_generator(generate, target, draft, **kwargs).raise_for_failures()",
        "    check_generator(generate, **kwargs).raise_for_failures()",
    ),
    # --- checks/generator_battery.py and rule_battery.one_torch_thread --------------
    M(
        "gk-thread-01",
        "gk-battery",
        "one_torch_thread leaves torch at one thread (the count is not restored)",
        "        torch.set_num_threads(threads)",
        "        torch.set_num_threads(1)",
        file="checks/rule_battery.py",
    ),
    M(
        "gk-thread-02",
        "gk-battery",
        "check_generator runs generate at the caller's thread count (one_torch_thread dropped)",
        "    with rule_battery.one_torch_thread():\n        for law_target, law_draft, temperature, ti, k, label in laws:",
        "    with torch.inference_mode(False):\n        for law_target, law_draft, temperature, ti, k, label in laws:",
    ),
    M(
        "gk-progress-01",
        "gk-battery",
        "the in-law progress interval is 6 s, past the promised line every 5 s",
        "PROGRESS_EVERY_S = 2.0",
        "PROGRESS_EVERY_S = 6.0",
    ),
    M(
        "gk-progress-02",
        "gk-battery",
        "the in-law progress clock is never restarted: once 2 s have passed, a line after every run",
        '            last = time.perf_counter()\n            say(f"check_generator: joint law T={temperature:g} k={k}, {i}/{runs} runs, {last - start:.1f} s")',
        '            say(f"check_generator: joint law T={temperature:g} k={k}, {i}/{runs} runs, {time.perf_counter() - start:.1f} s")',
    ),
    M(
        "gk-progress-03",
        "gk-cli",
        "the command's heartbeat is not told of the kit's own lines (the interval does not start again)",
        "                        at(line, written=True)",
        "                        at(line)",
    ),
    # --- cli/check.py: aftertrain check generator -----------------------------------
    M(
        "gk-cli-01",
        "gk-cli",
        "--loop and --step swapped: --loop wraps FUNC as a step, --step as a loop",
        "adapters.from_logits_loop(fn) if args.loop else adapters.from_logits_step(fn) if args.step else fn",
        "adapters.from_logits_step(fn) if args.loop else adapters.from_logits_loop(fn) if args.step else fn",
    ),
    M(
        "gk-cli-02",
        "gk-cli",
        "--seed not forwarded to check_generator (always seed 0)",
        "check_generator(generate, runs=args.runs, seed=args.seed, progress=progress)",
        "check_generator(generate, runs=args.runs, progress=progress)",
    ),
    M(
        "gk-cli-03",
        "gk-cli",
        "--runs' least off by one: 10, documented and check_generator's least, is refused",
        "MIN_RUNS, MAX_RUNS = 10, 100_000",
        "MIN_RUNS, MAX_RUNS = 11, 100_000",
    ),
    M(
        "gk-cli-04",
        "gk-cli",
        "--runs not forwarded: the command always runs the default 600",
        "check_generator(generate, runs=args.runs, seed=args.seed, progress=progress)",
        "check_generator(generate, seed=args.seed, progress=progress)",
    ),
    M(
        "gk-cli-05",
        "gk-cli",
        "a failed check exits 0 (the exit status says the kit ran, not that it passed)",
        "status = 0 if all(r.passed for r in reports) else 1",
        "status = 0 if reports else 1",
    ),
    # --- (at file:line) on exception lines ------------------------------------------
    M(
        "gk-where-01",
        "gk-where",
        "describe_exception names the outermost frame outside the kit, not the innermost (the user's caller, not the line that raised)",
        "for frame in reversed(traceback.extract_tb(exc.__traceback__)):",
        "for frame in traceback.extract_tb(exc.__traceback__):",
    ),
    M(
        "gk-where-02",
        "gk-where",
        "a pruner's exception line loses its (at file:line)",
        'error = f"raised {describe_exception(error)}"',
        'error = f"raised {type(error).__name__}: {error}"',
    ),
    M(
        "gk-where-03",
        "gk-where",
        "a quantizer's output row for an exception loses its (at file:line)",
        'detail=f"raised {describe_exception(out)}"',
        'detail=f"raised {type(out).__name__}: {out}"',
    ),
)
