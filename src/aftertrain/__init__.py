"""aftertrain: executable claims about compressing a small character-level GPT.

Submodules load on first use (``aftertrain.lm``, ``aftertrain.quant``...), so
the pytest ledger plugin (``-p aftertrain.ledger``) and ``aftertrain --version``
do not import torch. The layers are in docs/architecture.md.
"""

import importlib

__version__ = "0.1.0"

#: Every package and module of the package (tests/cli/test_cli_imports.py checks
#: the list against the folder).
_SUBMODULES = {
    "core",
    "claims",
    "lm",
    "quant",
    "prune",
    "speculative",
    "stats",
    "timing",
    "experiments",
    "checks",
    "ledger",
    "report",
    "cli",
}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"aftertrain.{name}")
    raise AttributeError(f"module 'aftertrain' has no attribute {name!r}")
