"""Atomic file writes: the one way aftertrain writes a file a user keeps.

A file is written to a temporary name in the same folder and renamed into
place, so a crash or an interrupted run leaves the old file whole. Baselines,
checkpoints, ledgers and reports all go through :func:`atomic_write`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aftertrain.core.validation import is_int


def atomic_write(path: str | os.PathLike, data: str | bytes, *, mode: int = 0o644) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically and
    return the path. The folder must exist; the file ends up with ``mode``
    (mkstemp would leave it private)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path (str or os.PathLike), got {type(path).__name__}")
    if not is_int(mode) or not 0 <= mode <= 0o7777:
        raise ValueError(f"mode must be an int permission mode in [0, 0o7777], got {mode!r}")
    path = Path(path)
    if not isinstance(data, (str, bytes)):
        raise ValueError(f"data must be str or bytes, got {type(data).__name__}")
    if not path.parent.is_dir():
        raise ValueError(f"path {str(path)!r}: folder {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"path {str(path)!r} is a folder, expected a file name")
    payload = data.encode() if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise ValueError(f"path {str(path)!r}: cannot write in {str(path.parent)!r} "
                         f"({err.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
