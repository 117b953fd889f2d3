"""docs/claims.md, the claims' specification, is what ``aftertrain.claims.catalogue``
generates now (tools/claims_doc.py). It reads only files of the checkout, so it
runs in every clone and copy of the tree, never skipped."""

from __future__ import annotations

import pytest

from aftertrain.claims.catalogue import CLAIMS, Claim
from tests.common.tools import load_tool


@pytest.fixture(scope="module")
def claims_doc():
    yield from load_tool("claims_doc")


def test_committed_claims_md_is_what_the_catalogue_generates(claims_doc):
    """Byte for byte: a claim added, retitled or reworded in the catalogue
    without `python tools/claims_doc.py --write` fails here."""
    assert claims_doc.DOC.is_file(), "write it: python tools/claims_doc.py --write"
    assert claims_doc.DOC.read_text(encoding="utf-8") == claims_doc.markdown(), (
        "docs/claims.md is stale: python tools/claims_doc.py --write"
    )


def test_every_claim_has_its_anchored_section(claims_doc):
    """Each ID heads one section, anchored at the ID, with its title, so that
    ``claims.md#Q2`` links the claim."""
    text = claims_doc.markdown()
    for claim in CLAIMS.values():
        assert text.count(f"{{#{claim.id}}}") == 1, claim.id
        assert f"### {claim.id} {claims_doc.escaped(claim.title)} {{#{claim.id}}}" in text


def test_markup_in_a_statement_is_shown_verbatim(claims_doc):
    """``2**(bits-1)`` and ``w_hat`` would open Markdown emphasis; ``<`` a tag."""
    assert claims_doc.escaped("2**(bits-1), w_hat, a|b, x < y & z") == (
        r"2\*\*(bits-1), w\_hat, a\|b, x &lt; y &amp; z"
    )


def test_a_claim_of_an_unknown_area_is_refused_by_name(claims_doc):
    claim = Claim("Z1", "new", "a statement", "")
    with pytest.raises(ValueError, match="Z1.*'Z'.*AREAS"):
        claims_doc.area_of(claim)
