"""The claims' vocabulary: what is claimed and how a verdict is spoken.

- :mod:`~aftertrain.claims.catalogue`: every claim ID of CLAIMS.md with the
  article's figures;
- :mod:`~aftertrain.claims.tables`: the names of the tables a claim records;
- :mod:`~aftertrain.claims.verdicts`: the verdicts a claim can get.

Imported by the experiments, the ledger and the report; imports nothing but
:mod:`aftertrain.core`.
"""
