"""The one refusal rule (aftertrain.checks.refusals): an exception the
judged code raises to refuse, with a message, reads as a refusal; a crash
in a tensor operation, in torch's own code, or without a message does not,
whatever its message says; and a pruner's ragged rows follow it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.utils.prune

from aftertrain.checks.prune import NM, check_pruner
from aftertrain.checks.refusals import in_library, is_refusal, refused_row
from aftertrain.checks.report import OUTCOMES, Report, Row


def _raised(fn) -> BaseException:
    try:
        fn()
    except Exception as e:
        return e
    raise AssertionError("fn did not raise")


def _refuse_value_error():
    raise ValueError(
        "rows of 6 are not whole blocks of 4"  # a multi-line raise reads by its first line
    )


def _refuse_assert(size: int = 48):
    assert size % 32 == 0, f"Expecting input size at 1 dimension: {size} to be divisible by block_size"


def _bare_assert():
    raise AssertionError  # an assert without a message (pytest rewrites this module's own asserts)


def _shape_crash():
    return torch.ones(4) + torch.ones(3)  # RuntimeError: The size of tensor a (4) must match ...


ROWS_OF_6 = torch.ones(3, 6)  # 18 values: not whole blocks of 4


def _commented_crash():
    return ROWS_OF_6.reshape(-1, 4)  # note: raise ValueError when rows are not whole blocks


def _crash_in_the_message():
    raise ValueError(f"rows of {ROWS_OF_6.shape[5]} are not whole blocks")  # IndexError before the raise


def _crash_in_the_assert_message():
    assert ROWS_OF_6.shape[1] % 4 == 0, f"rows of {ROWS_OF_6.shape[5]} are not whole blocks"


def _torch_raise():
    # torch's own `raise ValueError("amount=-1 should either be a float in the range [0, 1] ...")`
    torch.nn.utils.prune.l1_unstructured(torch.nn.Linear(2, 2), "weight", amount=-1)


@pytest.mark.parametrize(
    ("fn", "refusal"),
    [
        (_refuse_value_error, True),
        (_refuse_assert, True),
        (_bare_assert, False),
        (_shape_crash, False),
        (_torch_raise, False),
        (_commented_crash, False),
        (_crash_in_the_message, False),
        (_crash_in_the_assert_message, False),
    ],
    ids=[
        "raise with a message",
        "assert with a message",
        "bare assert",
        "tensor crash",
        "a raise in torch",
        "a crash on a line whose comment says raise",
        "a crash building the raise's message",
        "a crash building the assert's message",
    ],
)
def test_a_refusal_is_a_raise_or_assert_of_the_judged_code_with_a_message(fn, refusal):
    """The rule, case by case: hqq's shape crash says "must match" and is
    still a crash (its innermost frame is arithmetic, not a ``raise``); so is
    a reshape whose line's comment says "raise", and an IndexError raised
    while a ``raise`` or ``assert`` builds its message (the statement never
    raised)."""
    assert is_refusal(_raised(fn)) is refusal


# A pyenv, conda or Docker python's standard library holds its site-packages.
STDLIB = "/opt/py/lib/python3.11/"
SITE = ("/opt/py/lib/python3.11/site-packages/", "/root/.local/lib/python3.11/site-packages/")
TORCH = ("/opt/py/lib/python3.11/site-packages/torch/",)


@pytest.mark.parametrize(
    ("path", "library"),
    [
        ("/opt/py/lib/python3.11/site-packages/compressed_tensors/quant.py", False),
        ("/opt/py/lib/python3.11/site-packages/mypkg/prune.py", False),
        ("/root/.local/lib/python3.11/site-packages/mypkg/prune.py", False),
        ("/home/me/project/quantize.py", False),
        ("/opt/py/lib/python3.11/site-packages/torch/nn/utils/prune.py", True),
        ("/opt/py/lib/python3.11/functools.py", True),
        ("/opt/py/lib/python3.11/json/decoder.py", True),
    ],
    ids=[
        "an installed library",
        "a package installed without a venv",
        "a user install",
        "a script",
        "torch",
        "the standard library",
        "a standard package",
    ],
)
def test_in_library_is_torch_and_the_standard_library_not_its_site_packages(path, library):
    """Only torch's and the standard library's own files are library code:
    a site-packages folder inside the standard library's folder (pyenv,
    conda, the official Docker images) holds judged code."""
    assert in_library(path, torch_dirs=TORCH, stdlib_dirs=(STDLIB,), site_dirs=SITE) is library


@pytest.mark.parametrize("error", [None, "x", ValueError], ids=["None", "a str", "an exception class"])
def test_is_refusal_of_a_non_exception_raises_value_error_naming_it(error):
    with pytest.raises(ValueError, match=r"error must be an exception \(a BaseException\), got "):
        is_refusal(error)


def test_refused_row_is_a_passed_row_of_class_refused():
    row = refused_row("rows of 6", _raised(_refuse_value_error))
    assert row.passed and row.outcome == "refused"
    assert row.detail == "refused (ValueError: rows of 6 are not whole blocks of 4)"


def test_every_row_in_as_dict_carries_its_class():
    """``"class"`` is passed, refused or the failed row's severity; never the
    default severity of a passed row."""
    report = Report("r")
    report.add(Row("a", "count", True))
    report.add(refused_row("b", _raised(_refuse_value_error)))
    report.add(Row("c", "count", False, detail="x"))
    report.add(Row("d", "range", False, severity="edge"))
    classes = [r["class"] for r in report.as_dict()["rows"]]
    assert classes == ["passed", "refused", "failure", "edge"]
    assert set(classes) <= set(OUTCOMES)


def _crashing_2_4(weights, sparsity):
    """A 2:4 pruner whose reshape crashes on rows that are not whole blocks."""
    return {
        n: w.reshape(-1, 4).abs().argsort(1).argsort(1).ge(2).reshape(w.shape) for n, w in weights.items()
    }


@pytest.mark.teeth
def test_check_pruner_catches_a_crash_read_as_a_refusal():
    """A 2:4 pruner whose ``reshape`` crashes on rows of 6 (RuntimeError:
    shape ... is invalid, a message a refusal could have) did not refuse:
    the ragged case is a failed ``output`` row, not ``refused``."""
    ragged = {"rows of 6": {"w": torch.randn(3, 6, generator=torch.Generator().manual_seed(0))}}
    report = check_pruner(_crashing_2_4, pattern=NM(2, 4), cases=ragged)
    [row] = report.rows
    assert not report.passed and row.check == "output" and row.outcome == "failure"
    assert "raised RuntimeError" in row.detail, row.detail
