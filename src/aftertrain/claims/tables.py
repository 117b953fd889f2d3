"""Names of the tables the tests hand to the claims ledger for the report.

A test attaches its measured table with the ledger's ``claim_record``
fixture (``claim_record.table(tables.Q4, rows)``); the report reads it back
under the same name. One constant per table, so a typo is an AttributeError
rather than a silently missing section.
"""

B1 = "b1"
K1 = "k1"
Q3 = "q3"
Q4 = "q4"
Q6 = "q6"
Q7 = "q7"
Q8 = "q8"
Q9 = "q9"
Q10 = "q10"
Q11 = "q11"
X3 = "x3"
P1 = "p1"
P2 = "p2"
P4 = "p4"
P5 = "p5"
P6 = "p6"
X4 = "x4"
X5 = "x5"
SPEC_FIRST_TOKEN = "spec_first_token"
SPEC_ACCEPTANCE = "spec_acceptance"
SPEC_X1 = "spec_x1"
SPEC_DRAFT_COST = "spec_draft_cost"
SPEC_VERIFY_COST = "spec_verify_cost"
SPEC_SPEEDUP = "spec_speedup"


def p7(sparsity: float) -> str:
    """The P7 table of one sparsity (one benchmark per sparsity)."""
    return f"p7_{sparsity}"
