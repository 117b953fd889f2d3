"""Loading a script of tools/ as a module, for the suite's tests of its own tooling."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load_tool(script: str) -> Iterator[ModuleType]:
    """Yield ``tools/<script>.py`` as a module, registered in ``sys.modules``
    while loaded (its dataclasses look their module up), removed after."""
    name = f"aftertrain_tools_{script}"
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]
