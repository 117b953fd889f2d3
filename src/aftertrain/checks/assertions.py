"""One call per kit for a user's own test suite: :func:`assert_rule`
(:func:`rule_reports` is what ``aftertrain check rule`` runs),
:func:`assert_generator`, :func:`assert_quantizer` and :func:`assert_pruner`,
each defined beside its checks (its kit's one import place:
``aftertrain.checks.speculative``, ``.quant``, ``.prune``) and gathered
here. Importable without pytest."""

from __future__ import annotations

from aftertrain.checks.prune import assert_pruner
from aftertrain.checks.quant import assert_quantizer
from aftertrain.checks.speculative import assert_generator, assert_rule, rule_reports

__all__ = ["assert_generator", "assert_pruner", "assert_quantizer", "assert_rule", "rule_reports"]
