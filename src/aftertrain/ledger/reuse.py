"""``--model-free-from FILE``: the outcomes of the tests that do not read the
model, taken from an earlier run of the same commit instead of run again.

Most of the suite does not read the model under test (the rule on toy
tensors, the checks' teeth, the command line, the report): 2,002 of 2,121
default tests, 137 of the 228 that carry a claim. Their outcomes are the
same whatever ``--aftertrain-model`` says, so ``aftertrain report`` runs
them once, in the first model's run, and gives each later model's run that
run's ledger: the later run deselects every test that does not read the
model (:func:`aftertrain.ledger.model.reads_model`), and its ledger takes
the earlier outcomes of those that carry a claim, and the tables they wrote
(:meth:`aftertrain.ledger.state.Ledger.reuse`). The verdicts are then
decided from both, as one run would.

The earlier ledger must say which of its tests read the model, must not
have taken its own from a third run, and must be of this checkout's commit
(``meta.commit``, uncommitted changes included in the comparison) and of
the same run kind (``--quick`` or not). A claim-tagged test that does not
read the model but has no outcome in it runs here.
"""

from __future__ import annotations

import json
from pathlib import Path

from aftertrain.claims.ledgerfile import LedgerFile, LedgerFormatError
from aftertrain.core import runmeta

FLAG = "--model-free-from"


def read(path: str, root: Path | None, quick: bool) -> LedgerFile:
    """The ledger at ``path``, checked usable for this run (checkout ``root``,
    ``quick`` or not); ValueError naming the flag, the file and the fix."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{FLAG} {path}: cannot read a claims ledger there ({err})") from None
    try:
        file = LedgerFile.from_json(data, f"{FLAG} {path}")
    except LedgerFormatError as err:
        raise ValueError(str(err)) from None
    tests = [t for c in file.claims for t in c.tests]
    if not tests or any(t.reads_model is None for t in tests):
        raise ValueError(f"{FLAG} {path}: the ledger does not say which tests read the model "
                         "(written before aftertrain recorded it, or no claim test ran); write it "
                         "again with `python -m pytest --claims-json FILE`")
    meta = file.meta
    if meta.get("model_free_from"):
        raise ValueError(f"{FLAG} {path}: that run took its own model-free outcomes from "
                         f"{meta['model_free_from'].get('ledger')}; give the ledger of the run "
                         "that ran them")
    here = runmeta.commit(root)
    if meta.get("commit") != here:
        raise ValueError(f"{FLAG} {path}: the ledger is of commit {meta.get('commit')}, this "
                         f"checkout is at {here}: another commit's outcomes cannot stand for "
                         "this one's")
    if bool(meta.get("quick")) != quick:
        kind = {True: "a quick run", False: "a full run"}
        raise ValueError(f"{FLAG} {path}: the ledger is of {kind[bool(meta.get('quick'))]}, "
                         f"this is {kind[quick]}; give a ledger of the same kind")
    return file


def reused_ids(file: LedgerFile) -> frozenset[str]:
    """The node IDs whose outcomes the run takes from ``file``: its tests
    that do not read the model."""
    return frozenset(t.nodeid for c in file.claims for t in c.tests if t.reads_model is False)
