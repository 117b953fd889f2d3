"""Claims ledger: a pytest plugin that reports, per claim, whether it holds.

Installed as a ``pytest11`` entry point, so ``--claims-json``,
``--timing-budget`` and the rest are known before pytest reads its command
line, from any folder; switched on by this project's pytest configuration
(``-p aftertrain.ledger`` in ``addopts``) or by ``--claims-json``, so
installing aftertrain changes no one else's test runs.
Laid out as pytest-benchmark's plugin: :mod:`aftertrain.ledger.plugin` holds
the hooks, options and the ``claim_record`` fixture only;
:mod:`aftertrain.ledger.state` collects test outcomes and computes the
verdicts; :mod:`aftertrain.ledger.record` is the fixture's type;
:mod:`aftertrain.ledger.benchmark` is the one module that speaks to
pytest-benchmark (its session, its machine hooks, the compare of ratios).

Tests tie themselves to claims with ``@pytest.mark.claim("Q2")`` (several
IDs in one marker, several markers, or a module's ``pytestmark``); an ID
missing from :data:`aftertrain.claims.catalogue.CLAIMS` is a collection error. At the
end of the run one line per claim gives its verdict, strongest first; the
verdict words and what each means are defined once, on
:class:`aftertrain.claims.verdicts.Verdict` (shown in docs/ledger.md).

``--claims-json PATH`` writes the ledger file
(:mod:`aftertrain.claims.ledgerfile`): per claim its verdict, why, its tests
with their outcomes and figures; the tables; the run's metadata. Its layout
is the JSON Schema shipped beside that module, ``claims.schema.json``
(docs/ledger.md).

``--model-free-from CLAIMS_JSON`` (:mod:`aftertrain.ledger.reuse`): a run
on another model runs only the tests that read the model and takes the
earlier run's outcomes of the others (``aftertrain report``'s later models).

Works under pytest-xdist: everything a test reports travels in its
``user_properties``, and the ledger is built on the controller from
``pytest_runtest_logreport`` alone. :mod:`aftertrain.ledger.workers` sizes
``-n auto`` (this project's default run) and lets the workers time, one
test at a time under a lock the controller hands them.
"""

from aftertrain.ledger.claim_marker import claim_ids  # noqa: F401
from aftertrain.ledger.plugin import (  # noqa: F401  (pytest finds the hooks here)
    claim_record,
    pytest_addoption,
    pytest_configure,
    pytest_load_initial_conftests,
    pytest_make_collect_report,
    pytest_xdist_auto_num_workers,
)
