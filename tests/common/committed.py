"""The committed report (the checkout's ``report/`` folder): where its
ledgers and sweep file are, and a ledger read as the JSON data it holds,
for the tests that hold the code to what was committed."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: ``aftertrain report --update-committed`` writes here.
COMMITTED = ROOT / "report"
#: The committed ledgers: the primary model's (the reference) and the article model's.
LEDGERS = (COMMITTED / "claims.json", COMMITTED / "claims-article.json")


def committed_data(name: str = "claims.json") -> dict:
    """The committed ledger ``name`` as the JSON data it holds (a fresh copy
    each call, so a test may change it)."""
    return json.loads((COMMITTED / name).read_text())
