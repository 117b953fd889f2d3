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

REPO = Path(__file__).resolve().parents[2]

USER_RULES = """
import sys
from aftertrain.checks import zoo
correct = zoo.make_rule()
broken = zoo.make_rule("argmax of a NaN residual")


def chatty(p, q, drafts, u, v):
    print("chatty was called")
    return correct(p, q, drafts, u, v)


def quits(p, q, drafts, u, v):
    sys.exit(5)
"""

#: Modules that fail on import, by name: (source, the line the message names).
BAD_MODULES = {
    "exits_on_import": ("import sys\nsys.exit(3)\n", 2),
    "raises_on_import": ("x = 1\n\nraise RuntimeError('no config file')\n", 3),
}


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    (tmp_path / "my_rules.py").write_text(USER_RULES)
    for name, (source, _) in BAD_MODULES.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("my_rules", *BAD_MODULES):  # this test's files, not an earlier test's
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def _assert_broken_rules_lines(lines: list[str]) -> None:
    assert lines[0].startswith("check_rule_exact(zoo rule (argmax of a NaN residual)): FAILED")
    assert any("p(0) = 0" in line and "token 0" in line for line in lines)


def test_a_broken_rule_exits_1_with_one_line_per_failure(user_folder, capsys):
    """In a temporary folder holding the user's rules (the working folder,
    outside the checkout): the zoo's NaN-residual rule fails the exact probes."""
    assert cli.main(["check", "rule", "my_rules:broken", "--exact", "--n", "200", "--quiet"]) == 1
    _assert_broken_rules_lines(capsys.readouterr().out.splitlines())


@pytest.mark.e2e
def test_a_broken_rule_exits_1_with_one_line_per_failure_from_outside_the_checkout(user_folder):
    """The same through the installed command line in a child process, run
    in the temporary folder (the in-process test above stays in the default run)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "aftertrain",
            "check",
            "rule",
            "my_rules:broken",
            "--exact",
            "--n",
            "200",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        cwd=user_folder,
        env=env,
        timeout=300,
    )
    assert out.returncode == 1, out.stderr
    _assert_broken_rules_lines(out.stdout.splitlines())


def test_a_correct_rule_exits_0_and_json_lists_every_row(user_folder, capsys):
    rc = cli.main(
        ["check", "rule", "my_rules:correct", "--exact", "--n", "200", "--json", "--dtype", "bfloat16"]
    )
    reports = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [r["passed"] for r in reports] == [True, True]
    assert "dtype=bfloat16" in reports[0]["subject"] and reports[1]["rows"]


@pytest.mark.parametrize(
    "argv, match",
    [
        (["my_rules"], "expected MODULE:FUNC"),
        (["no_such_module:f"], "cannot import no_such_module"),
        (["my_rules:nothing"], "my_rules has no callable 'nothing'"),
        (["missing.py:f"], "missing.py: no such file"),
        (["my_rules:correct", "--n", "50"], "argument --n: must be from 100 to 200,000, got 50"),
        (["my_rules:correct", "--dtype", "int8"], "invalid choice: 'int8'"),
        (["my_rules:correct", "--n", "many"], "expected a whole number"),
        (
            ["my_rules:correct", "--n", "1000000000000"],
            "argument --n: must be from 100 to 200,000, got 1000000000000",
        ),
        (["my_rules:correct", "--seed", "-1"], "argument --seed: must be from 0 to"),
        (["my_rules:correct", "--seed", str(2**64)], f"got {2**64}"),
        (["exits_on_import:f"], "cannot import exits_on_import: called sys.exit(3) on import at "),
        (["raises_on_import:f"], "cannot import raises_on_import: RuntimeError: no config file (at "),
    ],
)
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
        return [
            SimpleNamespace(subject="exact", passed=True, failures=[], rows=[]),
            SimpleNamespace(subject="battery", passed=False, failures=["tv"], rows=[]),
        ]

    monkeypatch.setattr(assertions, "rule_reports", reports)
    assert cli.main(["check", "rule", "my_rules:correct", "--quiet"]) == 1
    monkeypatch.setattr(assertions, "rule_reports", lambda *a, **k: reports()[:1])
    assert cli.main(["check", "rule", "my_rules:correct", "--quiet"]) == 0


@pytest.mark.parametrize("name", sorted(BAD_MODULES))
def test_a_module_that_fails_on_import_is_named_with_its_file_and_line(user_folder, capsys, name):
    code = cli.main(["check", "rule", f"{name}:f"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{user_folder / name}.py:{BAD_MODULES[name][1]}" in err, err


def test_a_rule_that_calls_sys_exit_fails_in_one_line_naming_its_line(user_folder, capsys):
    """The kit reports a rule's exceptions as failures; ``sys.exit`` inside
    the rule ends the run: exit status 1 (the rule failed), one line naming
    the status and the rule's file and line, not the rule's own status."""
    code = cli.main(["check", "rule", "my_rules:quits", "--exact", "--n", "100", "--quiet"])
    out, err = capsys.readouterr()
    line = USER_RULES.splitlines().index("    sys.exit(5)") + 1
    assert code == 1, err
    assert err.strip().splitlines()[-1] == (
        f"aftertrain check rule: FAILED: my_rules:quits called sys.exit(5) at "
        f"{user_folder / 'my_rules.py'}:{line} instead of returning (accepted, token)"
    )
    assert out == ""


def test_json_output_parses_when_the_rule_prints(user_folder, capsys):
    """What the user's module and rule print goes to standard error:
    standard output is the JSON alone."""
    code = cli.main(["check", "rule", "my_rules:chatty", "--exact", "--n", "200", "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [r["passed"] for r in json.loads(out)] == [True, True]
    assert "chatty was called" in err and "chatty was called" not in out


def test_a_closed_pipe_ends_quietly_in_process(user_folder, capsys, monkeypatch):
    """Standard output a pipe whose reader has gone before the reports are
    written (a real pipe, in this process): the write's BrokenPipeError ends
    quietly, standard output then points at /dev/null (so Python's flush at
    exit does not raise again), and the exit status is still the verdict (0:
    the rule passed). Through a real ``| head`` in a child: the e2e test below."""
    read, write = os.pipe()
    os.close(read)
    closed = open(write, "w")  # noqa: SIM115 (closed below, after main has written to it)
    try:
        monkeypatch.setattr(sys, "stdout", closed)
        status = cli.main(["check", "rule", "my_rules:correct", "--exact", "--n", "100", "--json", "--quiet"])
        monkeypatch.undo()
        devnull = os.stat(os.devnull)
        assert (os.fstat(write).st_dev, os.fstat(write).st_ino) == (devnull.st_dev, devnull.st_ino)
    finally:
        closed.close()
    err = capsys.readouterr().err
    assert status == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_closed_standard_output_is_no_error(user_folder, capsys, monkeypatch):
    """Standard output closed outright (``aftertrain check rule ... >&-``:
    Python's ``sys.stdout`` is None): the work is done, what would have been
    printed goes nowhere, and the exit status is still the verdict (0: the
    rule passed), not an AttributeError at the final flush."""
    monkeypatch.setattr(sys, "stdout", None)
    status = cli.main(["check", "rule", "my_rules:correct", "--exact", "--n", "100", "--json", "--quiet"])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert status == 0, err
    assert "Traceback" not in err and "AttributeError" not in err, err


@pytest.mark.e2e
def test_a_closed_pipe_ends_quietly(user_folder):
    """``aftertrain check rule ... --json --quiet | head -c 50`` in a child
    process: the reader goes before the reports are written; no traceback,
    and the exit status is still the verdict (0: the rule passed)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aftertrain",
            "check",
            "rule",
            "my_rules:correct",
            "--exact",
            "--n",
            "100",
            "--json",
            "--quiet",
        ],
        cwd=user_folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_the_command_lines_bounds_are_check_rules():
    """--n's bounds are repeated in the command line (so a usage error needs
    no torch): they must be check_rule's."""
    from aftertrain.checks import speculative
    from aftertrain.cli import check

    assert check.MAX_N == speculative.MAX_N and check.MIN_N == 100
    with pytest.raises(ValueError, match="200,000"):
        speculative.check_rule(lambda p, q, d: None, n=check.MAX_N + 1)


def test_the_generator_commands_least_runs_are_check_generators():
    """--runs' least is repeated in the command line (a usage error needs no
    torch): it must be check_generator's."""
    from aftertrain.checks import speculative
    from aftertrain.cli import check

    with pytest.raises(ValueError, match="runs must be an int >= 10"):
        speculative.check_generator(lambda *a: None, runs=check.MIN_RUNS - 1)


def test_the_exact_failures_are_the_same_at_every_seed(user_folder, capsys):
    """Every input of an exact probe is forced: the zoo's NaN-residual rule
    fails the same exact checks at --seed 0 and 3 (a probe left to the seed
    read a real defect as 7 failures at one seed and 6 at another)."""
    exact = []
    for seed in ("0", "3"):
        assert (
            cli.main(
                [
                    "check",
                    "rule",
                    "my_rules:broken",
                    "--exact",
                    "--n",
                    "100",
                    "--seed",
                    seed,
                    "--json",
                    "--quiet",
                ]
            )
            == 1
        )
        exact.append(json.loads(capsys.readouterr().out)[0]["failures"])
    assert exact[0] == exact[1] and exact[0], exact
    assert any(line.startswith("batch of 16, row 5") for line in exact[0]), exact[0]


# --- check generator --------------------------------------------------------------------

USER_LOOPS = """
import torch
from aftertrain.checks import zoo
from aftertrain.speculative import speculative_generate


def aftertrain_loop(target, draft, prompt, n_new, k, temperature, generator):
    return speculative_generate(target, draft, prompt, n_new, k, temperature, generator).generated


draft_only = zoo.make_generator(zoo.GeneratorBug.TEMPERATURE_ON_DRAFT_ONLY)


def _next(model, ids, temperature):
    logits = model(ids).logits[0, -1].double()
    if temperature == 0:
        return logits.argmax().reshape(1, 1)
    return torch.multinomial(torch.softmax(logits / temperature, -1), 1)[None]


def loop(target, draft, ids, n_new, k, temperature):
    for _ in range(n_new):
        ids = torch.cat([ids, _next(target, ids, temperature)], 1)
    return ids


def step(target, draft, ids, k, temperature):
    return torch.cat([ids, _next(target, ids, temperature)], 1)
"""


@pytest.fixture
def loops_folder(tmp_path, monkeypatch):
    (tmp_path / "my_loops.py").write_text(USER_LOOPS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_loops", raising=False)
    return tmp_path


def test_check_generator_passes_aftertrain_speculative_generate(loops_folder, capsys):
    """aftertrain's own loop, through a file naming it: exit 0, the report
    on standard output, progress on standard error (100 runs per k and
    temperature here; the default 600 is the e2e test below)."""
    assert cli.main(["check", "generator", "my_loops.py:aftertrain_loop", "--runs", "100"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("check_generator(aftertrain_loop, runs=100, ks=(1, 2)") and "PASSED" in out
    assert "check_generator: joint law T=0.3 k=1" in err and "greedy k=2" in err


@pytest.mark.teeth
def test_check_generator_command_catches_temperature_on_the_draft_only(loops_folder, capsys):
    """The zoo's loop scoring p at temperature 1: exit 1, the verdict line,
    then one line per failure (its JSON lists the same failures)."""
    argv = ["check", "generator", "my_loops:draft_only", "--runs", "100", "--quiet"]
    assert cli.main(argv) == 1
    first, *lines = capsys.readouterr().out.strip().splitlines()
    assert "FAILED" in first and lines and all(line.startswith("  - ") for line in lines), lines
    assert cli.main([*argv, "--json"]) == 1
    [report] = json.loads(capsys.readouterr().out)
    assert not report["passed"] and len(report["failures"]) == len(lines)


@pytest.mark.parametrize("form, func", [("--loop", "loop"), ("--step", "step")])
def test_check_generator_takes_a_loop_or_a_step_over_model_logits(loops_folder, capsys, form, func):
    """``--loop`` and ``--step``: FUNC over ``model(ids).logits`` and
    torch's global generator (a plain sampler of the target passes)."""
    assert cli.main(["check", "generator", f"my_loops:{func}", form, "--runs", "50", "--quiet"]) == 0
    assert "PASSED" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["my_loops:loop", "--loop", "--step"], "argument --step: not allowed with argument --loop"),
        (["my_loops:loop", "--runs", "5"], "argument --runs: must be from 10 to 100,000, got 5"),
        (["my_loops:nothing"], "my_loops has no callable 'nothing'"),
    ],
)
def test_check_generator_usage_errors_exit_2_with_one_line(loops_folder, capsys, argv, match):
    try:
        code = cli.main(["check", "generator", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert match in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.e2e
def test_check_generator_on_aftertrain_speculative_generate_at_the_defaults(loops_folder):
    """The command at its defaults (600 runs, k = 1 and 2, T = 0.3 and 1,
    greedy) on aftertrain's own loop, as a user runs it, in a child
    process: exit 0, PASSED, progress lines on standard error. Its wall
    time (6-11 s on a loaded 2-core machine, torch's import included) is
    not asserted: a shared runner's pace is no property of the code; the
    progress interval is tested on a fake clock (tests/cli/test_progress.py)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "aftertrain", "check", "generator", "my_loops.py:aftertrain_loop"],
        capture_output=True,
        text=True,
        cwd=loops_folder,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout
    assert proc.stderr.strip(), "no progress line"
