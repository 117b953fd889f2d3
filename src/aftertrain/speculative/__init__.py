"""Speculative decoding (part 4): the verification rule and the generator.

- :mod:`aftertrain.speculative.rule`: the rule (S1) as pure functions of p,
  q, the drafts and the uniforms: :func:`verify`, :func:`verify_batch`,
  :func:`verify_with_uniforms`.
- :mod:`aftertrain.speculative.generator`: :func:`speculative_generate`,
  its :class:`SpeculativeResult`, and the :class:`SpeculativeDecoder` it runs
  (prefilled once, decoding from the prompt again and again).

The distributions p and q are :func:`aftertrain.lm.decoding.probabilities`; the
experiments that tabulate the claims (S2, S4-S7, X1, X2, X8) are in
:mod:`aftertrain.experiments.speculative`.
"""

from aftertrain.speculative.generator import (
    SpeculativeDecoder,
    SpeculativeResult,
    speculative_generate,
)
from aftertrain.speculative.rule import verify, verify_batch, verify_with_uniforms

__all__ = [
    "verify",
    "verify_batch",
    "verify_with_uniforms",
    "SpeculativeDecoder",
    "SpeculativeResult",
    "speculative_generate",
]
