"""The experiments that produce the claims' tables: loss by bits, sensitivity,
loss by sparsity, acceptance, draft and verification costs, speedups.

They apply the primitives (:mod:`aftertrain.quant`, :mod:`aftertrain.prune`,
:mod:`aftertrain.speculative`) to a model and tabulate; the tests assert on
their tables and the report renders them.
"""
