"""The verdict names of the claims ledger, one set for the ledger, the
report and the README table.

Strongest first: a claim takes the first verdict that any of its tests
gives it (see :mod:`aftertrain.ledger`).
"""

BROKEN = "broken"
DOES_NOT_REPRODUCE = "does not reproduce"
INCONCLUSIVE = "inconclusive"
HOLDS = "holds"
SKIPPED = "skipped"
NOT_COVERED = "not covered"

VERDICTS = (BROKEN, DOES_NOT_REPRODUCE, INCONCLUSIVE, HOLDS, SKIPPED, NOT_COVERED)
