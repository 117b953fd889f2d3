"""Reading the tables that docs pages and the README show from the code:
the ``#:`` comment on each member of an enum (the one definition of a
verdict or outcome word) and a markdown table's body rows."""

from __future__ import annotations

import re


def member_comments(source: str) -> dict[str, str]:
    """Each ``NAME = "word"`` line's ``#:`` comment above it, as one line of
    markdown (``x`` and :role:`x` written `x`), by its word."""
    found, pending = {}, []
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("#:"):
            pending.append(text[2:].strip())
            continue
        member = re.fullmatch(r'[A-Z_]+ = "([^"]+)"', text)
        if member and pending:
            found[member[1]] = re.sub(r":\w+:`([^`]+)`", r"`\1`", " ".join(pending)).replace("``", "`")
        pending = []
    return found


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of each body row of the first table of ``text`` after the
    first column heading ``heading`` (backticks around a word kept)."""
    lines = text.split(f"| {heading} |", 1)[1].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows
