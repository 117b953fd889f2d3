"""tools/mutate.py: what the harness counts as a kill.

Only a red test run kills a mutant; a pytest that could not run the tests
(a usage error of the harness's own arguments, no tests collected) is an
"error", so a mistyped command line cannot inflate the kill rate."""

from __future__ import annotations

import pytest

from tests.common.tools import load_tool


@pytest.fixture(scope="module")
def mutate():
    yield from load_tool("mutate")


@pytest.mark.parametrize(
    "body, extra, outcome",
    [
        ("def test_ok():\n    assert True\n", [], "passed"),
        ("def test_red():\n    assert False\n", [], "failed"),
        ("import no_such_module_anywhere\n", [], "failed"),  # collection error: the mutant broke import
        ("def test_ok():\n    assert True\n", ["--no-such-option"], "error"),
        ("x = 1\n", [], "error"),  # no tests collected
    ],
)
def test_only_a_red_run_counts_as_failed(mutate, tmp_path, monkeypatch, body, extra, outcome):
    # The outcome is read from pytest's exit status alone: the installed
    # plugins (hypothesis' import is most of a run's second) play no part.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (tmp_path / "test_one.py").write_text(body)
    (tmp_path / "src").mkdir()
    got, seconds, _ = mutate.run_pytest(tmp_path, ["test_one.py", *extra], timeout=120)
    assert got == outcome
    assert seconds > 0
