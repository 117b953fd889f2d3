"""What reads as a refusal: the one rule every check applies to an
exception raised on an input the scheme or pattern leaves undefined (a row
the group size does not divide, rows that are not whole N:M blocks).

A refusal is an exception a user would write to refuse: raised by a
``raise`` or ``assert`` statement of the judged code (the implementation or
a library it calls, not torch or the standard library), with a message
(it says what it refuses). compressed-tensors' ``raise ValueError("... not
divisible by group_size ...")`` and torchao's ``assert ..., "Expecting input
size ... to be divisible by block_size ..."`` are refusals; a crash deep in
the computation is not, however it reads: hqq's
``RuntimeError: The size of tensor a (4) must match the size of tensor b
(3)`` comes from a tensor operation (its innermost frame is a line of
arithmetic, not a ``raise``), and a bare ``assert`` says nothing. Anything
that is not a refusal is a failure; on an input the scheme or pattern
defines, so is a refusal.
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback

import torch

from aftertrain.checks.report import Row

#: Where the raises of torch and the standard library live: an exception
#: raised there is their crash (``torch._check``'s ``raise``), not a refusal
#: the judged code wrote.
_LIBRARY_DIRS = tuple(
    os.path.realpath(d) + os.sep for d in (os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"])
)


def is_refusal(error: BaseException) -> bool:
    """True when ``error`` reads as a refusal: it has a message, and its
    innermost frame is a ``raise`` or ``assert`` statement outside torch and
    the standard library (module docstring)."""
    if not str(error).strip():
        return False
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    if os.path.realpath(last.filename).startswith(_LIBRARY_DIRS):
        return False
    # the line's statement, or the one after a colon: ``if w.shape[1] % g: raise ValueError(...)``
    return re.match(r"(?:.*:\s*)?(?:raise|assert)\b", (last.line or "").strip()) is not None


def refused_row(case: str, error: BaseException) -> Row:
    """The passed ``refused`` row of a refusal: ``"refused (ValueError: ...)"``."""
    return Row(case, "refused", True, detail=f"refused ({type(error).__name__}: {error})")
