"""The claim list in aftertrain.claims.catalogue matches shared/claims/CLAIMS.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aftertrain.claims.catalogue import CLAIMS, Claim

# CI checks out shared/ beside the clone: ../shared relative to the repo root.
CLAIMS_MD = Path(__file__).resolve().parents[2].parent / "shared" / "claims" / "CLAIMS.md"
_BOLD = re.compile(r"^- \*\*([A-Z]\d+) (.+?)\.?\*\*", re.MULTILINE)


@pytest.mark.skipif(not CLAIMS_MD.is_file(), reason=f"{CLAIMS_MD} is not reachable")
def test_claim_ids_and_titles_match_claims_md_in_order():
    """Every ``- **ID title.**`` line of CLAIMS.md (the period may be missing),
    in its order, and nothing else."""
    listed = _BOLD.findall(CLAIMS_MD.read_text(encoding="utf-8"))
    assert [(c.id, c.title) for c in CLAIMS.values()] == listed


def test_every_claim_is_complete_and_keyed_by_its_id():
    assert len(CLAIMS) == 37
    for key, claim in CLAIMS.items():
        assert isinstance(claim, Claim) and claim.id == key
        assert claim.title and claim.statement and "\n" not in claim.statement
