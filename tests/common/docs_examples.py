"""The examples of docs/checks.md, read as the tests that keep them true run
them: the ```python block after a ``<!-- example: NAME -->`` line."""

from __future__ import annotations

import linecache
import re
from pathlib import Path

CHECKS_MD = Path(__file__).resolve().parents[2] / "docs" / "checks.md"


def docs_block(marker: str) -> str:
    """The ```python block of docs/checks.md that follows the line
    ``<!-- example: marker -->``."""
    after = CHECKS_MD.read_text().split(f"<!-- example: {marker} -->", 1)[1]
    return re.search(r"```python\n(.*?)```", after, flags=re.DOTALL).group(1)


def run_docs_example(marker: str, replace: tuple[str, str] | None = None) -> dict:
    """Execute the example ``marker`` (with ``replace``'s first text, which
    must occur in it, replaced by its second: a broken variant of the
    example); return its namespace."""
    code = docs_block(marker)
    if replace is not None:
        old, new = replace
        assert old in code, f"{old!r} is not in the example {marker!r}"
        code = code.replace(old, new)
    return run_code(code, f"docs/checks.md ({marker})")


def run_code(code: str, where: str) -> dict:
    """Execute ``code`` under the file name ``where`` (its lines readable by
    a traceback, as a refusal's ``raise`` statement is told); its namespace."""
    namespace: dict = {}
    linecache.cache[where] = (len(code), None, code.splitlines(keepends=True), where)
    exec(compile(code, where, "exec"), namespace)  # noqa: S102
    return namespace
