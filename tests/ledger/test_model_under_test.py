"""The model plugin's options (aftertrain.ledger.model_under_test): an empty
``--aftertrain-model``, ``--aftertrain-baselines`` or ``$AFTERTRAIN_MODEL`` is a usage error naming
the option and what it must name, before any model loads or test runs, not
a silent run on the default reference model."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ["--aftertrain-model="],
            "--aftertrain-model must name a bundled model, a checkpoint file or a transformers "
            "folder, got ''",
        ),
        (["--aftertrain-model", ""], "--aftertrain-model must name a bundled model"),
        (["--aftertrain-model", "  "], "got '  '"),
        (["--aftertrain-baselines="], "--aftertrain-baselines must name a folder, got ''"),
    ],
)
def test_an_empty_model_option_is_a_usage_error(pytester: pytest.Pytester, argv, words):
    pytester.makepyfile(test_x="def test_x():\n    raise AssertionError('ran')\n")
    # in process: the plugin (a pytest11 entry point) checks its options as
    # pytest configures; a subprocess would add only an interpreter's start
    result = pytester.runpytest(*argv)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert words in result.stderr.str(), result.stderr.str()
    assert "ran" not in result.stdout.str()


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_model_variable_is_a_usage_error(pytester: pytest.Pytester, monkeypatch, value):
    """``AFTERTRAIN_MODEL=`` (a CI template's empty variable) is refused as
    ``--aftertrain-model ''`` is, not a silent run on the reference."""
    pytester.makepyfile(test_x="def test_x():\n    raise AssertionError('ran')\n")
    monkeypatch.setenv("AFTERTRAIN_MODEL", value)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    words = (
        "$AFTERTRAIN_MODEL must name a bundled model, a checkpoint file or a transformers folder, "
        f"got {value!r}"
    )
    assert words in result.stderr.str(), result.stderr.str()
    assert "ran" not in result.stdout.str()


def test_the_option_wins_over_an_empty_model_variable(pytester: pytest.Pytester, monkeypatch):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    monkeypatch.setenv("AFTERTRAIN_MODEL", "")
    result = pytester.runpytest("--aftertrain-model", "reference")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
