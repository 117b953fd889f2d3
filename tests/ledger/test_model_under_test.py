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


LLAMA = "src/aftertrain/data/llama-bpe"


class _Options:
    """The options a pytest config would hold: ``getoption(dest)``."""

    def __init__(self, **given) -> None:
        self.given = given

    def getoption(self, dest, default=None):
        return self.given.get(dest, default)


@pytest.mark.parametrize(
    "given, words",
    [
        (dict(aftertrain_model="{tmp}"), "is a folder without config.json: not a transformers model folder"),
        (dict(aftertrain_model="reference", aftertrain_text="{tmp}/t.txt"), "is only for a transformers"),
        (dict(aftertrain_model=LLAMA, aftertrain_text="{tmp}/none.txt"), "--aftertrain-text: text file"),
        (dict(aftertrain_model=LLAMA, aftertrain_draft="reference"), "not a transformers model folder"),
        (dict(aftertrain_model="reference", aftertrain_draft=LLAMA), "a draft model is for a transformers"),
        (dict(aftertrain_model=LLAMA, aftertrain_draft=""), "--aftertrain-draft must name a path"),
    ],
    ids=[
        "folder not a model",
        "text for our GPT",
        "missing text",
        "draft not a folder",
        "draft for our GPT",
        "empty",
    ],
)
def test_a_bad_transformers_input_is_one_usage_line(tmp_path, monkeypatch, request, given, words):
    """A folder that is not a model, a text or draft that cannot apply: a
    usage error naming the option (what configuration raises, before any
    test runs; the draft of another vocabulary: tests/lm/test_hf.py)."""
    pytest.importorskip("transformers", reason="transformers installs with the test extra on Python >= 3.11")
    from aftertrain.ledger.model_inputs import load_inputs

    for name in ("AFTERTRAIN_MODEL", "AFTERTRAIN_TEXT", "AFTERTRAIN_DRAFT"):
        monkeypatch.delenv(name, raising=False)
    root = request.config.rootpath
    given = {k: v.format(tmp=tmp_path).replace(LLAMA, str(root / LLAMA)) for k, v in given.items()}
    with pytest.raises(pytest.UsageError) as err:
        load_inputs(_Options(**given), "AFTERTRAIN_MODEL", "AFTERTRAIN_TEXT", "AFTERTRAIN_DRAFT")
    assert words in str(err.value) and "\n" not in str(err.value), str(err.value)
