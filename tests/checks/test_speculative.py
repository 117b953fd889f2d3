"""The speculative conformance kit itself (aftertrain.checks.speculative):
it runs without pytest, rejects every bug of the zoo at its
default settings, turns a rule's exception or bad output into a failure
line, leaves the caller's random state alone, validates its arguments, and
the example of docs/checks.md runs."""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aftertrain import speculative as S
from aftertrain.checks import speculative as CS
from aftertrain.checks import zoo
from aftertrain.checks.rule_battery import battery, n_tests
from aftertrain.stats import ALPHA
from tests.common.docs_examples import docs_block

ROOT = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]


KIT_MODULES = (
    "aftertrain.checks.speculative",
    "aftertrain.checks.zoo",
    "aftertrain.checks.quant",
    "aftertrain.checks.prune",
    "aftertrain.checks.assertions",
)


@contextlib.contextmanager
def aftertrain_imported_anew_without(*blocked: str):
    """In this process: every ``aftertrain`` module dropped from
    ``sys.modules`` (so importing one runs its package's code again, every
    module it imports included) and each of ``blocked`` made unimportable
    (None in ``sys.modules``, as in a child that sets it first); on exit
    every ``aftertrain`` module and each of ``blocked`` is the one it was
    (the anew ones dropped; another package first imported meanwhile stays)."""

    def ours(name: str) -> bool:
        return name == "aftertrain" or name.startswith("aftertrain.") or name in blocked

    saved = {n: m for n, m in sys.modules.items() if ours(n)}
    for name in saved:
        del sys.modules[name]
    sys.modules.update(dict.fromkeys(blocked))
    try:
        yield
    finally:
        for name in [n for n in sys.modules if ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)


def test_kit_imports_without_pytest_or_hypothesis_in_process():
    """Every kit (and its one-line assertions) imports without pytest and
    hypothesis, imported anew in this process with both unimportable;
    aftertrain.checks.strategies, which needs hypothesis, says how to get it
    (the ``strategies`` extra). The same in a child process: the e2e test
    below."""
    with aftertrain_imported_anew_without("pytest", "hypothesis"):
        for name in KIT_MODULES:
            importlib.import_module(name)
        with pytest.raises(ImportError, match=re.escape("pip install 'aftertrain[strategies]'")):
            importlib.import_module("aftertrain.checks.strategies")
        fresh = sys.modules["aftertrain.checks.speculative"]
    assert fresh is not CS and sys.modules["aftertrain.checks.speculative"] is CS
    assert sys.modules["pytest"] is pytest


@pytest.mark.e2e
def test_kit_imports_without_pytest_or_hypothesis():
    """Every kit (and its one-line assertions) imports without pytest and
    hypothesis in a child Python; aftertrain.checks.strategies, which needs
    hypothesis, says how to get it (the ``strategies`` extra)."""
    code = (
        "import sys; sys.modules['pytest'] = None; sys.modules['hypothesis'] = None\n"
        "from aftertrain.checks.speculative import check_rule, check_rule_exact, "
        "check_generator, sequential\nfrom aftertrain.checks import zoo\n"
        "from aftertrain.checks.quant import QuantScheme, PerGroup, check_quantizer\n"
        "from aftertrain.checks.prune import NM, check_pruner\n"
        "from aftertrain.checks.assertions import assert_rule, assert_quantizer, "
        "assert_pruner\nprint('ok')\n"
        "try:\n    import aftertrain.checks.strategies\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0 and lines[0] == "ok", out.stderr
    assert "pip install 'aftertrain[strategies]'" in lines[1], out.stdout


@pytest.mark.claim("X7")
@pytest.mark.parametrize("variant", list(zoo.ZOO))
@pytest.mark.teeth
def test_kit_catches_every_zoo_variant_at_the_default_settings(variant, claim_record):
    """X7. Each bug of the zoo fails the kit's check named in zoo.ZOO at the
    default settings, seed 0 (tools/zoo_rates.py measures 20 seeds)."""
    report = zoo.detect(variant, seed=0)
    claim_record.measured(
        "{variant!s}: {failures} failures of {checks} checks ({caught_by!s})",
        variant=variant,
        failures=len(report.failures),
        checks=len(report.rows),
        caught_by=zoo.ZOO[variant].caught_by,
    )
    assert not report.passed, str(report)


def test_the_zoos_correct_rule_and_loop_pass():
    """The zoo without a bug passes the checks its variants fail (the
    correct generator at fewer runs: it is the same rule as the shipped one,
    whose loop passes the full check in test_speculative_exact)."""
    assert zoo.detect(None, seed=0).passed
    assert CS.check_rule_exact(zoo.make_rule()).passed
    report = CS.check_generator(zoo.make_generator(), runs=300, ks=(1,))
    assert report.passed, str(report)


def test_check_generator_splits_alpha_over_every_k_and_temperature():
    """Bonferroni over the joint-law tests: with 2 ks and 2 temperatures,
    and on the default toys the zero probes at each k, each chi-square row
    is at alpha / 6 (alpha / 4 on models of one's own; not alpha / 2, which
    would hold the family only to 2 alpha)."""
    report = CS.check_generator(
        zoo.make_generator(), runs=100, ks=(1, 2), temperatures=(1.0, 0.5), alpha=1e-3
    )
    bounds = [r.bound for r in report.rows if r.check == "chi-square"]
    assert len(bounds) == 6 and set(bounds) == {1e-3 / 6}, str(report)
    own = CS.check_generator(
        zoo.make_generator(), *CS.toy_models(), runs=100, ks=(1, 2), temperatures=(1.0, 0.5), alpha=1e-3
    )
    bounds = [r.bound for r in own.rows if r.check == "chi-square"]
    assert len(bounds) == 4 and set(bounds) == {1e-3 / 4}, str(own)


def test_the_u_zero_bug_is_invisible_to_the_statistical_battery():
    """Why check_rule_exact exists: accepting a p = 0 draft at u = 0 happens
    with probability 2**-53 per draft, so check_rule passes that rule."""
    assert CS.check_rule(CS.drawing_uniforms(zoo.make_rule("accept u <= p/q"))).passed


def test_default_battery_splits_alpha_over_its_tests():
    """Bonferroni: 83 statistical tests, each at alpha / 83; every chi-square
    row of the report carries that level as its bound."""
    m = n_tests(battery(0))
    assert m == 83
    report = CS.check_rule(CS.drawing_uniforms(S.verify_with_uniforms), alpha=ALPHA)
    bounds = {r.bound for r in report.rows if r.check == "chi-square"}
    assert bounds == {ALPHA / m}
    assert {r.check for r in report.rows} == {"outputs", "support", "chi-square", "tv", "acceptance"}
    assert report.passed, str(report)


def test_an_exception_is_a_failure_line_not_a_crash():
    def raises(p, q, drafts):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")

    report = CS.check_rule(raises)
    assert not report.passed
    assert len(report.failures) == len(battery(0))
    assert all("raised RuntimeError: probability tensor" in f for f in report.failures)
    exact = CS.check_rule_exact(lambda p, q, d, u, v: raises(p, q, d))
    assert not exact.passed and "raised RuntimeError" in exact.failures[0]
    with pytest.raises(AssertionError, match="raised RuntimeError"):
        report.raise_for_failures()


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda a, t: (a.double(), t), "accepted has dtype torch.float64"),
        (lambda a, t: (a, t.float().fill_(math.nan)), "token has dtype torch.float32 holding NaN"),
        (lambda a, t: (a, t[:-1]), "token has shape"),
        (lambda a, t: (a, t + 1000), "token holds values"),
        (lambda a, t: (a - 1, t), "accepted holds values"),
        (lambda a, t: a, "must return \\(accepted, token\\)"),
        (lambda a, t: (a.tolist(), t), "accepted is a list"),
    ],
)
def test_bad_outputs_are_failures(bad, match):
    rule = CS.drawing_uniforms(S.verify_with_uniforms)
    report = CS.check_rule(lambda p, q, d: bad(*rule(p, q, d)), n=100)
    assert not report.passed
    assert any(re.search(match, f) for f in report.failures), report.failures


def test_global_random_state_is_left_as_it_was():
    before = torch.get_rng_state()
    CS.check_rule(CS.drawing_uniforms(S.verify_with_uniforms), n=200)
    assert torch.equal(torch.get_rng_state(), before)


def test_same_seed_same_report_and_the_seed_changes_the_cases():
    rule = CS.drawing_uniforms(S.verify_with_uniforms)
    a, b = CS.check_rule(rule, n=500, seed=4), CS.check_rule(rule, n=500, seed=4)
    assert a.rows == b.rows
    assert not torch.equal(battery(0)[0].p, battery(1)[0].p)


def test_sequential_equals_the_batched_rule_row_for_row():
    """sequential() calls the one-round rule per row, extra arguments included."""

    def one(p, q, d, u, v):
        a, t = S.verify_with_uniforms(p[None], q[None], d[None], u[None], v[None])
        return int(a[0]), int(t[0])

    g = torch.Generator().manual_seed(0)
    n, p, q = 50, torch.from_numpy(zoo_fixed()[0]), torch.from_numpy(zoo_fixed()[1])
    d = torch.stack([torch.multinomial(r, n, True, generator=g) for r in q], 1)
    u, v = torch.rand(n, 3, dtype=torch.float64, generator=g), torch.rand(n, dtype=torch.float64, generator=g)
    P, Q = p.expand(n, -1, -1), q.expand(n, -1, -1)
    got = CS.sequential(one)(P, Q, d, u, v)
    want = S.verify_with_uniforms(P, Q, d, u, v)
    assert got[0].dtype == got[1].dtype == torch.int64
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert CS.check_rule_exact(CS.sequential(one)).passed


def zoo_fixed():
    from aftertrain.checks.rule_battery import FIXED_P, FIXED_Q

    return FIXED_P, FIXED_Q


@pytest.mark.teeth
def test_generator_check_catches_a_loop_that_ignores_temperature_zero():
    """Greedy: a loop that samples at temperature 0 as if it were 1 differs
    from plain greedy decoding."""
    correct = zoo.make_generator()

    def sloppy(target, draft, prompt, n_new, k, temperature, generator):
        return correct(target, draft, prompt, n_new, k, temperature or 1.0, generator)

    report = CS.check_generator(sloppy, runs=50, ks=(1,))
    assert any(r.check == "greedy" and not r.passed for r in report.rows), str(report)


# --- bad arguments -------------------------------------------------------------------

_RULE = CS.drawing_uniforms(S.verify_with_uniforms)
_P2 = [[0.5, 0.5], [0.5, 0.5]]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: CS.check_rule(None), "rule must be callable"),
        (lambda: CS.check_rule(_RULE, n=0), "n must be an int >= 100"),
        (lambda: CS.check_rule(_RULE, n=99), "n must be an int >= 100"),
        (lambda: CS.check_rule(_RULE, n=1000.0), "n must be an int"),
        (lambda: CS.check_rule(_RULE, n=True), "n must be an int"),
        (lambda: CS.check_rule(_RULE, alpha=0.0), "alpha must be a number in \\(0, 1\\)"),
        (lambda: CS.check_rule(_RULE, alpha=1.0), "alpha must be"),
        (lambda: CS.check_rule(_RULE, alpha=math.nan), "alpha must be"),
        (lambda: CS.check_rule(_RULE, alpha="0.01"), "alpha must be"),
        (lambda: CS.check_rule(_RULE, seed=-1), r"seed must be an int in \[0, 2\*\*64\)"),
        (lambda: CS.check_rule(_RULE, seed=1.5), "seed must be"),
        (lambda: CS.check_rule(_RULE, cases=[]), "cases must be a non-empty"),
        (lambda: CS.check_rule(_RULE, cases="abc"), "cases must be a non-empty"),
        (lambda: CS.check_rule(_RULE, cases=[("x", _P2)]), "cases\\[0\\] must be a tuple"),
        (lambda: CS.check_rule(_RULE, cases=[("x", _P2, _P2)]), "cases\\[0\\] must have p of shape"),
        (
            lambda: CS.check_rule(_RULE, cases=[("x", [[math.nan, 1.0], [0.5, 0.5]], [[0.5, 0.5]])]),
            "cases\\[0\\] p",
        ),
        (lambda: CS.check_rule(_RULE, cases=[("x", _P2, [[0.9, 0.2]])]), "cases\\[0\\] q"),
        (lambda: CS.check_rule(_RULE, cases=[("x", _P2, [[-0.5, 1.5]])]), "cases\\[0\\] q"),
        (lambda: CS.check_rule_exact(None), "rule_with_uniforms must be callable"),
        (lambda: CS.check_rule_exact(S.verify_with_uniforms, seed=-2), "seed must be"),
        (lambda: CS.check_rule_exact(S.verify_with_uniforms, cases=[("x", _P2)]), "cases\\[0\\]"),
        (lambda: CS.sequential(3), "rule_one must be callable"),
        (lambda: CS.drawing_uniforms("rule"), "rule_with_uniforms must be callable"),
        (lambda: CS.check_generator(None), "generate must be callable"),
        (lambda: CS.check_generator(zoo.make_generator(), runs=5), "runs must be an int >= 10"),
        (lambda: CS.check_generator(zoo.make_generator(), length=0), "length must be"),
        (lambda: CS.check_generator(zoo.make_generator(), greedy_tokens=0), "greedy_tokens must be"),
        (lambda: CS.check_generator(zoo.make_generator(), ks=()), "ks must be"),
        (lambda: CS.check_generator(zoo.make_generator(), ks=(0,)), "ks must be"),
        (lambda: CS.check_generator(zoo.make_generator(), temperatures=(0.0,)), "temperatures must"),
        (lambda: CS.check_generator(zoo.make_generator(), temperatures=(math.inf,)), "temperatures"),
        (lambda: CS.check_generator(zoo.make_generator(), temperatures=(math.nan,)), "temperatures"),
        (lambda: CS.check_generator(zoo.make_generator(), alpha=2.0), "alpha must be"),
        (lambda: CS.check_generator(zoo.make_generator(), seed=-1), "seed must be"),
        (lambda: CS.check_generator(zoo.make_generator(), prompt=()), "prompt must be a non-empty"),
        (lambda: CS.check_generator(zoo.make_generator(), prompt=(9,)), "prompt ids must lie"),
        (
            lambda: CS.check_generator(zoo.make_generator(), target=CS.toy_models()[0]),
            "target and draft must be given together",
        ),
        (lambda: zoo.make_rule("no such bug"), "bug must be None or one of"),
        (lambda: zoo.make_generator("no such bug"), "bug must be None or one of"),
        (lambda: zoo.make_generator(rule=5), "rule must be callable"),
        (lambda: zoo.detect("no such bug"), "variant must be None or one of"),
        (lambda: CS.ToyTable(1, seed=0), "vocab_size must be an int >= 2"),
        (lambda: CS.ToyTable(4, seed=0, order=3), "order must be 1 or 2"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- docs/checks.md ------------------------------------------------------------------


def speculative_example() -> str:
    """The first ```python block of docs/checks.md's speculative section."""
    text = (ROOT / "docs" / "checks.md").read_text()
    section = text.split("## Speculative samplers", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks, "docs/checks.md's speculative section has no python example"
    return blocks[0]


def test_the_docs_example_runs():
    """The example of checking an outside rule runs as written and its rule
    passes (the example asserts it)."""
    namespace: dict = {}
    exec(compile(speculative_example(), "docs/checks.md", "exec"), namespace)  # noqa: S102


# --- precision, new probes, failure lines, progress (issue: real samplers) -------------


def _correct_in(dtype):
    """The zoo's correct rule as a sampler deployed in ``dtype``: handed p and
    q in it, computing in it, float32 uniforms (zoo.Variant.uniforms)."""
    return CS.drawing_uniforms(zoo.make_rule(), dtype=torch.promote_types(dtype, torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_correct_rule_in_low_precision_passes_at_its_dtype(dtype):
    """No false alarm at float32 or bfloat16: the correct rule computing in
    that dtype passes check_rule (judged against the rounded law) and
    check_rule_exact (probes at representable ratios, margins of 4 ulps).
    tools/zoo_rates.py: 20 of 20 seeds each."""
    report = CS.check_rule(_correct_in(dtype), dtype=dtype, seed=0)
    assert report.passed, str(report)
    exact = CS.check_rule_exact(zoo.make_rule(), dtype=dtype)
    assert exact.passed, str(exact)


def test_the_rule_is_handed_p_and_q_in_the_dtype():
    seen = set()

    def spy(p, q, drafts):
        seen.update({p.dtype, q.dtype})
        return _correct_in(torch.bfloat16)(p, q, drafts)

    CS.check_rule(spy, n=100, dtype=torch.bfloat16)
    seen_exact = set()
    CS.check_rule_exact(
        lambda p, q, d, u, v: (
            seen_exact.update({p.dtype, q.dtype, u.dtype, v.dtype}) or zoo.make_rule()(p, q, d, u, v)
        ),
        dtype=torch.float16,
    )
    assert seen == {torch.bfloat16} and seen_exact == {torch.float16}


@pytest.mark.teeth
def test_check_rule_exact_catches_a_nan_residual_behind_a_u_zero_bug():
    """The residual of a rule that also accepts at u <= p/q is still judged:
    the 'draft outside p, p(0) = 0' rounds at u near 1 force a rejection,
    where its NaN residual read by argmax emits token 0 (p = 0). The same
    rounds at u = 0 only see the acceptance bug."""
    report = CS.check_rule_exact(zoo.make_rule(zoo.RuleBug.ACCEPT_U_LE_NAN_RESIDUAL))
    failed = {r.case for r in report.rows if not r.passed}
    assert "draft outside p, zero residual, p(0) = 0 (u = 1 - eps, v = 0.5)" in failed
    only_u = CS.check_rule_exact(zoo.make_rule(zoo.RuleBug.ACCEPT_U_LE))
    assert all("u = 0" in r.case for r in only_u.rows if not r.passed), str(only_u)


@pytest.mark.teeth
def test_check_rule_exact_catches_a_batch_that_one_bad_row_crashes():
    """The batch-wide fallback passes every single-round probe (it is right
    for N = 1) and fails only the batch holding one all-zero residual."""
    report = CS.check_rule_exact(zoo.make_rule(zoo.RuleBug.BATCH_WIDE_FALLBACK))
    assert [f.split(":")[0] for f in report.failures] == ["batch of 16, row 5 an all-zero residual"], str(
        report
    )
    assert "RuntimeError: probability tensor contains" in report.failures[0]


def test_an_exception_line_names_the_users_frame():
    """type: message (at file:line of the innermost frame outside the kit,
    torch and the standard library)."""

    def inner(p):
        return torch.multinomial(p[0, 0] * float("nan"), 1)  # raises inside torch

    def rule(p, q, drafts):
        return inner(p)

    report = CS.check_rule(rule, n=100, cases=[("x", _P2, [[0.5, 0.5]])])
    line = report.failures[0]
    lineno = inner.__code__.co_firstlineno + 1
    assert re.search(rf"raised RuntimeError: .* \(at .*checks/test_speculative\.py:{lineno}\)$", line), line


def test_progress_lines_come_through_the_callback():
    lines: list[str] = []
    CS.check_rule(CS.drawing_uniforms(zoo.make_rule()), n=100, progress=lines.append)
    assert len(lines) == len(battery(0)) and lines[0].startswith("check_rule: case 1/10")
    CS.check_rule_exact(zoo.make_rule(), progress=lines.append)
    assert lines[-1].startswith("check_rule_exact: batches")


def test_check_generator_drafts_more_than_the_horizon_when_n_new_allows():
    """A horizon of 2 tokens with k = 4 drafts per round over n_new = 6
    tokens; k above n_new - 1 is refused, naming the fix."""
    report = CS.check_generator(
        zoo.make_generator(), runs=100, ks=(4,), length=2, n_new=6, temperatures=(1.0,), greedy_tokens=6
    )
    assert report.passed and "n_new=6" in report.rows[0].case, str(report)
    with pytest.raises(ValueError, match=r"ks must be at most n_new - 1 = 5 .* got k = 6"):
        CS.check_generator(zoo.make_generator(), ks=(6,), length=2, n_new=6)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: CS.check_rule(_RULE, dtype=torch.int64), "dtype must be one of"),
        (lambda: CS.check_rule(_RULE, dtype="bfloat16"), "dtype must be one of"),
        (lambda: CS.check_rule_exact(S.verify_with_uniforms, dtype=torch.float8_e4m3fn), "dtype"),
        (lambda: CS.drawing_uniforms(S.verify_with_uniforms, dtype=torch.int32), "dtype must be"),
        (lambda: CS.check_rule(_RULE, progress="print"), "progress must be None or a callable"),
        (lambda: CS.check_generator(zoo.make_generator(), n_new=2, length=3), "n_new must be"),
        (lambda: zoo.detect(zoo.GeneratorBug.TOP_K_DRAFT_UNFILTERED, progress=3), "progress"),
    ],
)
def test_bad_precision_and_progress_arguments_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- exponential-race samplers ----------------------------------------------------------


def test_the_exponential_race_and_the_inverse_cdf_draw_the_same_law():
    """The with-uniforms recipe's premise: argmax(probs / Exponential) and
    the inverse CDF at v follow normalize(probs). 20,000 draws of each on a
    V = 8 row with a zero cell, chi-square at alpha = 1e-6 each."""
    from aftertrain import stats
    from aftertrain.checks.adapters import exponential_race, inverse_cdf

    g = torch.Generator().manual_seed(0)
    probs = torch.tensor([0.3, 0.0, 0.05, 0.15, 0.2, 0.1, 0.12, 0.08], dtype=torch.float64)
    n = 20_000
    race = exponential_race(probs.expand(n, -1), g)
    inv = inverse_cdf(probs.expand(n, -1), torch.rand(n, dtype=torch.float64, generator=g))
    for draws in (race, inv):
        assert int((draws == 1).sum()) == 0
        assert stats.chisquare_gof(draws.numpy(), probs.numpy()).pvalue >= ALPHA


@pytest.mark.teeth
def test_exponential_race_recipe_catches_a_race_over_the_unnormalised_wrong_law():
    """The docs' recipe: a race-based rule passes both checks, and the same
    rule racing over p instead of the residual fails both."""
    namespace: dict = {}
    exec(compile(docs_block("exponential race"), "docs/checks.md", "exec"), namespace)  # noqa: S102
    assert namespace["good"].passed and namespace["good_exact"].passed
    assert not namespace["bad"].passed and not namespace["bad_exact"].passed


# --- assert_rule ------------------------------------------------------------------------


def test_assert_rule_passes_a_correct_rule_and_lists_a_broken_ones_failures():
    from aftertrain.checks.assertions import assert_rule

    assert_rule(zoo.make_rule(), exact=True, n=1000)
    with pytest.raises(AssertionError, match=r"FAILED .*\n  - forced rejection, p <= q"):
        assert_rule(zoo.make_rule(zoo.RuleBug.NAN_RESIDUAL_ARGMAX), exact=True, n=1000)


def test_the_docs_pytest_example_passes_and_xfails_under_pytest(pytester):
    """docs/checks.md's assert_rule example as a user's test file in a
    temporary folder outside the checkout, run by pytest in this process
    (pytester): its correct rule passes and its broken one fails with the
    report's lines (strict xfail). The same file in a child pytest started
    in that folder: the e2e test below."""
    pytester.makepyfile(test_my_rule=docs_block("assert_rule"))
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, xfailed=1)


@pytest.mark.e2e
def test_the_docs_pytest_example_runs_from_a_folder_outside_the_checkout(tmp_path):
    """docs/checks.md's assert_rule example, saved as a user's test file in
    a temporary folder and run by a child pytest there: its correct rule
    passes and its broken one fails with the report's lines."""
    (tmp_path / "test_my_rule.py").write_text(docs_block("assert_rule"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_rule.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert "1 passed, 1 xfailed" in out.stdout, out.stdout + out.stderr


# --- assert_generator ------------------------------------------------------------------


def _aftertrain_generate(target, draft, prompt, n_new, k, temperature, generator):
    """aftertrain's own loop in check_generator's protocol."""
    return S.speculative_generate(target, draft, prompt, n_new, k, temperature, generator).generated


def test_assert_generator_passes_aftertrain_speculative_generate():
    """aftertrain's own loop at k = 2, 200 runs per temperature (0.3 and 1),
    and greedy: None (the full default check is the command's test,
    tests/cli/test_check.py)."""
    assert CS.assert_generator(_aftertrain_generate, runs=200, ks=(2,)) is None


@pytest.mark.teeth
def test_assert_generator_catches_temperature_on_the_draft_only():
    """The zoo's loop scoring p at temperature 1 (rejected 20/20 seeds at
    100 runs, docs/checks.md): AssertionError whose first line is the
    report's verdict, then one line per failure."""
    from aftertrain.checks.assertions import assert_generator

    bug = zoo.make_generator(zoo.GeneratorBug.TEMPERATURE_ON_DRAFT_ONLY)
    with pytest.raises(AssertionError) as info:
        assert_generator(bug, runs=100, ks=(1,), temperatures=(0.3,))
    first, *lines = str(info.value).splitlines()
    assert (
        first.startswith("check_generator(zoo generator (temperature on the draft only)")
        and "FAILED" in first
    )
    assert lines and all(line.startswith("  - ") for line in lines), str(info.value)
    assert any("chi-square failed" in line for line in lines), str(info.value)


# --- the zero-residual probe searched with the rule's own arithmetic -------------------


def _searched_probe(dtype, renormalise):
    from aftertrain.checks import rule_exact as RE

    (probe, *_) = [pr for pr in RE.probes(dtype, renormalise) if "all-zero residual, forced" in pr.name]
    return probe


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_the_rounded_up_probe_without_renormalise_is_the_least_cell_at_the_margin(dtype):
    """Without a ``renormalise`` the search stops at its first try: the cell
    of least p raised by the margin (4 ulps), p <= q exactly in every cell."""
    from aftertrain.checks import rule_exact as RE

    probe = _searched_probe(dtype, None)
    p, q = torch.tensor(probe.p[0], dtype=torch.float64), torch.tensor(probe.q[0], dtype=torch.float64)
    x = probe.drafts[0]
    assert x == int(p.argmin())
    assert bool((p <= q).all()) and q[x] > p[x]
    up = (p[x] * (1 + RE.margin(dtype))).to(dtype)
    assert q[x] == (up if up > p[x] else torch.nextafter(p[x].to(dtype), torch.ones((), dtype=dtype)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_rounded_up_probe_is_an_all_zero_residual_after_a_softmax_of_the_logs(dtype):
    """With transformers' arithmetic (a softmax of ``log p`` in ``dtype``), the
    probe's p and q give P <= Q in every cell and P_x / Q_x below the largest
    uniform under 1, computed on this CPU's kernels: the rule's residual is
    all zero and the forced u rejects."""
    from aftertrain.checks import rule_exact as RE

    soft = lambda r: r.log().softmax(-1)
    probe = _searched_probe(dtype, soft)
    p, q = torch.tensor(probe.p[0]).to(dtype), torch.tensor(probe.q[0]).to(dtype)
    P, Q = soft(p), soft(q)
    x = probe.drafts[0]
    assert bool((P <= Q).all()) and float(P[x] / Q[x]) < RE.below_one(dtype)


def test_the_rounded_up_probe_searches_past_a_step_the_rule_rounds_away():
    """A rule whose arithmetic rounds every probability down to a grid of 16
    float32 ulps of 1/8 (a stand-in for a kernel that loses the kit's 4-ulp
    step): the fixed step would leave P == Q at the draft (no rejection),
    the search raises the cell further until the rule sees it."""
    step = 16 * torch.finfo(torch.float32).eps / 8
    grid = lambda r: torch.floor(r.double() / step).mul(step).to(r.dtype)
    probe = _searched_probe(torch.float32, grid)
    p, q = torch.tensor(probe.p[0]).float(), torch.tensor(probe.q[0]).float()
    x = probe.drafts[0]
    assert grid(q)[x] > grid(p)[x] and bool((grid(p) <= grid(q)).all())
    assert "raised by 4 ulps" not in probe.want, probe.want


def test_a_renormalise_that_never_gives_a_zero_residual_is_refused():
    """A map that forgets the raised cell (every row to the uniform law)
    leaves no all-zero residual whatever the raise: check_rule_exact says so
    naming the argument instead of running a probe that is not one."""
    exact = lambda r: torch.full_like(r, 1 / r.shape[-1])
    with pytest.raises(ValueError, match="renormalise leaves no all-zero residual"):
        CS.check_rule_exact(S.verify_with_uniforms, renormalise=exact)
    with pytest.raises(ValueError, match="renormalise must be callable"):
        CS.check_rule_exact(S.verify_with_uniforms, renormalise=3)


def test_check_rule_exact_reads_the_rules_renormalise_attribute():
    """The adapters declare their rule's arithmetic as ``rule.renormalise``;
    check_rule_exact uses it when no argument is given (a refusing map on
    the attribute is refused the same way)."""

    def rule(p, q, d, u, v):
        return S.verify_with_uniforms(p, q, d, u, v)

    rule.renormalise = lambda r: torch.full_like(r, 1 / r.shape[-1])
    with pytest.raises(ValueError, match="renormalise leaves no all-zero residual"):
        CS.check_rule_exact(rule)


def test_sequential_restores_the_thread_count():
    """sequential runs its loop on one torch thread and restores the
    caller's count afterwards (also after a rule that raises)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        rule = zoo.make_rule()

        def one(p, q, drafts, u, v):
            a, t = rule(p[None], q[None], drafts[None], u[None], v[None])
            return a[0], t[0]

        batched = CS.sequential(one)
        p = torch.full((3, 2, 4), 0.25, dtype=torch.float64)
        q = torch.full((3, 1, 4), 0.25, dtype=torch.float64)
        u, v = torch.zeros(3, 1, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
        accepted, _ = batched(p, q, torch.zeros(3, 1, dtype=torch.int64), u, v)
        assert accepted.tolist() == [1, 1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_check_rule_judges_the_drafts_it_drew_not_what_the_rule_left_in_them():
    """The rule is handed a copy of the drafts: a correct rule that zeroes
    the drafts tensor it was handed still passes (the kit judges the
    emitted token against the draft it drew, not the rule's scribble)."""
    correct = CS.drawing_uniforms(zoo.make_rule())

    def scribbles(p, q, drafts):
        out = correct(p, q, drafts)
        drafts.zero_()
        return out

    report = CS.check_rule(scribbles, n=2000)
    assert report.passed, str(report)
