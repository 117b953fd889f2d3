"""Do two claims ledgers of one commit agree on everything deterministic?

    python tools/same_verdicts.py REFERENCE.json OTHER.json [OTHER.json ...]

Compares each OTHER ledger (written by ``pytest --claims-json``, or the
report's ``build/report/claims.json``) with REFERENCE, test by test: for every
claim test that ran in both (not skipped, not untimed, no part "not run")
and is not a timed part, the outcome and every measured figure must be equal
strings. Timed parts, whose figures move on every run and whose outcome a
loaded machine may leave inconclusive, are left out and counted. So a run
under ``ATEN_CPU_CAPABILITY=default`` with ``--benchmark-disable`` is compared
with a timed run on the native kernels: the same deterministic verdicts and
figures, or one line per difference.

A figure is compared as printed: the words and whole numbers (counts) must
be equal, and each other number within one unit of its last printed digit (a float32 figure whose exact
value lies near a rounding boundary of its print can land on either side:
0.963 against 0.962). A number printed in e-notation below 1e-3 is a
rounding magnitude (``max |cached - recomputed| = 1.34e-05``): it measures
the kernel path's own float32 ordering, so it is judged through its test's
outcome (the test asserts its bound), not compared.

Exit status: 0 when every OTHER agrees, 1 when one differs (each difference
on one line), 2 when a file is not a ledger. .ci/run uses it after its
kernel-path reruns.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

#: A test whose result is not deterministic: its figures are times.
TIMED = "timed part"
#: Outcomes of a test that did not run (nothing to compare).
DID_NOT_RUN = frozenset({"skipped", "untimed"})


def load(path: Path) -> dict[str, dict]:
    """``{nodeid: test record}`` of every claim test in the ledger at ``path``
    (a test tied to several claims appears once per claim: the same record)."""
    try:
        data = json.loads(path.read_text())
        return {t["nodeid"]: t for claim in data["claims"] for t in claim["tests"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a claims ledger ({type(exc).__name__}: {exc})") from None


#: A number as the figures print it (sign, digits, decimals, exponent).
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def same_figure(a: str, b: str) -> bool:
    """``a`` and ``b`` are one figure printed on two kernel paths: the same
    words, whole numbers (counts) equal, each other number within one unit
    of its last printed digit, numbers in e-notation below 1e-3 (rounding
    magnitudes) not compared."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b), strict=True):
        if x == y:
            continue
        if "e" in x.lower() and "e" in y.lower() and max(abs(float(x)), abs(float(y))) < 1e-3:
            continue
        if "." not in x and "e" not in x.lower():
            return False  # a whole number is a count: exact on every path
        mantissa = x.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        exponent = int(x.lower().split("e")[1]) if "e" in x.lower() else 0
        if abs(float(x) - float(y)) > 1.000001 * 10.0 ** (exponent - decimals):
            return False
    return True


def comparable(test: dict) -> bool:
    """A test whose outcome and figures are deterministic and were produced."""
    return test.get("part") != TIMED and test.get("outcome") not in DID_NOT_RUN and not test.get("not_run")


def differences(reference: dict[str, dict], other: dict[str, dict]) -> tuple[list[str], int]:
    """One line per test whose outcome or measured figures (:func:`same_figure`) differ between the
    two ledgers (among the tests :func:`comparable` in both, or comparable in
    one and absent from the other), and the number of tests compared."""
    lines, compared = [], 0
    for nodeid in sorted(set(reference) | set(other)):
        a, b = reference.get(nodeid), other.get(nodeid)
        if a is None or b is None:
            present = a if b is None else b
            if comparable(present):
                lines.append(f"{nodeid}: only in the {'reference' if b is None else 'other'} ledger")
            continue
        if not (comparable(a) and comparable(b)):
            continue
        compared += 1
        if a["outcome"] != b["outcome"]:
            lines.append(f"{nodeid}: outcome {a['outcome']} in the reference, {b['outcome']} here")
        ma, mb = a.get("measured", []), b.get("measured", [])
        if len(ma) != len(mb) or not all(same_figure(x, y) for x, y in zip(ma, mb, strict=True)):
            lines.append(f"{nodeid}: measured {a.get('measured')} in the reference, {b.get('measured')} here")
    return lines, compared


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(
            "usage: python tools/same_verdicts.py REFERENCE.json OTHER.json [OTHER.json ...]", file=sys.stderr
        )
        return 2
    try:
        reference, *others = [load(Path(a)) for a in args]
    except ValueError as exc:
        print(f"same_verdicts: {exc}", file=sys.stderr)
        return 2
    timed = sum(t.get("part") == TIMED for t in reference.values())
    status = 0
    for name, other in zip(args[1:], others, strict=True):
        lines, compared = differences(reference, other)
        if lines:
            status = 1
            print(f"same_verdicts: {name} differs from {args[0]} in {len(lines)} of {compared} tests:")
            print("\n".join(f"  {line}" for line in lines))
        else:
            print(
                f"same_verdicts: {name} agrees with {args[0]}: {compared} tests, outcomes and "
                f"figures equal ({timed} timed tests left out)"
            )
    return status


if __name__ == "__main__":
    sys.exit(main())
