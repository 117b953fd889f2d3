"""The verdicts of the claims ledger, one set for the ledger, the report and
the README table.

Strongest first: a claim takes the first verdict that any of its tests
gives it (see :mod:`aftertrain.ledger`). str-valued, so a verdict compares
equal to its name and the ledger's JSON holds the plain name.
"""

from enum import Enum


class Verdict(str, Enum):
    BROKEN = "broken"
    DOES_NOT_REPRODUCE = "does not reproduce"
    INCONCLUSIVE = "inconclusive"
    HOLDS = "holds"
    SKIPPED = "skipped"
    NOT_COVERED = "not covered"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


BROKEN = Verdict.BROKEN
DOES_NOT_REPRODUCE = Verdict.DOES_NOT_REPRODUCE
INCONCLUSIVE = Verdict.INCONCLUSIVE
HOLDS = Verdict.HOLDS
SKIPPED = Verdict.SKIPPED
NOT_COVERED = Verdict.NOT_COVERED

VERDICTS = tuple(Verdict)
