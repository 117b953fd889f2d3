"""``aftertrain check rule MODULE:FUNC`` (aftertrain.cli.check): exit 0
when the rule passes, 1 with one line per failure, 2 on a usage error; it
runs from a folder outside the checkout on a rule file there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aftertrain import cli

ROOT = Path(__file__).resolve().parents[1]

USER_RULES = '''
from aftertrain.checks import zoo
correct = zoo.make_rule()
broken = zoo.make_rule("argmax of a NaN residual")
'''


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    (tmp_path / "my_rules.py").write_text(USER_RULES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_broken_rule_exits_1_with_one_line_per_failure_from_outside_the_checkout(user_folder):
    """The installed command line, run in a temporary folder holding the
    user's rules: the zoo's NaN-residual rule fails the exact probes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-m", "aftertrain", "check", "rule", "my_rules:broken",
                          "--exact", "--n", "200", "--quiet"], capture_output=True, text=True,
                         cwd=user_folder, env=env, timeout=300)
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("check_rule_exact(zoo rule (argmax of a NaN residual)): FAILED")
    assert any("p(0) = 0" in line and "token 0" in line for line in lines)


def test_a_correct_rule_exits_0_and_json_lists_every_row(user_folder, capsys):
    rc = cli.main(["check", "rule", "my_rules:correct", "--exact", "--n", "200", "--json",
                   "--dtype", "bfloat16"])
    reports = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [r["passed"] for r in reports] == [True, True]
    assert "dtype=bfloat16" in reports[0]["subject"] and reports[1]["rows"]


@pytest.mark.parametrize("argv, match", [
    (["my_rules"], "expected MODULE:FUNC"),
    (["no_such_module:f"], "cannot import no_such_module"),
    (["my_rules:nothing"], "my_rules has no callable 'nothing'"),
    (["missing.py:f"], "missing.py: no such file"),
    (["my_rules:correct", "--n", "50"], "--n must be >= 100"),
    (["my_rules:correct", "--dtype", "int8"], "invalid choice: 'int8'"),
    (["my_rules:correct", "--n", "many"], "expected a whole number"),
])
def test_usage_errors_exit_2_with_one_line(user_folder, capsys, argv, match):
    try:
        code = cli.main(["check", "rule", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert match in err and len(err.strip().splitlines()) == 1, err


def test_one_failing_report_among_passing_ones_exits_1(user_folder, monkeypatch, capsys):
    """The exit status is 0 only when every report passed: a rule that passes
    the exact probes but fails the battery (or the other way round) exits 1."""
    from types import SimpleNamespace

    from aftertrain.checks import assertions

    def reports(*args, **kwargs):
        return [SimpleNamespace(subject="exact", passed=True, failures=[], rows=[]),
                SimpleNamespace(subject="battery", passed=False, failures=["tv"], rows=[])]
    monkeypatch.setattr(assertions, "rule_reports", reports)
    assert cli.main(["check", "rule", "my_rules:correct", "--quiet"]) == 1
    monkeypatch.setattr(assertions, "rule_reports", lambda *a, **k: reports()[:1])
    assert cli.main(["check", "rule", "my_rules:correct", "--quiet"]) == 0
