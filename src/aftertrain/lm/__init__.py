"""The language model and everything it needs, below every other layer.

- :mod:`~aftertrain.lm.text`: the corpus and its character vocabulary;
- :mod:`~aftertrain.lm.protocol`: :class:`NextTokenModel`, the one interface
  every model here implements (the GPT, the table models, the kit's toys);
- :mod:`~aftertrain.lm.model`: the GPT (nanoGPT's shape, the article's
  parameter names);
- :mod:`~aftertrain.lm.ngram`: the table models (add-alpha bigram, unigram,
  uniform, n-gram), over any vocabulary;
- :mod:`~aftertrain.lm.counts`: token and pair counts in memory
  proportional to the corpus, and their add-alpha smoothing;
- :mod:`~aftertrain.lm.decoding`, :mod:`~aftertrain.lm.evaluation`: sampling
  and the validation loss;
- :mod:`~aftertrain.lm.checkpoint`, :mod:`~aftertrain.lm.train`,
  :mod:`~aftertrain.lm.registry`: stored weights, the training recipe, the
  bundled models by name.

Nothing here imports compression, measurement or claims code.
"""
