"""Report section: the baselines (B1) and the cache (K1)."""

from __future__ import annotations

from dataclasses import fields

from aftertrain.experiments import tables as ET
from aftertrain.experiments.article import ARTICLE
from aftertrain.report.document import Document
from aftertrain.report.markdown import fmt

TITLE = "Baselines (B1, K1)"


def section(doc: Document) -> None:
    """Add the baselines' section to ``doc``: B1's validation losses beside the article's (a "no
    figures" line when the test did not record them), then K1's largest cached-decoding
    difference when recorded."""
    b1 = doc.ledger.table(ET.B1)
    if b1 is None:
        doc.missing("B1")
    else:
        doc.table(
            "Validation loss of the baselines (nats)",
            ("B1",),
            ["model", "article", "ours"],
            [[f.name, fmt(getattr(ARTICLE.b1, f.name)), fmt(getattr(b1, f.name))] for f in fields(b1)],
        )
    k1 = doc.ledger.table(ET.K1)
    if k1 is not None:
        doc.table(
            "Cached decoding against full recomputation",
            ("K1",),
            ["", "article", "ours"],
            [["largest logit difference", f"{ARTICLE.k1_max_diff:.2e}", f"{k1.max_diff:.2e}"]],
        )
