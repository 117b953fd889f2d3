"""The files a user keeps: written atomically, read back with bounds.

A file is written to a temporary name in the same folder and renamed into
place, so a crash or an interrupted run leaves the old file whole. Baselines,
checkpoints, ledgers and reports all go through :func:`atomic_write`.

A JSON file a user names (a claims ledger, a sweep file) is read by
:func:`read_json`: only a regular file (a named pipe would wait forever,
``/dev/zero`` never ends), at most :data:`MAX_JSON_BYTES`, nested at most
:data:`MAX_JSON_DEPTH` deep, every number finite and every integer at most
:data:`MAX_JSON_INT_DIGITS` digits long; anything else is one
ValueError line naming the file and what is allowed.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import stat
from pathlib import Path

from aftertrain.core.validation import is_int

#: The largest JSON file :func:`read_json` reads: a claims ledger is about
#: 160 kB and a sweep file less; 64 MiB is 400 times that, and still reads
#: in about a second.
MAX_JSON_BYTES = 64 * 2**20
#: The deepest nesting :func:`read_json` reads: a ledger and a sweep file
#: nest 6 deep (a nested table row's list); Python's parser fails near
#: 1,000 deep.
MAX_JSON_DEPTH = 32
#: The most digits of one integer :func:`read_json` reads: Python's own
#: limit on turning a string into an int (``sys.get_int_max_str_digits``'s
#: default); a figure of aftertrain has fewer than 20.
MAX_JSON_INT_DIGITS = 4300


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


def read_json(path: str | os.PathLike, what: str) -> object:
    """The JSON value in the file at ``path``, the file called ``what`` in
    every message (``"claims ledger"``). ValueError, one line naming
    ``what``, the path and what is allowed, for: no such file, a folder, a
    symbolic link loop, anything but a regular file, a file that cannot be
    read, one over :data:`MAX_JSON_BYTES`, not UTF-8, not JSON, nested over
    :data:`MAX_JSON_DEPTH` deep, holding a number that is not finite
    (``NaN``, ``Infinity``, ``1e999``) or an integer of more than
    :data:`MAX_JSON_INT_DIGITS` digits."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path (str or os.PathLike), got {type(path).__name__}")
    where = f"{what} {os.fspath(path)}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{where} does not exist") from None
    except OSError as err:
        why = "is a symbolic link loop" if err.errno == errno.ELOOP else f"cannot be read ({err.strerror})"
        raise ValueError(f"{where} {why}; give a regular JSON file") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{where} is a folder; give a regular JSON file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a named pipe" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
        raise ValueError(f"{where} is {kind}, not a regular file; give a regular JSON file")
    if st.st_size > MAX_JSON_BYTES:
        raise ValueError(f"{where} is {st.st_size:,} bytes; at most {MAX_JSON_BYTES:,} are read")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_JSON_BYTES + 1)
    except PermissionError:
        raise ValueError(f"{where} cannot be read (permission denied)") from None
    except OSError as err:
        raise ValueError(f"{where} cannot be read ({err.strerror})") from None
    if len(raw) > MAX_JSON_BYTES:  # it grew after the stat
        raise ValueError(f"{where} is over {MAX_JSON_BYTES:,} bytes; at most that many are read")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ValueError(f"{where} is not a text file (not JSON)") from None
    deep = f"{where} is nested more than {MAX_JSON_DEPTH} deep; a JSON file of aftertrain is not"
    try:
        value = json.loads(
            text, parse_constant=_not_finite, parse_float=_finite_float, parse_int=_bounded_int
        )
    except json.JSONDecodeError as err:
        raise ValueError(f"{where} is not valid JSON: {err}") from None
    except _TooLong as err:
        raise ValueError(
            f"{where} holds an integer of {err}; at most {MAX_JSON_INT_DIGITS:,} digits are read"
        ) from None
    except _NotFinite as err:
        raise ValueError(f"{where} holds the number {err}, not finite; every figure must be finite") from None
    except RecursionError:  # deeper than the parser goes
        raise ValueError(deep) from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise ValueError(deep)
    return value


class _NotFinite(ValueError):
    pass


def _not_finite(name: str) -> float:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


class _TooLong(ValueError):
    pass


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise _TooLong(f"{digits:,} digits")
    return int(text)


def _depth(value: object) -> int:
    """How deep ``value`` nests lists and objects (``1``: 0, ``[1]``: 1, ``[[]]``: 2)."""
    deepest, level = 0, [value]
    while True:
        level = [x for x in level if isinstance(x, (list, dict))]
        if not level:
            return deepest
        deepest += 1
        level = [v for x in level for v in (x.values() if isinstance(x, dict) else x)]
