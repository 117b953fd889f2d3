"""The report's plots: drawn without pyplot's global state, saved as PNG
bytes that depend only on the data (no date, no software version), and read
back as data series so tests can compare a plot with the ledger's tables.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable

#: Ticks of the draft length k: a plain axis, one tick per k measured.
K_TICKS = (1, 2, 4, 8)
#: One colour per draft, the same in every plot.
DRAFT_COLORS = {"bigram": "C0", "8-bit": "C1", "4-bit": "C2", "n-gram": "C3", "draft GPT": "C4"}
UNTRAINED = math.log(100)


def draft_color(draft: str, i: int) -> str:
    """The colour of ``draft`` in every plot (:data:`DRAFT_COLORS`); a draft not listed gets one
    of C5..C9 by its index ``i``."""
    return DRAFT_COLORS.get(draft, f"C{5 + i % 5}")


def render_plot(draw: Callable) -> tuple[bytes, dict[str, dict], str]:
    """Draw one figure with ``draw(ax) -> caption``; return its PNG bytes, its
    data series (:func:`series`) and the caption.

    ``draw`` may make its own legend; otherwise one goes outside the axes on
    the right, so it hides no data.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.6, 4.4), dpi=110)
    ax = fig.subplots()
    caption = draw(ax)
    ax.grid(alpha=0.3)
    if ax.get_legend() is None:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    buf = io.BytesIO()
    # No "Software" (matplotlib's version) and no date: same data, same bytes.
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue(), series(ax), caption


def series(ax) -> dict[str, dict]:
    """Every labelled data series of ``ax``: lines (``x``, ``y``), error bars
    (``x``, ``y``, ``low``, ``high``), bars (the value on the bars' value axis: ``x``
    = value and ``y`` = position for ``barh``, ``x`` = position and ``y`` = value for ``bar``)
    and reference lines (``y`` of a horizontal line, ``x`` of a vertical one),
    keyed by label. Unlabelled artists (matplotlib's "_child" names) are left out."""
    from matplotlib.container import BarContainer, ErrorbarContainer

    out: dict[str, dict] = {}
    in_containers = set()
    for c in ax.containers:
        label = c.get_label()
        if isinstance(c, ErrorbarContainer):
            line, _, bars = c.lines
            in_containers.add(id(line))
            segs = bars[0].get_segments() if bars else []
            if not label.startswith("_"):
                out[label] = {
                    "x": [float(v) for v in line.get_xdata()],
                    "y": [float(v) for v in line.get_ydata()],
                    "low": [float(s[0][1]) for s in segs],
                    "high": [float(s[1][1]) for s in segs],
                }
        elif isinstance(c, BarContainer) and not label.startswith("_"):
            if c.orientation == "vertical":  # ax.bar: x = position, y = value
                out[label] = {
                    "x": [float(p.get_x() + p.get_width() / 2) for p in c.patches],
                    "y": [float(p.get_y() + p.get_height()) for p in c.patches],
                }
            else:  # ax.barh: x = value, y = position
                out[label] = {
                    "x": [float(p.get_x() + p.get_width()) for p in c.patches],
                    "y": [float(p.get_y() + p.get_height() / 2) for p in c.patches],
                }
    for line in ax.lines:
        label = line.get_label()
        if label.startswith("_") or id(line) in in_containers:
            continue
        out[label] = {"x": [float(v) for v in line.get_xdata()], "y": [float(v) for v in line.get_ydata()]}
    return out


def k_axis(ax, ks) -> None:
    """Draft length k on a plain axis with a tick at each k measured."""
    ticks = sorted(set(ks)) or list(K_TICKS)
    ax.set_xticks(ticks, [str(k) for k in ticks])
    ax.set_xlim(min(ticks) - 0.6, max(ticks) + 0.6)


def dodge(i: int, n: int, width: float = 0.8) -> float:
    """x offset of series ``i`` of ``n`` at one k, so intervals sit side by side."""
    return 0.0 if n <= 1 else width * (i / (n - 1) - 0.5)


def style_legend(ax, drafts: list[str], styles: list[tuple[str, dict]]) -> None:
    """A legend with one entry per draft (its colour) and one per marker
    style (in grey), outside the axes on the right."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=draft_color(d, i), lw=6) for i, d in enumerate(drafts)]
    labels = list(drafts)
    for label, kw in styles:
        handles.append(Line2D([], [], color="0.35", **kw))
        labels.append(label)
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
