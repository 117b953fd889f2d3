"""Atomic file writes: the one way aftertrain writes a file a user keeps.

A file is written to a temporary name in the same folder and renamed into
place, so a crash or an interrupted run leaves the old file whole. Baselines,
checkpoints, ledgers and reports all go through :func:`atomic_write`.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from aftertrain.core.validation import is_int


def atomic_write(path: str | os.PathLike, data: str | bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically and
    return the path. The folder must exist.

    The file ends up with the permissions ``open(path, "w")`` would give it:
    a file that exists keeps its mode, a new one gets ``0o666`` less the
    process's umask (0o644 under the usual umask 0o022, 0o600 under 0o077);
    ``mode`` sets them outright instead. (A temporary from ``mkstemp`` would
    be 0o600 whatever the umask.)"""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path (str or os.PathLike), got {type(path).__name__}")
    if mode is not None and (not is_int(mode) or not 0 <= mode <= 0o7777):
        raise ValueError(f"mode must be an int permission mode in [0, 0o7777] or None, got {mode!r}")
    path = Path(path)
    if not isinstance(data, (str, bytes)):
        raise ValueError(f"data must be str or bytes, got {type(data).__name__}")
    if not path.parent.is_dir():
        raise ValueError(f"path {str(path)!r}: folder {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"path {str(path)!r} is a folder, expected a file name")
    payload = data.encode() if isinstance(data, str) else data
    if mode is None and path.is_file():
        mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = _new_temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _new_temporary(path: Path) -> tuple[int, Path]:
    """A new file beside ``path`` opened for writing, created with 0o666 so
    the umask applies as to any new file; its descriptor and name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except OSError as err:
            raise ValueError(
                f"path {str(path)!r}: cannot write in {str(path.parent)!r} ({err.strerror})"
            ) from None
    raise FileExistsError(f"no free temporary name beside {str(path)!r} after 100 tries")
