"""What reads as a refusal: the one rule every check applies to an
exception raised on an input the scheme or pattern leaves undefined (a row
the group size does not divide, rows that are not whole N:M blocks).

A refusal is an exception a user would write to refuse: raised by a
``raise`` or ``assert`` statement of the judged code itself (the
implementation or a library it calls, not torch or the standard library),
with a message (it says what it refuses). compressed-tensors' ``raise
ValueError("... not divisible by group_size ...")`` and torchao's ``assert
..., "Expecting input size ... to be divisible by block_size ..."`` are
refusals; a crash deep in the computation is not, however it reads: hqq's
``RuntimeError: The size of tensor a (4) must match the size of tensor b
(3)`` comes from a tensor operation (its innermost frame is a line of
arithmetic, not a ``raise``), an ``IndexError`` raised while a ``raise``
builds its message is the message's crash (the statement never raised),
and a bare ``assert`` says nothing. Anything that is not a refusal is a
failure; on an input the scheme or pattern defines, so is a refusal.
"""

from __future__ import annotations

import dis
import os
import site
import sysconfig

import torch

from aftertrain.checks.report import Row
from aftertrain.core.validation import check_type


def _folders(paths) -> tuple[str, ...]:
    return tuple(sorted({os.path.realpath(p) + os.sep for p in paths if p}))


_PATHS = sysconfig.get_paths()
#: Where the raises of torch and the standard library live: an exception
#: raised there is their crash (``torch._check``'s ``raise``), not a refusal
#: the judged code wrote. pyenv, conda, the official Docker images and
#: setup-python put site-packages inside the standard library's folder:
#: what is installed there is judged code.
_TORCH = _folders([os.path.dirname(torch.__file__)])
_STDLIB = _folders([_PATHS["stdlib"], _PATHS["platstdlib"]])
_SITE = _folders(
    [_PATHS["purelib"], _PATHS["platlib"], *site.getsitepackages(), site.getusersitepackages()]
    + [os.path.join(d, name) for d in _STDLIB for name in ("site-packages", "dist-packages")]
)


def in_library(
    path: str,
    *,
    torch_dirs: tuple[str, ...] = _TORCH,
    stdlib_dirs: tuple[str, ...] = _STDLIB,
    site_dirs: tuple[str, ...] = _SITE,
) -> bool:
    """True when the source file ``path`` (resolved) is torch's or the
    standard library's own: under a folder of ``torch_dirs``, or under one of
    ``stdlib_dirs`` and none of ``site_dirs`` (folders ending in ``os.sep``)."""
    return path.startswith(torch_dirs) or (path.startswith(stdlib_dirs) and not path.startswith(site_dirs))


def is_refusal(error: BaseException) -> bool:
    """True when ``error`` reads as a refusal: it has a message, and its
    innermost frame, outside torch and the standard library, raised it at a
    ``raise`` or ``assert`` statement's own raise (module docstring). An
    exception raised on the way, while the statement computes its message,
    is raised by another instruction of the line and is not a refusal."""
    check_type("error", error, BaseException, "an exception (a BaseException)")
    tb = error.__traceback__
    if not str(error).strip() or tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if in_library(os.path.realpath(code.co_filename)):
        return False
    # ``raise`` and a failed ``assert`` both end in RAISE_VARARGS, the instruction that raised
    return any(i.offset == tb.tb_lasti and i.opname == "RAISE_VARARGS" for i in dis.get_instructions(code))


def refused_row(case: str, error: BaseException) -> Row:
    """The passed ``refused`` row of a refusal: ``"refused (ValueError: ...)"``."""
    return Row(case, "refused", True, detail=f"refused ({type(error).__name__}: {error})")
