"""Foundations every layer may import; they import no other part of aftertrain.

- :mod:`~aftertrain.core.tolerances`: every tolerance and significance level,
  each with its derivation;
- :mod:`~aftertrain.core.validation`: the argument checks every public
  function calls (hypothesis's ``internal/validation.py`` pattern);
- :mod:`~aftertrain.core.weights`: the weight matrices of a model (its 2-D
  parameters), the one selector of quantization, pruning and the experiments;
- :mod:`~aftertrain.core.io`: atomic writes;
- :mod:`~aftertrain.core.packing`: the one bit-packing convention of the
  storage formats.
"""
