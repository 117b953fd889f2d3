"""Checks anyone can point at their own implementation.

``aftertrain.checks.speculative`` judges a speculative sampler's verification
rule and decoding loop, ``aftertrain.checks.quant`` a weight quantizer and
``aftertrain.checks.prune`` a pruner. Each takes the implementation as a
callable with a documented protocol (docs/checks.md) and returns a
:class:`Report` whose failed rows are classed (failure, edge finding,
mismatch: :mod:`aftertrain.checks.report`); each kit module is its one
import place, with its one-line ``assert_*``. Importable without pytest;
``aftertrain.checks.strategies`` (hypothesis strategies for a user's own
property tests) needs hypothesis, the ``strategies`` extra.
"""

from aftertrain.checks.report import Report, Row

__all__ = ["Report", "Row"]
