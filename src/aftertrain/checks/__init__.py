"""Checks anyone can point at their own implementation.

``aftertrain.checks.speculative`` judges a speculative sampler's verification
rule and decoding loop, ``aftertrain.checks.quant`` a weight quantizer and
``aftertrain.checks.prune`` a pruner. Each takes the implementation as a
callable with a documented protocol (docs/checks.md) and returns a
:class:`Report`. Importable without pytest.
"""

from aftertrain.checks.report import Report, Row

__all__ = ["Report", "Row"]
