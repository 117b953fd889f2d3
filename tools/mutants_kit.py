# ruff: noqa: E501  (a mutant's snippet is quoted whole, as it stands in src/)
"""The third independent bug set (``tools/mutate.py --set kit``): the
checks kit, the reuse of stored parts, the ledger file, the compare and the
CLI.

Written from ``src/`` alone (and docs/mutation.md, tools/mutate.py, the two
earlier sets), before any file under ``tests/`` was opened, by a helper who
did not write those tests; only the test files' names were listed, to pick
each tag's subset in ``SUBSETS``. Targets: ``checks/`` (schemes, the
quantizer's guarantees, the quant battery, the pruner's patterns and checks,
the exact probes and the zero-residual search, the adapters, the assertions,
the speculative entry points), ``ledger/reuse.py``, ``ledger/state.py``,
``claims/ledgerfile.py``, ``timing/compare.py`` and ``cli/`` (check.py,
__init__.py, report.py). Each is a slip that changes a decision, a figure or
an accepted input silently: off-by-one, a bound inclusive/exclusive, a wrong
comparison, a dropped validation, a wrong default, a field written or read
under the wrong name, a wrong axis or dtype, a branch removed.

Same format as tools/mutants.py (:class:`mutants.Mutant`); ids
``r3-<area>-NN``; ``python tools/mutate.py --set kit --list`` locates
every snippet.
"""

from __future__ import annotations

from mutants import Mutant

M = Mutant

MUTANTS: tuple[Mutant, ...] = (
    # --- checks/schemes.py ---------------------------------------------------------------
    M(
        "r3-schemes-01",
        "r3-quant",
        "PerAxis refuses axis -1 (documented as allowed)",
        "self.axis not in (0, 1, -1)",
        "self.axis not in (0, 1)",
    ),
    M(
        "r3-schemes-02",
        "r3-quant",
        "PerAxis(-1) groups by rows (only axis 1 read as columns)",
        "return (r, rows) if granularity.axis == 0 else (c, cols)",
        "return (c, cols) if granularity.axis == 1 else (r, rows)",
    ),
    M(
        "r3-schemes-03",
        "r3-quant",
        "PerGroup accepts group_size 0",
        "or self.group_size < 1:",
        "or self.group_size < 0:",
    ),
    M(
        "r3-schemes-04",
        "r3-quant",
        "groups per row rounded down (a ragged last group numbered into the next row)",
        "per_row = -(-cols // granularity.group_size)",
        "per_row = cols // granularity.group_size",
    ),
    M(
        "r3-schemes-05",
        "r3-quant",
        "SYMMETRIC_NO_CLIPPING_ERR divides the negative side by -qmax, not qmin",
        "lo.clamp_max(0) / qmin)",
        "lo.clamp_max(0) / -qmax)",
    ),
    M(
        "r3-schemes-06",
        "r3-quant",
        "ASYMMETRIC zero point not rounded to an integer",
        "zero = (qmin - torch.round(lo.clamp_max(0) / scale)).clamp(qmin, qmax)",
        "zero = (qmin - lo.clamp_max(0) / scale).clamp(qmin, qmax)",
    ),
    M(
        "r3-schemes-07",
        "r3-quant",
        "float-shift code range one code too wide",
        "return 0, 2**self.bits - 1",
        "return 0, 2**self.bits",
    ),
    M(
        "r3-schemes-08",
        "r3-quant",
        "scale_floor 1 accepted (bound made inclusive)",
        "or not SCALE_FLOOR <= self.scale_floor < 1",
        "or not SCALE_FLOOR <= self.scale_floor <= 1",
    ),
    # r3-schemes-09: the non-idempotent mappings are SYMMETRIC_FULL, ASYMMETRIC and ASYMMETRIC_FREE_ZERO;
    # the bug drops ASYMMETRIC from them, so its round trip is judged idempotent.
    M(
        "r3-schemes-09",
        "r3-quant",
        "ASYMMETRIC judged idempotent too",
        "return self not in (Mapping.SYMMETRIC_FULL, Mapping.ASYMMETRIC, Mapping.ASYMMETRIC_FREE_ZERO)",
        "return self not in (Mapping.SYMMETRIC_FULL, Mapping.ASYMMETRIC_FREE_ZERO)",
    ),
    # --- checks/quant_guarantees.py, quant_reference.py (r3-guar-01, 03), quant_output.py (04, 05) ---
    # r3-guar-01: `judged` (checks/quant_reference.py) takes a nonzero group whose raw scale is at
    # least the floor, any nonzero group when a floor is declared, and a normal group whose raw scale
    # is 0; the bug drops the declared-floor term alone, so groups at a declared floor go unjudged.
    M(
        "r3-guar-01",
        "r3-quant",
        "a declared scale floor is not judged (groups at the floor exempt)",
        "(p.raw >= SCALE_FLOOR) | (scheme.scale_floor > SCALE_FLOOR) | ((p.raw == 0) & normal)",
        "(p.raw >= SCALE_FLOOR) | ((p.raw == 0) & normal)",
    ),
    # r3-guar-02: a refusal is checks/refusals.is_refusal (a raise or assert of the judged code with
    # a message) on ragged groups only; the bug drops the ragged-groups condition, so any refusal passes.
    M(
        "r3-guar-02",
        "r3-quant",
        "any exception with a message is a refusal, not only on ragged groups",
        "if isinstance(out, Exception) and ragged and is_refusal(out):",
        "if isinstance(out, Exception) and is_refusal(out):",
    ),
    M(
        "r3-guar-03",
        "r3-quant",
        "a 2-tuple (w_hat, codes) accepted as output",
        "if len(out) not in (3, 4):",
        "if len(out) not in (2, 3, 4):",
    ),
    # r3-guar-04: the grid row (checks/quant_output._check_grid) tests each code against the mapping's
    # range widened by a declared scale precision's reach; the bug drops the range test.
    M(
        "r3-guar-04",
        "r3-quant",
        "grid row ignores codes outside the mapping range",
        "bad = keep & ~((off <= slack) & (k >= lo - reach) & (k <= hi + reach))",
        "bad = keep & ~(off <= slack)",
    ),
    M(
        "r3-guar-05",
        "r3-quant",
        "unsigned codes allowed one past 2**bits - 1",
        "fits = (codes >= 0) & (codes <= 2**scheme.bits - 1)",
        "fits = (codes >= 0) & (codes <= 2**scheme.bits)",
    ),
    M(
        "r3-guar-06",
        "r3-quant",
        "the zero-point integrality checked for the float shift, not ASYMMETRIC",
        "if scheme.mapping is Mapping.ASYMMETRIC and out.zero is not None:",
        "if scheme.mapping is Mapping.ASYMMETRIC_FLOAT_SHIFT and out.zero is not None:",
    ),
    M(
        "r3-guar-07",
        "r3-quant",
        "extremes allowed a whole code off, not half",
        "miss = ~((got - want).abs() - 0.5 - ref.grid_slack()",
        "miss = ~((got - want).abs() - 1.0 - ref.grid_slack()",
    ),
    M(
        "r3-guar-08",
        "r3-quant",
        "sign flips not checked by the zero row",
        "sign_bad = ~(torch.sign(w_hat) * torch.sign(w) >= 0)",
        "sign_bad = torch.zeros_like(zero_bad)",
    ),
    M(
        "r3-guar-09",
        "r3-quant",
        "odd row compares magnitudes only",
        "bad = neg.w_hat != -out.w_hat",
        "bad = neg.w_hat.abs() != out.w_hat.abs()",
    ),
    M(
        "r3-guar-10",
        "r3-quant",
        "idempotence re-quantizes w instead of w_hat",
        "again = call_quantizer(quantize, out.w_hat.float(), scheme)",
        "again = call_quantizer(quantize, ref.w.float(), scheme)",
    ),
    # --- checks/quant_battery.py -----------------------------------------------------------
    M(
        "r3-qbat-01",
        "r3-quant",
        "the group battery refuses exactly MAX_BATTERY_GROUP",
        "if n > MAX_BATTERY_GROUP:",
        "if n >= MAX_BATTERY_GROUP:",
    ),
    M(
        "r3-qbat-02",
        "r3-quant",
        "heavy-tailed case loses its negative extreme",
        "heavy[2, 5] = -40.0",
        "heavy[2, 5] = 40.0",
    ),
    # --- checks/patterns.py ----------------------------------------------------------------
    M("r3-pat-01", "r3-prune", "NM accepts n == m", "if self.n >= self.m:", "if self.n > self.m:"),
    M(
        "r3-pat-02",
        "r3-prune",
        "slice norms taken along dim instead of across it",
        "ord=self.norm, dim=1 - self.dim)",
        "ord=self.norm, dim=self.dim)",
    ),
    M(
        "r3-pat-03",
        "r3-prune",
        "NM sparsity as n/m (right only for 2:4)",
        "return 1 - self.n / self.m",
        "return self.n / self.m",
    ),
    M(
        "r3-pat-04",
        "r3-prune",
        "Structured refuses norm=inf",
        "self.norm not in (1, 2, math.inf)",
        "self.norm not in (1, 2)",
    ),
    # --- checks/prune.py -------------------------------------------------------------------
    M(
        "r3-prune-01",
        "r3-prune",
        "pruner handed the weights themselves (no copy): modification unseen",
        "copies = {n: w.clone() for n, w in weights.items()}",
        "copies = dict(weights)",
    ),
    M(
        "r3-prune-02",
        "r3-prune",
        "nested default True (a random pruner checked for nesting)",
        "nested = magnitude if nested is None else nested",
        "nested = True if nested is None else nested",
    ),
    M(
        "r3-prune-03",
        "r3-prune",
        "sparsities not sorted (nesting judged in the given order)",
        "sparsities = sorted(DEFAULT_SPARSITIES if sparsities is None else sparsities)",
        "sparsities = list(DEFAULT_SPARSITIES if sparsities is None else sparsities)",
    ),
    M(
        "r3-prune-04",
        "r3-prune",
        "NM cases may be 1-D (only Structured needs 2-D)",
        "two_d = not isinstance(pattern, Unstructured)",
        "two_d = isinstance(pattern, Structured)",
    ),
    M(
        "r3-prune-05",
        "r3-prune",
        "a pruner may refuse when only every weight has ragged rows",
        "return isinstance(pattern, NM) and any(w.shape[-1] % pattern.m for w in weights.values())",
        "return isinstance(pattern, NM) and all(w.shape[-1] % pattern.m for w in weights.values())",
    ),
    M(
        "r3-prune-06",
        "r3-prune",
        "NM count only fails blocks keeping fewer than n",
        "bad = int((kept != pattern.n).sum())",
        "bad = int((kept < pattern.n).sum())",
    ),
    # r3-prune-07: the count is judged by the pattern's declared Counting (checks/prune_counts.count_row,
    # from checks/prune_guarantees._check_count); the bug's per-layer branch judges by FLOOR whatever is declared.
    M(
        "r3-prune-07",
        "r3-prune",
        "per-layer count truncates instead of rounding",
        'row = count_row(f"{where}, {name}", int((~masks[name]).sum()), w.numel(), s, pattern.counting)',
        'row = count_row(f"{where}, {name}", int((~masks[name]).sum()), w.numel(), s, type(pattern.counting)(type(pattern.rounding).FLOOR, pattern.keep_at_least))',
    ),
    M(
        "r3-prune-08",
        "r3-prune",
        "unstructured magnitude fails ties (strict comparison)",
        "        ok = removed <= kept\n",
        "        ok = removed < kept\n",
    ),
    M(
        "r3-prune-09",
        "r3-prune",
        "nesting checked in the wrong direction",
        "bad = sum(int((~m0[n] & masks[n]).sum()) for n in weights)",
        "bad = sum(int((m0[n] & ~masks[n]).sum()) for n in weights)",
    ),
    # --- checks/prune_battery.py (moved out of checks/prune.py) ------------------------------
    M(
        "r3-prune-10",
        "r3-prune",
        "the NM battery refuses exactly MAX_BATTERY_BLOCK",
        "if m > MAX_BATTERY_BLOCK:",
        "if m >= MAX_BATTERY_BLOCK:",
    ),
    # --- checks/rule_exact.py --------------------------------------------------------------
    M(
        "r3-exact-01",
        "r3-exact",
        "probe margin 1 ulp instead of 4",
        "return max(4 * torch.finfo(dtype).eps, 1e-12)",
        "return max(torch.finfo(dtype).eps, 1e-12)",
    ),
    M(
        "r3-exact-02",
        "r3-exact",
        "zero-residual search tries the margin only (no ulp steps)",
        "for raise_by in (margin(dtype), *(k * eps for k in _SEARCH_ULPS)):",
        "for raise_by in (margin(dtype),):",
    ),
    M(
        "r3-exact-03",
        "r3-exact",
        "zero-residual search accepts P/Q at or above the largest uniform",
        "if bool((P <= Q).all()) and float(P[x] / Q[x]) < below_one(dtype):",
        "if bool((P <= Q).all()):",
    ),
    M(
        "r3-exact-04",
        "r3-exact",
        "a probe checks the accepted count only, not the token",
        "a == probe.accepted and t in probe.tokens,",
        "a == probe.accepted,",
    ),
    M(
        "r3-exact-05",
        "r3-exact",
        "zero-residual batch row accepts token 0 (outside p's support)",
        "a == 0 and t in (1, 2, 3),",
        "a == 0 and t in (0, 1, 2, 3),",
    ),
    M(
        "r3-exact-06",
        "r3-exact",
        "batch consistency never compares the last row",
        "for i in range(inputs[2].shape[0]):",
        "for i in range(inputs[2].shape[0] - 1):",
    ),
    M(
        "r3-exact-07",
        "r3-exact",
        "the rule's renormalise attribute ignored",
        'renormalise = renormalise if renormalise is not None else getattr(rule, "renormalise", None)',
        "renormalise = renormalise",
    ),
    # --- checks/adapters.py ----------------------------------------------------------------
    M(
        "r3-adapt-01",
        "r3-adapters",
        "inverse_cdf takes the first cumsum >= v*sum (a zero-mass cell at v = 0)",
        "return torch.searchsorted(cdf, x, right=True).squeeze(-1)",
        "return torch.searchsorted(cdf, x, right=False).squeeze(-1)",
        file="checks/adapters.py",
    ),
    M(
        "r3-adapt-02",
        "r3-adapters",
        "inverse_cdf accepts v = 1",
        "not bool(((v >= 0) & (v < 1)).all())",
        "not bool(((v >= 0) & (v <= 1)).all())",
    ),
    M(
        "r3-adapt-03",
        "r3-adapters",
        "negative weights accepted by the probs check",
        "bad = ~torch.isfinite(probs).all(-1) | (probs < 0).any(-1) | ~(probs.double().sum(-1) > 0)",
        "bad = ~torch.isfinite(probs).all(-1) | ~(probs.double().sum(-1) > 0)",
    ),
    M(
        "r3-adapt-04",
        "r3-adapters",
        "exponential race multiplies by E instead of dividing",
        "return torch.argmax(probs.double() / e, dim=-1)",
        "return torch.argmax(probs.double() * e, dim=-1)",
    ),
    M(
        "r3-adapt-05",
        "r3-adapters",
        "inverse_cdf target not kept below the total (v near 1 indexes past V)",
        "x = torch.minimum(v.double().unsqueeze(-1) * total, torch.nextafter(total, torch.zeros_like(total)))",
        "x = v.double().unsqueeze(-1) * total",
    ),
    # --- checks/assertions.py --------------------------------------------------------------
    # r3-assert-01: exact mode's default draws the uniforms in the handed dtype
    # (checks/speculative.rule_reports, "bf16 battery uniforms"); float32
    # uniforms for bfloat16 are asked with uniforms=. The bug ignores that
    # request and draws bfloat16 uniforms where float32 were asked.
    M(
        "r3-assert-01",
        "r3-assertions",
        "exact mode draws uniforms in the handed dtype even when uniforms= asks another (bfloat16 uniforms)",
        "uniforms = dtype if uniforms is None else uniforms",
        "uniforms = dtype",
    ),
    M(
        "r3-assert-02",
        "r3-assertions",
        "assert_rule drops sequential",
        "rule, exact=exact, sequential=sequential, dtype=dtype, n=n, seed=seed, uniforms=uniforms",
        "rule, exact=exact, sequential=False, dtype=dtype, n=n, seed=seed, uniforms=uniforms",
    ),
    M(
        "r3-assert-03",
        "r3-assertions",
        "non-exact rule_reports ignores dtype",
        "return [check_rule(batched, n=n, seed=seed, dtype=dtype, progress=progress)]",
        "return [check_rule(batched, n=n, seed=seed, progress=progress)]",
    ),
    # --- checks/speculative.py -------------------------------------------------------------
    M(
        "r3-spec-01",
        "r3-speculative",
        "sequential leaves torch at one thread",
        "torch.set_num_threads(1)\n    try:\n        yield\n    finally:\n        torch.set_num_threads(threads)",
        "torch.set_num_threads(1)\n    try:\n        yield\n    finally:\n        pass",
    ),
    M(
        "r3-spec-02",
        "r3-speculative",
        "drawing_uniforms draws u in float64 whatever dtype says",
        "u = torch.rand(N, k, dtype=dtype)",
        "u = torch.rand(N, k, dtype=torch.float64)",
    ),
    M(
        "r3-spec-03",
        "r3-speculative",
        "check_rule accepts n one above MAX_N",
        'check_int("n", n, most=MAX_N,',
        'check_int("n", n, most=MAX_N + 1,',
    ),
    M(
        "r3-spec-04",
        "r3-speculative",
        "the rule is handed the drafts the judge reads (a rule may overwrite them)",
        "out = rule(P, Q, drafts.clone())",
        "out = rule(P, Q, drafts)",
    ),
    # --- ledger/reuse.py -------------------------------------------------------------------
    M(
        "r3-reuse-01",
        "r3-reuse",
        "a ledger is refused only when no test says whether it reads the model",
        "if not tests or any(t.reads_model is None for t in tests):",
        "if not tests or all(t.reads_model is None for t in tests):",
    ),
    M(
        "r3-reuse-02",
        "r3-reuse",
        "a second-hand ledger detected under the wrong key",
        '    if meta.get("model_free_from"):\n',
        '    if meta.get("model_free"):\n',
    ),
    M(
        "r3-reuse-03",
        "r3-reuse",
        "same code judged by the commit, not the tracked-code fingerprint",
        "if meta.get(WORKTREE) != here:",
        'if meta.get("commit") != runmeta.commit(root):',
    ),
    M(
        "r3-reuse-04",
        "r3-reuse",
        "a full run ledger accepted for a quick run",
        'if bool(meta.get("quick")) != quick:',
        'if meta.get("quick") and not quick:',
    ),
    # --- ledger/state.py -------------------------------------------------------------------
    M(
        "r3-state-01",
        "r3-state",
        "a later phase finding the model read does not override an earlier False",
        "        if reads:  # a phase may find",
        '        if reads and test["reads_model"] is None:  # a phase may find',
    ),
    M(
        "r3-state-02",
        "r3-state",
        "a timed teeth test becomes the timed part",
        "if TIMED_PROPERTY in props and test.part == Part.ASSERTIONS:",
        "if TIMED_PROPERTY in props:",
    ),
    M(
        "r3-state-03",
        "r3-state",
        "reuse takes every earlier table, not only the model-free ones",
        "        for name in earlier.model_free_tables:\n",
        "        for name in earlier.tables:\n",
    ),
    M(
        "r3-state-04",
        "r3-state",
        "reused tests not listed after this run's",
        "self._taken = frozenset(taken)",
        "self._taken = frozenset()",
    ),
    M(
        "r3-state-05",
        "r3-state",
        "model_free_from counts every test, not those taken",
        '"tests": len(taken),',
        '"tests": len(self.tests),',
        equivalent="its one caller (ledger/plugin.py, pytest_configure) calls reuse on a fresh Ledger, "
        "before any report: self.tests then holds exactly the tests taken",
    ),
    M(
        "r3-state-06",
        "r3-state",
        '"part not run" marked on holds only',
        "partly = self.not_run and self.verdict not in (SKIPPED, NOT_COVERED, NOT_DECIDED)",
        "partly = self.not_run and self.verdict == HOLDS",
    ),
    M(
        "r3-state-07",
        "r3-state",
        'a part whose tests were all skipped reads skipped, not "not run"',
        "part: (NOT_RUN if not [o for o in outcomes if o not in NOT_RAN] else claim_verdict(outcomes))",
        "part: (NOT_RUN if not outcomes else claim_verdict(outcomes))",
    ),
    M(
        "r3-state-08",
        "r3-state",
        "a table rewritten by a test that reads the model stays model-free",
        "                    if table in self.model_free_tables:\n                        self.model_free_tables.remove(table)\n",
        "",
    ),
    # --- claims/ledgerfile.py --------------------------------------------------------------
    M(
        "r3-lfile-01",
        "r3-ledgerfile",
        "a test's xfail_reason read from its reason",
        'xfail_reason=t.get("xfail_reason")',
        'xfail_reason=t.get("reason")',
    ),
    M(
        "r3-lfile-02",
        "r3-ledgerfile",
        "a test without a part reads as teeth",
        'part=Part(t.get("part", Part.ASSERTIONS))',
        'part=Part(t.get("part", Part.TEETH))',
    ),
    M(
        "r3-lfile-03",
        "r3-ledgerfile",
        "a claim's title read from its statement",
        'title=str(entry.get("title", ""))',
        'title=str(entry.get("statement", ""))',
    ),
    M(
        "r3-lfile-04",
        "r3-ledgerfile",
        "model_free_tables dropped on reading",
        "tuple(free),\n            source,",
        "(),\n            source,",
    ),
    M(
        "r3-lfile-05",
        "r3-ledgerfile",
        "a file without model_free_tables refused (optional field required)",
        'free = data.get("model_free_tables", [])',
        'free = data.get("model_free_tables")',
    ),
    # --- timing/compare.py -----------------------------------------------------------------
    M(
        "r3-compare-01",
        "r3-compare",
        "thread counts left out of the machine identity",
        'for key in ("cpu", "cores", "torch", "threads"):',
        'for key in ("cpu", "cores", "torch"):',
    ),
    M(
        "r3-compare-02",
        "r3-compare",
        "a flag only the machine now has is no difference",
        'if (only_stored or only_now) and stored["flags"] and now["flags"]:',
        'if only_stored and stored["flags"] and now["flags"]:',
    ),
    M(
        "r3-compare-03",
        "r3-compare",
        "improvement called on the median, not the interval high end",
        "elif n[2] < s[1] / threshold:",
        "elif n[0] < s[1] / threshold:",
    ),
    M(
        "r3-compare-04",
        "r3-compare",
        "same judged on the median alone",
        "elif s[1] / threshold <= n[1] and n[2] <= s[2] * threshold:",
        "elif s[1] / threshold <= n[0] <= s[2] * threshold:",
    ),
    M(
        "r3-compare-05",
        "r3-compare",
        "inconclusive read from the stored run's decisions",
        'for d in now[bench].get("decisions") or [])',
        'for d in stored[bench].get("decisions") or [])',
    ),
    M(
        "r3-compare-06",
        "r3-compare",
        "an interval with low > high accepted",
        "v > 0 for v in (median, low, high)) or not low <= high:",
        "v > 0 for v in (median, low, high)):",
    ),
    M(
        "r3-compare-07",
        "r3-compare",
        "threshold 1 accepted",
        "math.isfinite(threshold) and threshold > 1):",
        "math.isfinite(threshold) and threshold >= 1):",
    ),
    # --- cli/ ------------------------------------------------------------------------------
    # r3-cli-01/02: every whole-number option is cli/options.int_in (grouped=True
    # for check's --n/--seed); r3-cli-01 breaks the grouped options' upper bound,
    # r3-cli-02 the others' lower bound.
    M(
        "r3-cli-01",
        "r3-cli",
        "check rule --n/--seed upper bound exclusive (int_in, grouped)",
        "if not low <= v <= high:",
        "if not low <= v <= high - grouped:",
    ),
    M(
        "r3-cli-02",
        "r3-cli",
        "whole-number options refuse their lower bound (int_in, not grouped)",
        "if not low <= v <= high:",
        "if not low + (not grouped) <= v <= high:",
    ),
    M("r3-cli-03", "r3-cli", "--dropout 1 accepted", "lambda v: 0 <= v < 1)", "lambda v: 0 <= v <= 1)"),
    M(
        "r3-cli-04",
        "r3-cli",
        "--warmup equal to --steps refused",
        "if args.warmup is not None and args.warmup > steps:",
        "if args.warmup is not None and args.warmup >= steps:",
    ),
    M(
        "r3-cli-05",
        "r3-cli",
        "check rule ignores --n",
        "n=DEFAULT_N if args.n is None else args.n,",
        "n=DEFAULT_N,",
    ),
    M(
        "r3-cli-06",
        "r3-cli",
        "check rule ignores --dtype",
        "dtype=getattr(torch, args.dtype),",
        "dtype=torch.float64,",
    ),
    M(
        "r3-cli-07",
        "r3-cli",
        "a rule calling sys.exit exits 2 (usage) instead of 1 (failed) (check_common.run_reports)",
        'f"instead of returning {what}",\n                file=sys.stderr,\n            )\n            return 1',
        'f"instead of returning {what}",\n                file=sys.stderr,\n            )\n            return 2',
    ),
    M(
        "r3-cli-08",
        "r3-cli",
        "report --jobs 0 accepted",
        "if jobs is not None and jobs < 1:",
        "if jobs is not None and jobs < 0:",
    ),
    M(
        "r3-cli-09",
        "r3-cli",
        "a later model reuses outcomes outside a git checkout (None == None)",
        "if here is not None and first.meta.get(WORKTREE) == here:",
        "if first.meta.get(WORKTREE) == here:",
    ),
    M(
        "r3-cli-10",
        "r3-cli",
        "report --claims-json with --quick accepted",
        '    if quick:\n        raise ReportError(\n            "--quick changes',
        '    if False:\n        raise ReportError(\n            "--quick changes',
    ),
)
