"""Report section: the baselines (B1) and the cache (K1)."""

from __future__ import annotations

from aftertrain.claims import tables as TB
from aftertrain.claims.catalogue import ARTICLE_TABLES as A
from aftertrain.experiments.tables import read
from aftertrain.report.document import Document
from aftertrain.report.markdown import fmt

TITLE = "Baselines (B1, K1)"


def section(doc: Document) -> None:
    b1 = read(TB.B1, doc.ledger.table(TB.B1))
    if b1 is None:
        doc.missing("B1")
    else:
        doc.table("Validation loss of the baselines (nats)", ("B1",), ["model", "article", "ours"],
                  [[k, fmt(A["b1"][k]), fmt(v)] for k, v in b1.to_record().items()])
    k1 = read(TB.K1, doc.ledger.table(TB.K1))
    if k1 is not None:
        doc.table("Cached decoding against full recomputation", ("K1",),
                  ["", "article", "ours"],
                  [["largest logit difference", f"{A['k1']['max_diff']:.2e}",
                    f"{k1.max_diff:.2e}"]])
