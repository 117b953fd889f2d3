"""The data series read back from a plot are the numbers drawn: a vertical
bar chart's values are its heights at its positions, a horizontal one's its
widths (negative values included), error bars their ends, reference lines
their level. The report's tests compare plots with the ledger through these
series, so a series read from the wrong axis would let a wrong plot pass."""

from __future__ import annotations

import pytest

from aftertrain.report.plots import series


def _ax():
    from matplotlib.figure import Figure  # at the first test, not at collection (~0.25 CPU s)

    return Figure().subplots()


def test_vertical_bars_read_as_positions_and_heights():
    ax = _ax()
    ax.bar([0.9, 2.1, 3.0], [0.5, -0.25, 2.0], 0.2, label="margins")
    s = series(ax)["margins"]
    assert s["x"] == pytest.approx([0.9, 2.1, 3.0], rel=1e-12)  # left edge + width / 2
    assert s["y"] == [0.5, -0.25, 2.0]


def test_horizontal_bars_read_as_values_and_positions():
    ax = _ax()
    ax.barh([0.2, 1.2], [0.0108, -0.003], height=0.4, label="ours")
    assert series(ax)["ours"] == {"x": [0.0108, -0.003], "y": [0.2, 1.2]}


def test_error_bars_and_reference_lines_read_as_drawn():
    ax = _ax()
    ax.errorbar([2, 4], [1.5, 0.8], yerr=[[0.25, 0.125], [0.5, 0.25]], label="speedup")
    ax.axhline(1.0, label="one")
    s = series(ax)
    assert s["speedup"] == {"x": [2.0, 4.0], "y": [1.5, 0.8], "low": [1.25, 0.675], "high": [2.0, 1.05]}
    assert s["one"]["y"] == [1.0, 1.0]
