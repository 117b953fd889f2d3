"""aftertrain.checks.prune: the kit passes aftertrain's pruners and rejects
each broken variant (passed as the parameter, no monkeypatching), with the
check that should catch it among the failures."""

from __future__ import annotations

import pytest
import torch

from aftertrain import prune as P
from aftertrain.checks.prune import (
    NM,
    Scope,
    Structured,
    Unstructured,
    battery,
    check_pruner,
    nm_battery,
    structured_battery,
)
from tests.common.kit import failed_checks
from tests.common.prune_bugs import (
    floor_count_global_masks,
    half_up_count_global_masks,
    l2_row_masks,
    rows_ranked_by_wrong_dim,
    signed_global_masks,
    signed_two_four_masks,
    threshold_global_masks,
    unnested_global_masks,
)


@pytest.mark.parametrize(
    "prune, scope",
    [(P.global_magnitude_masks, Scope.GLOBAL), (P.layer_magnitude_masks, Scope.PER_LAYER)],
    ids=["global", "per-layer"],
)
def test_kit_passes_aftertrains_magnitude_pruners(prune, scope):
    report = check_pruner(prune, scope=scope)
    assert report.passed, str(report)
    assert {r.check for r in report.rows} == {"output", "count", "magnitude", "nested"}


def test_kit_passes_aftertrains_random_pruner_with_one_seed():
    """Random masks from one seed are nested across sparsities (one randperm)."""

    def seeded(weights, s):
        return P.random_masks(weights, s, torch.Generator().manual_seed(7))

    report = check_pruner(seeded, scope=Scope.GLOBAL, magnitude=False, nested=True)
    assert report.passed, str(report)


TEETH = [
    (signed_global_masks, Scope.GLOBAL, {"magnitude"}),
    (threshold_global_masks, Scope.GLOBAL, {"count"}),
    (floor_count_global_masks, Scope.GLOBAL, {"count"}),
    (half_up_count_global_masks, Scope.GLOBAL, {"count"}),
    (unnested_global_masks, Scope.GLOBAL, {"nested"}),
    (P.layer_magnitude_masks, Scope.GLOBAL, {"magnitude"}),
    (P.global_magnitude_masks, Scope.PER_LAYER, {"count"}),
]


@pytest.mark.claim("X7")
@pytest.mark.parametrize(
    "broken, scope, caught_by", TEETH, ids=[f"{b.__name__}-as-{s.value}" for b, s, _ in TEETH]
)
@pytest.mark.teeth
def test_kit_catches_broken_pruner(broken, scope, caught_by):
    """Signed ranking (X7's "magnitude threshold on signed values"), a
    threshold that removes whole tie classes, off-by-one counts (floor;
    half up instead of half to even), ties broken anew per sparsity, and a
    per-layer pruner claiming to be global (and the reverse)."""
    report = check_pruner(broken, scope=scope)
    assert not report.passed
    assert caught_by <= failed_checks(report), (caught_by, failed_checks(report))
    with pytest.raises(AssertionError):
        report.raise_for_failures()


@pytest.mark.teeth
def test_count_check_catches_half_up_counts_only_at_exact_halves():
    """The rounding rule matters only where s * n is an exact half: 0.5 of 5
    weights removes round(2.5) = 2, half up would remove 3."""
    five = {"five": {"w": torch.tensor([[0.1, -0.2, 0.3, -0.4, 0.5]])}}
    assert P.n_removed(0.5, 5) == 2 and P.n_removed(0.3, 5) == 2
    assert check_pruner(P.global_magnitude_masks, scope=Scope.GLOBAL, cases=five, sparsities=[0.5]).passed
    report = check_pruner(half_up_count_global_masks, scope=Scope.GLOBAL, cases=five, sparsities=[0.5])
    assert failed_checks(report) == {"count"}


@pytest.mark.teeth
def test_kit_catches_a_pruner_that_modifies_its_input_or_returns_wrong_masks():
    def in_place(weights, s):
        masks = P.global_magnitude_masks(weights, s)
        for n, w in weights.items():
            w.masked_fill_(~masks[n], 0.0)
        return masks

    def float_masks(weights, s):
        return {n: m.float() for n, m in P.global_magnitude_masks(weights, s).items()}

    assert "modified the weights" in str(check_pruner(in_place, scope=Scope.GLOBAL))
    assert failed_checks(check_pruner(float_masks, scope=Scope.GLOBAL)) == {"output"}


def test_battery_is_deterministic():
    a, b = battery(0), battery(0)
    for case in a:
        for n in a[case]:
            assert torch.equal(a[case][n], b[case][n]), (case, n)


def test_docs_checks_example_runs():
    """The Pruners example of docs/checks.md runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text()
    body = text.split("## Pruners", 1)[1].split("\n## ", 1)[0]
    # the first block; the model-level pruner's (marked "model pruner") runs in test_adapters.py
    code = re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)[0]
    exec(compile(code, "docs/checks.md (Pruners)", "exec"), {})


# --- structured and N:M patterns -------------------------------------------------


def two_four(weights, sparsity):
    """aftertrain's 2:4 masks in the pruner protocol (the sparsity is 0.5)."""
    return P.two_four_masks(weights)


def test_kit_passes_a_correct_2_4_pruner():
    """aftertrain.prune.two_four_masks: 2 kept of every 4 along the row, the
    largest |w| (negative extremes, ties, blocks of scales 1e-3 and 1e3); a
    row of 6 is refused with a ValueError."""
    report = check_pruner(two_four, pattern=NM(2, 4))
    assert report.passed, str(report)
    assert {r.check for r in report.rows} == {"output", "count", "magnitude", "refused"}


def test_kit_passes_a_correct_row_pruner():
    """Whole rows by L2 norm: structure, slice counts (exact halves of 5
    rows), norm order (tied norms included) and nesting."""
    report = check_pruner(l2_row_masks, pattern=Structured(dim=0, norm=2))
    assert report.passed, str(report)
    assert {r.check for r in report.rows} == {"output", "structure", "count", "magnitude", "nested"}


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_magnitude_check_catches_a_2_4_pruner_keeping_the_largest_signed_values():
    report = check_pruner(
        signed_two_four_masks,
        pattern=NM(2, 4),
        cases={k: v for k, v in nm_battery(NM(2, 4)).items() if k != "rows not whole blocks"},
    )
    assert failed_checks(report) == {"magnitude"}, str(report)
    assert any("negative extremes" in line for line in report.failures)


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_structure_check_catches_a_row_pruner_ranking_by_the_wrong_dimension():
    """It removes columns: the rows are no longer kept or removed whole;
    claimed as a column pruner it passes (it is one)."""
    report = check_pruner(rows_ranked_by_wrong_dim, pattern=Structured(dim=0, norm=2))
    assert "structure" in failed_checks(report), str(report)
    assert check_pruner(rows_ranked_by_wrong_dim, pattern=Structured(dim=1, norm=2)).passed


@pytest.mark.teeth
def test_magnitude_check_catches_a_row_pruner_with_the_wrong_norm():
    """L2 row norms judged as L1 (Structured(0, 1)): the "row scales" and
    "gaussian" cases rank some rows differently under the two norms."""
    report = check_pruner(l2_row_masks, pattern=Structured(dim=0, norm=1))
    assert "magnitude" in failed_checks(report), str(report)


@pytest.mark.teeth
def test_count_check_catches_an_unstructured_pruner_claiming_2_4():
    """Per-layer magnitude pruning at 50% is not 2:4: blocks keep 0 to 4."""
    report = check_pruner(P.layer_magnitude_masks, pattern=NM(2, 4))
    assert "count" in failed_checks(report), str(report)


def test_random_pruner_is_checked_for_counts_and_shapes_only_by_default():
    """magnitude=False implies nested=False (docs: counts and shapes): a
    pruner drawing a fresh permutation per call passes."""
    calls = iter(range(10**6))

    def fresh(weights, s):
        return P.random_masks(weights, s, torch.Generator().manual_seed(next(calls)))

    assert check_pruner(fresh, pattern=Unstructured(Scope.GLOBAL), magnitude=False).passed
    report = check_pruner(fresh, scope=Scope.GLOBAL, magnitude=False, nested=True)
    assert "nested" in failed_checks(report)


def test_structured_and_nm_batteries_are_deterministic():
    for make in (structured_battery, lambda seed: nm_battery(NM(2, 4), seed)):
        a, b = make(0), make(0)
        for case in a:
            for n in a[case]:
                assert torch.equal(a[case][n], b[case][n]), (case, n)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Structured(dim=2), ["dim", "0 (rows) or 1"]),
        (lambda: Structured(norm=3), ["norm", "1, 2 or math.inf"]),
        (lambda: NM(4, 4), ["n must be below m"]),
        (lambda: NM(0, 4), ["n", ">= 1"]),
        (lambda: Unstructured("global"), ["scope", "GLOBAL"]),
        (lambda: check_pruner(two_four), ["exactly one of pattern and scope"]),
        (
            lambda: check_pruner(two_four, pattern=NM(2, 4), scope=Scope.GLOBAL),
            ["exactly one of pattern and scope"],
        ),
        (lambda: check_pruner(two_four, pattern="2:4"), ["pattern", "NM(n, m)"]),
        (lambda: check_pruner(two_four, pattern=NM(2, 4), sparsities=[0.5]), ["sparsities", "1 - n/m"]),
        (
            lambda: check_pruner(l2_row_masks, pattern=Structured(), cases={"x": {"w": torch.ones(4)}}),
            ["cases", "2-D"],
        ),
    ],
    ids=lambda x: x[0] if isinstance(x, list) else None,
)
def test_bad_pattern_arguments_raise_a_clear_value_error(make, words):
    with pytest.raises(ValueError) as e:
        make()
    assert all(word in str(e.value) for word in words), str(e.value)


def _refuses_everything(weights, sparsity):
    """A 2:4 pruner that raises a ValueError whatever it is given."""
    raise ValueError("this pruner only takes rows of 8")


@pytest.mark.teeth
def test_check_pruner_catches_a_2_4_pruner_refusing_whole_blocks():
    """A refusal is allowed only on rows that ``m`` does not divide (docs:
    ``refused``): on every case of whole blocks the ValueError is a failed
    ``output`` row naming it; the one ragged case reads ``refused``, passed."""
    report = check_pruner(_refuses_everything, pattern=NM(2, 4))
    whole = [c for c in nm_battery(NM(2, 4)) if c != "rows not whole blocks"]
    outputs = {r.case.split(", ")[0]: r for r in report.rows if r.check == "output"}
    assert sorted(outputs) == sorted(whole)
    assert all(
        not r.passed and "raised ValueError: this pruner only takes rows of 8" in r.detail
        for r in outputs.values()
    )
    [refused] = [r for r in report.rows if r.check == "refused"]
    assert refused.passed and refused.case.startswith("rows not whole blocks")


def test_a_pruners_exception_line_names_its_type_message_and_line():
    """As a rule's: the failed ``output`` row reads ``raised ValueError:
    <message> (at <this file>:<the raise's line>)``, the innermost frame of
    the user's code."""
    report = check_pruner(_refuses_everything, pattern=NM(2, 4))
    line = _refuses_everything.__code__.co_firstlineno + 2
    [first, *_] = [r for r in report.rows if r.check == "output"]
    assert first.detail.startswith("raised ValueError: this pruner only takes rows of 8 (at "), first.detail
    assert first.detail.endswith(f"checks/test_prune.py:{line})"), first.detail


def test_a_case_with_one_ragged_matrix_among_whole_ones_may_be_refused():
    """One matrix whose rows ``m`` does not divide makes the case refusable,
    whatever the others are (the pruner masks all of a case or none)."""
    case = {"mixed": {"whole": torch.ones(2, 8), "ragged": torch.ones(2, 6)}}
    report = check_pruner(_refuses_everything, pattern=NM(2, 4), cases=case)
    assert report.passed and [r.check for r in report.rows] == ["refused"]


def test_a_refusal_without_a_message_is_not_a_refusal():
    """The refusal must say why: an empty ValueError on a ragged case fails."""

    def mute(weights, sparsity):
        raise ValueError()

    report = check_pruner(
        mute, pattern=NM(2, 4), cases={"ragged": nm_battery(NM(2, 4))["rows not whole blocks"]}
    )
    assert failed_checks(report) == {"output"}


# --- the patterns' own promises and the limits of their checks ----------------------------


def test_nm_sparsity_is_one_minus_n_over_m_and_is_the_sparsity_run():
    """``NM(n, m).sparsity`` is ``1 - n/m`` (0.75 for 1:4, 0.5 for 2:4),
    and check_pruner hands the pruner that sparsity."""
    assert NM(1, 4).sparsity == 0.75 and NM(2, 4).sparsity == 0.5 and NM(3, 8).sparsity == 0.625
    seen = []

    def one_of_four(weights, sparsity):
        seen.append(sparsity)
        out = {}
        for name, w in weights.items():
            blocks = w.abs().reshape(-1, 4)
            keep = torch.zeros_like(blocks, dtype=torch.bool)
            keep[torch.arange(blocks.shape[0]), blocks.argmax(1)] = True
            out[name] = keep.reshape(w.shape)
        return out

    cases = {k: v for k, v in nm_battery(NM(1, 4)).items() if k != "rows not whole blocks"}
    report = check_pruner(one_of_four, pattern=NM(1, 4), cases=cases)
    assert report.passed, str(report)
    assert set(seen) == {0.75}


def test_structured_takes_each_documented_norm():
    """``norm`` 1, 2 or math.inf (ln_structured's ``n``): each accepted."""
    import math

    for norm in (1, 2, math.inf):
        assert Structured(dim=1, norm=norm).norm == norm


def test_sparsities_are_run_in_increasing_order_whatever_order_given():
    """Nesting compares each sparsity with the next smaller one: an honest
    nested pruner given [0.9, 0.1, 0.5] passes (they run as 0.1, 0.5, 0.9)."""
    seen = []

    def pruner(weights, sparsity):
        seen.append(sparsity)
        return P.global_magnitude_masks(weights, sparsity)

    report = check_pruner(pruner, scope=Scope.GLOBAL, sparsities=[0.9, 0.1, 0.5])
    assert report.passed, str(report)
    assert seen[:3] == [0.1, 0.5, 0.9]


def test_nm_cases_must_be_2d():
    """NM reads blocks along the last axis of a matrix: a 1-D weight in
    ``cases`` is refused up front with a ValueError naming the case."""
    with pytest.raises(ValueError, match="2-D"):
        check_pruner(two_four, pattern=NM(2, 4), cases={"flat": {"w": torch.randn(8)}})


@pytest.mark.teeth
def test_nm_count_catches_a_pruner_that_keeps_more_than_n():
    """Exactly n kept per block: a "2:4" pruner that keeps everything fails
    ``count`` (4 kept, not 2), even though no block removes a larger |w|."""

    def keeps_all(weights, sparsity):
        return {n: torch.ones_like(w, dtype=torch.bool) for n, w in weights.items()}

    cases = {k: v for k, v in nm_battery(NM(2, 4)).items() if k != "rows not whole blocks"}
    report = check_pruner(keeps_all, pattern=NM(2, 4), cases=cases)
    assert "count" in failed_checks(report), str(report)


def test_nm_battery_is_built_up_to_its_largest_block_and_refused_past_it():
    """``MAX_BATTERY_BLOCK`` (2**16) itself is built; one more is refused."""
    from aftertrain.checks.prune_battery import MAX_BATTERY_BLOCK

    cases = nm_battery(NM(1, MAX_BATTERY_BLOCK))
    assert cases["single block"]["w"].shape == (1, MAX_BATTERY_BLOCK)
    with pytest.raises(ValueError, match="at most"):
        nm_battery(NM(1, MAX_BATTERY_BLOCK + 1))
