"""Pruning (part 8): masks over the 2-D weights and sparse storage formats.

:mod:`aftertrain.prune.masks` chooses the weights to zero and makes pruned
copies; :mod:`aftertrain.prune.formats` stores a matrix with zeros and counts
its bytes. The article's experiments are in :mod:`aftertrain.experiments.prune`.
The public names of both modules are importable from here.
"""

from aftertrain.prune.formats import (
    Format,
    Stored,
    break_even_sparsity,
    bytes_per_element,
    bytes_per_element_formula,
    from_stored,
    to_stored,
)
from aftertrain.prune.masks import (
    MagnitudeRanking,
    Method,
    apply_masks,
    global_magnitude_masks,
    layer_magnitude_masks,
    masks_for,
    n_removed,
    prunable_weights,
    pruned_model,
    random_masks,
    sparsity_of,
    two_four_masks,
)

__all__ = [
    "Format",
    "MagnitudeRanking",
    "Method",
    "Stored",
    "apply_masks",
    "break_even_sparsity",
    "bytes_per_element",
    "bytes_per_element_formula",
    "from_stored",
    "global_magnitude_masks",
    "layer_magnitude_masks",
    "masks_for",
    "n_removed",
    "prunable_weights",
    "pruned_model",
    "random_masks",
    "sparsity_of",
    "to_stored",
    "two_four_masks",
]
