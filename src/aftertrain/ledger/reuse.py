"""``--model-free-from FILE``: the outcomes of the tests that do not read the
model, taken from an earlier run of the same code instead of run again.

Most of the suite does not read the model under test (the rule on toy
tensors, the checks' teeth, the command line, the report): 2,023 of the
2,142 default tests, 137 of the 228 that carry a claim. Their outcomes are the
same whatever ``--aftertrain-model`` says, so ``aftertrain report`` runs
them once, in the first model's run, and gives each later model's run that
run's ledger: the later run deselects every test that does not read the
model (:func:`aftertrain.ledger.model_under_test.reads_model`), and its ledger takes
the earlier outcomes of those that carry a claim, and the tables they wrote
(:meth:`aftertrain.ledger.state.Ledger.reuse`). The verdicts are then
decided from both, as one run would.

The earlier ledger must say which of its tests read the model, must not
have taken its own from a third run, must be of this checkout's code (the
fingerprint of the commit and of the uncommitted changes to tracked files,
``meta.worktree``: :func:`aftertrain.core.runmeta.worktree`; untracked files
are not compared) and of the same run kind (``--quick`` or not). A
claim-tagged test that does not read the model but has no outcome in it
runs here; a test without a claim that does not read the model does not
run at all (its outcome is in no ledger: the earlier run's exit status
carried it).

A test whose outcome the model did shape is not taken either: on a model
without pinned expectations a failed quality assertion becomes "does not
reproduce on MODEL" (:mod:`aftertrain.ledger.model_under_test`), and such a test is
recorded as reading the model.
"""

from __future__ import annotations

from pathlib import Path

from aftertrain.claims.ledgerfile import LedgerFile, LedgerFormatError
from aftertrain.core import runmeta
from aftertrain.core.io import read_json
from aftertrain.ledger.state import WORKTREE

FLAG = "--model-free-from"


def read(path: str, root: Path | None, quick: bool) -> LedgerFile:
    """The ledger at ``path``, checked usable for this run (checkout ``root``,
    ``quick`` or not); ValueError naming the flag, the file and the fix."""
    data = read_json(path, FLAG)
    try:
        file = LedgerFile.from_json(data, f"{FLAG} {path}")
    except LedgerFormatError as err:
        raise ValueError(str(err)) from None
    tests = [t for c in file.claims for t in c.tests]
    if not tests or any(t.reads_model is None for t in tests):
        raise ValueError(
            f"{FLAG} {path}: the ledger does not say which tests read the model "
            "(written before aftertrain recorded it, or no claim test ran); write it "
            "again with `python -m pytest --claims-json FILE`"
        )
    meta = file.meta
    if meta.get("model_free_from"):
        raise ValueError(
            f"{FLAG} {path}: that run took its own model-free outcomes from "
            f"{meta['model_free_from'].get('ledger')}; give the ledger of the run "
            "that ran them"
        )
    here = runmeta.worktree(root)
    if here is None:
        raise ValueError(
            f"{FLAG} {path}: cannot tell whether the ledger is of this checkout's "
            f"code ({root} is not a git checkout with a commit); run without {FLAG}"
        )
    if meta.get(WORKTREE) != here:
        raise ValueError(
            f"{FLAG} {path}: the ledger is of other code (commit {meta.get('commit')}, "
            f"tracked-code fingerprint {str(meta.get(WORKTREE))[:12]}) than this "
            f"checkout (commit {runmeta.commit(root)}, fingerprint {here[:12]}): "
            "another version's outcomes cannot stand for this one's"
        )
    if bool(meta.get("quick")) != quick:
        kind = {True: "a quick run", False: "a full run"}
        raise ValueError(
            f"{FLAG} {path}: the ledger is of {kind[bool(meta.get('quick'))]}, "
            f"this is {kind[quick]}; give a ledger of the same kind"
        )
    return file


def reused_ids(file: LedgerFile) -> frozenset[str]:
    """The node IDs whose outcomes the run takes from ``file``: its tests
    that do not read the model."""
    return frozenset(t.nodeid for c in file.claims for t in c.tests if t.reads_model is False)
