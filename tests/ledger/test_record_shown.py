"""``claim_record.measured(template, *rows, **values)`` and ``shown``: the
text a template writes is the f-string's it replaced, the figures it names
are those the figure inventory reads from the call (tests/common/measured.py),
and a value of the wrong kind is refused with the placeholder named."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aftertrain.checks.zoo import Check, RuleBug
from aftertrain.experiments.prune import LossRow
from aftertrain.experiments.quant import BitsRow, Reconstruction
from aftertrain.experiments.speculative import AcceptanceRow, LongRunRow
from aftertrain.experiments.tables import CsrRatio
from aftertrain.ledger.record import ClaimRecord, Shown, shown
from aftertrain.ledger.state import MEASURED_PROPERTY
from tests.common.figures import ROOT
from tests.common.measured import measured_placeholders

FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _acceptance(cls=AcceptanceRow, k=1):
    return cls("bigram", k, 10, 4, 7, 0.4, 1.5, 0.41)


@given(FLOATS, FLOATS, st.integers(-(10**9), 10**9))
def test_a_row_field_is_written_as_its_f_string(per_tensor, per_channel, bits):
    row = BitsRow(bits, per_tensor, per_channel)
    text = shown(
        "{BitsRow.bits} bits: per-tensor {BitsRow.per_tensor:.4f}, per-channel {BitsRow.per_channel:+.4f}",
        row,
    )
    assert text == (f"{row.bits} bits: per-tensor {row.per_tensor:.4f}, per-channel {row.per_channel:+.4f}")


@given(st.floats(0, 1))
def test_a_percent_format_is_a_hundred_times_the_fraction(fraction):
    """``{x:.1%}`` writes what ``f"{100 * x:.1f}%"`` wrote (test_quant's reconstruction)."""
    row = Reconstruction(fraction, 0.0)
    assert shown("{Reconstruction.zero_fraction:.1%}", row) == f"{100 * fraction:.1f}%"


def test_rows_values_labels_and_texts_are_written_as_the_f_strings_they_replace():
    rows = [BitsRow(8, 2.0291, 2.02805), BitsRow(4, 2.5, None)]
    assert shown(
        "{BitsRow.bits}: {BitsRow.per_tensor:.4f} {BitsRow.per_channel}", rows, sep=", "
    ) == ", ".join(f"{r.bits}: {r.per_tensor:.4f} {r.per_channel}" for r in rows)
    by_key = {"per-tensor": Reconstruction(0.952, 0.0519), "per-channel": Reconstruction(0.781, 0.0419)}
    assert shown("{key!s} MAE {Reconstruction.mean_abs_error:.4f}", by_key) == "; ".join(
        f"{g} MAE {f.mean_abs_error:.4f}" for g, f in by_key.items()
    )
    loss = [LossRow(0.1, 2.1, 2.2, 2.3), LossRow(0.3, 2.2, 2.4, 3.1)]
    article = {0.1: (1.0, 2.0, 3.0), 0.3: (4.0, 5.0, 6.0)}
    assert shown(
        "{LossRow.sparsity:.0%} {LossRow.global_:.4f} ({article[0]:.4f}/{article[2]:.4f}) {magnitude:.4f}",
        loss,
        article=lambda r: article[r.sparsity],
        magnitude=lambda r: max(r.global_, r.layer),
    ) == "; ".join(
        f"{r.sparsity:.0%} {r.global_:.4f} ({article[r.sparsity][0]:.4f}/"
        f"{article[r.sparsity][2]:.4f}) {max(r.global_, r.layer):.4f}"
        for r in loss
    )
    ratio = CsrRatio(0.999, 0.42, (0.4, 0.45))
    assert (
        shown("{CsrRatio.sparsity:.1%}: {CsrRatio.ci[0]:.3f}-{CsrRatio.ci[1]:.3f}", ratio)
        == f"{ratio.sparsity:.1%}: {ratio.ci[0]:.3f}-{ratio.ci[1]:.3f}"
    )
    losses = {"bigram": 2.5, "8-bit": 2.03}
    assert shown("{key!s} val loss {value:.4f}", losses, sep=", ") == ", ".join(
        f"{k} val loss {v:.4f}" for k, v in losses.items()
    )
    ks = (1, 2, 4, 8)
    assert (
        shown("{n} drafts x k {ks}; {first}; {d}", n=5, ks=ks, first=None, d={"a": 1.0})
        == f"{5} drafts x k {ks}; {None}; { ({'a': 1.0}) }"
    )
    inner = shown("{BitsRow.bits} bits", rows)
    assert (
        shown("float32 {f:.4f}; {rows} ({text!r})", f=2.0272, rows=inner, text="ab'c")
        == f"float32 {2.0272:.4f}; {inner} ({'ab' + chr(39) + 'c'!r})"
    )
    assert shown("no figure") == "no figure" and shown("{BitsRow.bits}", []) == ""
    bug = RuleBug.ALWAYS_ACCEPT
    assert shown("{bug!s} ({check!s})", bug=bug, check=Check.RULE) == f"{bug} ({Check.RULE})"


def test_a_text_names_the_figures_it_shows_as_the_inventory_reads_them_from_the_call():
    """The figures a call shows at run time are those tests/common/measured.py
    names from its source: rows by type and field, named values by name."""
    source = (
        "from aftertrain.ledger.record import shown\n"
        "def test_x(claim_record, rows, x):\n"
        '    claim_record.measured("{BitsRow.bits} bits {BitsRow.per_tensor:.4f}, {x:.2f}; '
        '{inner}, {label!s}", rows, x=x, label="l",\n'
        '                          inner=shown("{CsrRatio.ci[0]:.3f} {y}", ratio, y=x + 1))\n'
    )
    static = {
        p.figure.split(" | ")[1]: (p.kind, p.link)
        for p in measured_placeholders(ROOT, {"tests/x/test_x.py": source})
    }
    assert static == {
        "BitsRow.bits": ("field", "row:BitsRow.bits"),
        "BitsRow.per_tensor": ("field", "row:BitsRow.per_tensor"),
        "x": ("", ""),
        "inner": ("parts", ""),
        "label": ("text", ""),
        "CsrRatio.ci": ("field", "row:CsrRatio.ci"),
        "y": ("", ""),
    }
    ratio = CsrRatio(0.5, 1.0, (0.9, 1.1))
    text = shown(
        "{BitsRow.bits} bits {BitsRow.per_tensor:.4f}, {x:.2f}; {inner}, {label!s}",
        [BitsRow(8, 2.0, 2.0)],
        x=0.5,
        label="l",
        inner=shown("{CsrRatio.ci[0]:.3f} {y}", ratio, y=1.5),
    )
    assert isinstance(text, Shown)
    assert text.figures == (
        "row:BitsRow.bits",
        "row:BitsRow.per_tensor",
        "value:x",
        "row:CsrRatio.ci",
        "value:y",
    )


def test_figures_are_in_the_order_first_shown_each_once_over_a_collection():
    """A template written once per row of a collection, showing one field
    twice and a text of shown(...) whose figures repeat its own: each figure
    is named once, where it is first shown."""
    rows = [BitsRow(8, 2.0, 2.1), BitsRow(4, 2.5, 2.4), BitsRow(2, 3.0, 2.9)]
    inner = shown("{x:.1f} {BitsRow.per_channel:.2f}", BitsRow(8, 1.0, 1.0), x=1.0)
    text = shown(
        "{BitsRow.per_tensor:.4f} {x:.2f} {BitsRow.bits} {BitsRow.per_tensor:.1f} {inner}",
        rows,
        x=0.5,
        inner=inner,
    )
    assert text.count("; ") == 2
    assert text.figures == (
        "row:BitsRow.per_tensor",
        "value:x",
        "row:BitsRow.bits",
        "row:BitsRow.per_channel",
    )


def test_measured_records_the_text():
    node = SimpleNamespace(user_properties=[])
    ClaimRecord(node, None).measured("{BitsRow.bits} bits", BitsRow(8, 2.0, 2.0))
    ClaimRecord(node, None).measured("written by hand")
    assert node.user_properties == [(MEASURED_PROPERTY, "8 bits"), (MEASURED_PROPERTY, "written by hand")]
    assert all(type(v) is str for _, v in node.user_properties)


@pytest.mark.teeth
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: shown("{x!s}", x=1.5), r"\{x!s\} is a label and takes a str or an Enum member, got 1.5"),
        (lambda: shown("{x:.2f}", x="1.50"), r"\{x\} shows a figure and takes a number"),
        (lambda: shown("{x}", x=(1, "a")), r"\{x\} shows a figure"),
        (lambda: shown("{x:.2f}", x=True), r"\{x\} shows a figure and takes a number \(not a bool\)"),
        (lambda: shown("{x}", x={"a": False}), r"\{x\} shows a figure and takes a number \(not a bool\)"),
        (lambda: shown("{BitsRow.bits}"), r"no value for \{BitsRow.bits\}"),
        (lambda: shown("{AcceptanceRow.k}", _acceptance(LongRunRow)), r"no value for \{AcceptanceRow.k\}"),
        (lambda: shown("{AcceptanceRow.nope}", _acceptance()), r"no value for \{AcceptanceRow.nope\}"),
        (lambda: shown("{x}", y=1), r"no value for \{x\}.*given \['y'\]"),
        (lambda: shown("{}", 1), "each placeholder names its figure"),
        (lambda: shown("{x:{w}}", x=1, w=2), "without nested fields"),
        (lambda: shown("{x", x=1), "template must be a format string"),
        (
            lambda: shown("{BitsRow.bits}", [BitsRow(8, 1.0, 1.0)], [BitsRow(4, 1.0, 1.0)]),
            "at most one collection",
        ),
        (lambda: shown("{x}", "rows", x=1), "at most one collection"),
        (lambda: shown(f"{1.5}", sep=1), "sep must be a str"),
        (lambda: shown(b"x"), "template must be a str"),
        (
            lambda: ClaimRecord(SimpleNamespace(user_properties=[]), None).measured("{BitsRow.bits}", []),
            "template must write a non-empty text",
        ),
    ],
)
def test_shown_catches_a_value_of_the_wrong_kind(call, message):
    """A number passed as a label, a string or a bool as a figure, a row of another
    type than the template names (LongRunRow for AcceptanceRow), a missing
    value or field, an unnamed or nested placeholder, two collections, an
    empty text: each is refused with the placeholder named."""
    with pytest.raises(ValueError, match=message):
        call()
