"""``--model-free-from`` (aftertrain.ledger.reuse) on tests that carry no
claim: a later model's run deselects those that do not read the model (their
outcome is the earlier run's exit status) but runs every one that does,
whether it asks for the model directly or through another fixture; a test
with a claim that reads the model runs too, one that does not is taken."""

from __future__ import annotations

from tests.common.inner_runs import commit_all, git, outside_any_run

pytest_plugins = ["pytester"]

# A conftest fixture named model_identity stands for the model plugin's
# (reads_model goes by fixture names), so no run loads a model.
_CONFTEST = """
import os, pathlib, types
import pytest


@pytest.fixture
def model_identity():
    return types.SimpleNamespace(name=os.environ["FAKE_MODEL"])


@pytest.fixture
def through(model_identity):
    return model_identity.name


@pytest.fixture
def ran():
    def mark(name, what=""):
        pathlib.Path(os.environ["RAN_DIR"], name).write_text(what)
    return mark
"""

_SUITE = """
import pytest


@pytest.mark.claim("S1")
def test_claim_free(ran):
    ran("test_claim_free")


@pytest.mark.claim("S1")
def test_claim_reads(ran, model_identity):
    ran("test_claim_reads", model_identity.name)


def test_plain_free(ran):
    ran("test_plain_free")


def test_plain_reads(ran, model_identity):
    ran("test_plain_reads", model_identity.name)


def test_plain_reads_through_a_fixture(ran, through):
    ran("test_plain_reads_through_a_fixture", through)
"""


def test_a_test_without_a_claim_that_reads_the_model_runs_on_every_model(pytester, tmp_path, monkeypatch):
    """The first run runs all five; the second (another model, the first's
    ledger) runs the three that read the model, on that model, and
    deselects the claim's model-free test and the unclaimed model-free one."""
    outside_any_run(monkeypatch)
    ran = tmp_path / "ran"
    ran.mkdir()
    monkeypatch.setenv("RAN_DIR", str(ran))
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_suite=_SUITE)
    git(pytester.path, "init", "-q")
    commit_all(pytester.path, "suite")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    args = ("-p", "aftertrain.ledger", "-p", "no:cacheprovider", "-n", "0")

    monkeypatch.setenv("FAKE_MODEL", "one")
    pytester.runpytest(*args, f"--claims-json={first}").assert_outcomes(passed=5)
    assert len(list(ran.iterdir())) == 5
    for f in ran.iterdir():
        f.unlink()

    monkeypatch.setenv("FAKE_MODEL", "two")
    result = pytester.runpytest(*args, f"--claims-json={second}", f"--model-free-from={first}")
    result.assert_outcomes(passed=3, deselected=2)
    assert {f.name: f.read_text() for f in ran.iterdir()} == {
        "test_claim_reads": "two",
        "test_plain_reads": "two",
        "test_plain_reads_through_a_fixture": "two",
    }
