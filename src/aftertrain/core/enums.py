"""``StrEnum``: an Enum whose members are their string values (Python 3.11's
``enum.StrEnum``, here for 3.10 too): ``str(Verdict.HOLDS) == "holds"``,
f-strings and JSON write the value, and ``Verdict.HOLDS == "holds"``."""

from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    """Members are strings: compared, formatted and serialised as their value."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
