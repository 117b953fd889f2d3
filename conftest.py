"""Hypothesis profiles and fixtures shared by ``tests/`` and ``benchmarks/``.

The one conftest for both folders (``benchmarks/conftest.py`` holds only
what is the benchmarks' own: the pinned thread count around each timing).

Profiles: ``ci`` (derandomized, no deadline, no example database: the same
examples on every run), ``dev`` (few examples, fast feedback) and
``thorough`` (many examples, for a deliberate long run). Choose one with
``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE=NAME``; with neither,
``ci`` is used when the ``CI`` variable is set and otherwise too, so a plain
``pytest`` run is as reproducible as CI's.

The model: ``aftertrain_model`` (the fixture of :mod:`aftertrain.ledger.model_under_test`)
is the model the claims run on, chosen with ``--aftertrain-model
NAME_OR_PATH`` or ``AFTERTRAIN_MODEL`` (default: the bundled reference); tests
must not modify it. Its stored baselines
live in ``baselines/<name>/`` (or ``--aftertrain-baselines DIR``).
"""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

# Every ledger a run of this process writes (the suite's --claims-json, a
# test's inner run) is validated against the schema shipped in the package.
pytest_plugins = ["tests.common.ledger_schema"]

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=10)
# `aftertrain report --quick`: as reproducible as ci, fewer examples.
settings.register_profile(
    "quick",
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=10,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow],
)
# --hypothesis-profile (read by hypothesis' own pytest plugin) overrides this.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _not_torchao_import_noise(record: logging.LogRecord) -> bool:
    """False for the two warnings importing torchao (a peer of the checks)
    logs on a CPU: "Failed to load <file>" for each compiled extension
    shipped beside it that cannot load here (``_C_mxfp8`` is built for
    CPython 3.10, ``_C_cutlass_90a`` for CUDA sm_90a; the CPU paths the peers
    compare with do not use them), and torch's note that the Enum torchao
    registers with its pytree is deprecated. Neither is a failure of the
    run; every other record of those loggers passes."""
    message = record.getMessage()
    return not (message.startswith("Failed to load ") or "is an Enum subclass and is now natively" in message)


# Dropped at the loggers that write them, before torchao is first imported.
for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).addFilter(_not_torchao_import_noise)


@pytest.fixture
def pytester(pytester, monkeypatch):
    """pytest's ``pytester``, its inner runs started without the variables
    of the run around this one (``tests.common.inner_runs.clear_run_variables``:
    ``aftertrain report --quick``'s, a CI's ``AFTERTRAIN_MODEL``): cleared
    before the test sets its own."""
    from tests.common.inner_runs import clear_run_variables

    clear_run_variables(monkeypatch)
    return pytester


@pytest.fixture(scope="session")
def corpus():
    from aftertrain.lm.text import load_corpus

    return load_corpus()


@pytest.fixture(scope="session")
def evaluations():
    """Validation losses of GPTs, each distinct model scored once per session
    (aftertrain.lm.evaluation.LossMemo): the claims' tables, their teeth and
    the drafts share the models they have in common (the unpruned curve
    point, an "unchanged" quantizer's copy, the 8- and 4-bit drafts)."""
    from aftertrain.lm.evaluation import LossMemo

    return LossMemo()  # each model on its own validation text (aftertrain.lm.hf.model_text)


@pytest.fixture(scope="session")
def model_val_loss(aftertrain_model, evaluations) -> float:
    """float32 validation loss of the model under test, computed once."""
    return evaluations(aftertrain_model)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """One torch thread for the whole run, session and module fixtures
    included (function-scoped fixtures come too late for those): ``pytest
    -n 2`` then does not oversubscribe the two cores, and every figure is
    computed with the same thread count. Timing code pins its own count.

    Before hypothesis' own plugin reads ``--hypothesis-profile``: an unknown
    name is a one-line usage error naming the profiles (not an internal
    error)."""
    name = config.getoption("hypothesis_profile", None)
    if name is not None:
        try:
            settings.get_profile(name)
        except Exception:  # hypothesis' InvalidArgument
            raise pytest.UsageError(
                f"--hypothesis-profile {name!r} is not a profile; known: ci, dev, quick, thorough"
            ) from None
    torch.set_num_threads(1)


def pytest_collection_finish(session):
    """Collection leaves some hundred thousand long-lived objects (test items,
    hypothesis strategies, parametrize ids); frozen, the garbage collector's
    full passes during the run no longer walk them (on a 2-core AVX2
    machine the collector took 2.2-2.9 s a worker of the claims, speculative
    and quantization-kit tests, 1.4-1.9 s frozen). Nothing is freed that
    would have been: they live until the session ends."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def bigram_loss(pytestconfig) -> float:
    """Validation loss of the add-alpha bigram (B1's baseline), computed once.
    It is fit on the text alone: the same for every model of our characters;
    a transformers model's is fitted on its own text and vocabulary."""
    from aftertrain.ledger.model_under_test import loaded_model
    from aftertrain.lm.evaluation import val_loss
    from aftertrain.lm.hf import HFModel
    from aftertrain.lm.ngram import Bigram

    model = loaded_model(pytestconfig)
    if not isinstance(model, HFModel):
        return val_loss(Bigram.fit())
    return val_loss(Bigram.fit(model.text.train, vocab_size=model.config.vocab_size), model.text.val)


@pytest.fixture(scope="session")
def bits_rows(aftertrain_model, evaluations) -> dict:
    """Part 3's bits table on the model, ``{bits: row}``, computed once:
    the quantization claims and pruning's P4/P6 both read it."""
    from aftertrain.experiments.quant import bits_table

    return {r.bits: r for r in bits_table(aftertrain_model, evaluate=evaluations)}


@pytest.fixture(scope="module")
def small_gpt():
    """An untrained GPT of the default shape (eval mode), built per module for
    tests that need a model of the real size but not a trained one (the
    bad-input tables, the pruned copies of tests/prune/test_masks.py)."""
    from aftertrain.lm.model import GPT

    torch.manual_seed(0)  # a test-local model; the library never seeds
    return GPT().eval()


BASELINES = Path(__file__).resolve().parent / "baselines"
NO_BASELINE = "no baseline for this model"


def baseline_folder(config) -> Path | None:
    """``--aftertrain-baselines DIR``, else ``baselines/<name>/`` for a bundled
    model, else none."""
    from aftertrain.ledger.model_under_test import baseline_folder

    return baseline_folder(config, BASELINES)


@pytest.fixture(scope="session")
def baselines_dir(pytestconfig, model_identity):
    """The stored baselines of the model under test (our measured tables):
    ``baselines/<model>/``, or the folder given by ``--aftertrain-baselines``.
    Tests read it; a file is written only when asked (see below). For a
    model with no folder the path does not exist, and the comparison does not
    run: the claims ledger names it "not run" ("no baseline for this model")."""
    folder = baseline_folder(pytestconfig)
    return folder if folder is not None else BASELINES / ".none"


class _StoredOnly:
    """A pytest-regressions fixture that refuses to create a missing baseline.

    pytest-regressions writes a missing file and fails; here a missing file
    fails without writing, so a normal run never changes ``baselines/``: the
    only way to (re)create one is the explicit ``--force-regen``. Two
    exceptions: a model with no baseline folder does not compare, and the
    claims ledger names the test's baseline comparison "not run" ("no
    baseline for this model") beside the verdict its assertions give; and a folder
    named with ``--aftertrain-baselines DIR`` is the user's own, treated as
    pytest-regressions treats its data folder (a missing file is written and
    its test fails once saying so; ``--force-regen`` rewrites those that differ).
    """

    def __init__(self, fixture, node) -> None:
        self._fixture, self._node, self._config = fixture, node, node.config

    def check(self, *args, fullpath=None, **kwargs):
        regen = self._config.getoption("force_regen") or self._config.getoption("regen_all")
        writable = regen or self._config.getoption("aftertrain_baselines")
        folder = baseline_folder(self._config)
        if folder is None or (not folder.is_dir() and not writable):
            from aftertrain.ledger.record import record_not_run
            from aftertrain.ledger.state import Part

            record_not_run(self._node, Part.BASELINE, NO_BASELINE)
            return None
        if fullpath is not None and not fullpath.is_file() and not writable:
            pytest.fail(
                f"stored baseline {fullpath} is missing; create it deliberately with "
                f"`python -m pytest <this test> --force-regen` and commit it"
            )
        return self._fixture.check(*args, fullpath=fullpath, **kwargs)


@pytest.fixture
def num_regression(num_regression, request, model_identity):
    # model_identity: the stored file is the model's, so a test comparing with
    # it reads the model (aftertrain.ledger.model_under_test.reads_model)
    return _StoredOnly(num_regression, request.node)


@pytest.fixture
def data_regression(data_regression, request, model_identity):
    return _StoredOnly(data_regression, request.node)


@pytest.fixture(scope="session")
def speculative_drafts(aftertrain_model, aftertrain_draft):
    """Every draft of speculative decoding (aftertrain.speculative.drafts.DraftKind ->
    model), built once per session from the model under test. A transformers
    model's draft GPT is the user's ``--aftertrain-draft``; without one that
    kind is left out (its tests skip, saying so)."""
    from aftertrain.lm.hf import HFModel
    from aftertrain.speculative.drafts import DraftKind, draft_model

    kinds = [
        k
        for k in DraftKind
        if k is not DraftKind.GPT or aftertrain_draft is not None or not isinstance(aftertrain_model, HFModel)
    ]
    return {kind: draft_model(kind, aftertrain_model, aftertrain_draft) for kind in kinds}


@pytest.fixture
def no_png():
    """The report's plots drawn and read back as series but not saved as PNG
    (saving is most of a render's cost), for a test that reads only the
    report's text and series (:func:`tests.common.figures.plots_without_png`);
    the PNG bytes are tested in tests/report/test_assemble.py."""
    from tests.common.figures import plots_without_png

    with plots_without_png():
        yield
