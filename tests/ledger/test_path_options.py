"""aftertrain's pytest plugins on a user's folder and checkpoint: the
options are known before pytest picks its rootdir (the ``pytest11`` entry
points), path options work outside the checkout in their ``=`` form and
beside a named test path, and a path option that cannot work is refused
before any test runs.

Each run is a subprocess started from a folder outside a small project
(``proj/``: a ``pyproject.toml`` whose ``addopts`` switch both plugins on,
as this project's does, and one claim test), with the checkpoint in a third
folder. ``PYTEST_PLUGINS`` loads the plugins at the very point of pytest's
start-up where installed entry points load (after the rootdir is chosen),
so these runs behave as an installed aftertrain does, whichever way this
checkout is installed. Cost: about 2 CPU s per run (pytest, torch and the
model load); the space form of a checkpoint outside runs twice (with and
without a ledger already there), the other cases once; one more, marked
slow, runs the real Q4 and P6 tests (~30-60 CPU s). An unwritable
``--claims-json`` is refused in process (pytester): where pytest started
does not matter to that check. The default run keeps one case of a
checkpoint outside, the ``=`` form, in process (pytester, started from the
third folder: 0.1 CPU s); its child-process runs are ``e2e``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aftertrain
from aftertrain.lm import registry as _models
from tests.common.inner_runs import outside_any_run

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
SRC = str(Path(aftertrain.__file__).resolve().parents[1])
PLUGINS = ("aftertrain.ledger", "aftertrain.ledger.model_under_test")

PROJECT_TOML = """
[tool.pytest.ini_options]
addopts = "--strict-markers -p aftertrain.ledger -p aftertrain.ledger.model_under_test"
"""

TEST = """
import pytest

@pytest.mark.claim("Q2")
def test_runs_on_the_named_model(model_identity, tmp_path_factory):
    (tmp_path_factory.getbasetemp().parent / "ran").write_text(str(model_identity.path))
"""


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    proj, models, elsewhere = tmp_path / "proj", tmp_path / "models", tmp_path / "elsewhere"
    for folder in (proj / "tests", models, elsewhere):
        folder.mkdir(parents=True)
    (proj / "pyproject.toml").write_text(PROJECT_TOML)
    (proj / "tests" / "test_claim.py").write_text(TEST)
    mine = models / "mine.pt"
    shutil.copy(_models.bundled_path("reference"), mine)
    shutil.copy(f"{_models.bundled_path('reference')}.json", f"{mine}.json")
    return {"proj": proj, "mine": mine, "elsewhere": elsewhere, "tmp": tmp_path}


def _pytest(cwd: Path, *args: str, tmp: Path, autoload: bool = False) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]),
        "PYTEST_PLUGINS": ",".join(PLUGINS),
    }
    if not autoload:  # only aftertrain's plugins: faster, and nothing else's options needed
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.pop("AFTERTRAIN_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--basetemp={tmp / 'base'}", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_plugins_are_pytest11_entry_points_named_as_their_p_names():
    """Installed, pytest loads both before it reads its command line; the
    entry points' names are the ``-p`` names of ``addopts``, so loading them
    twice is a no-op."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.entry-points.pytest11]\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [f'"{p}" = "{p}"' for p in PLUGINS]
    [addopts] = [line for line in text.splitlines() if line.startswith("addopts")]
    assert all(f"-p {p} " in addopts for p in PLUGINS)


def test_a_checkpoint_outside_from_a_folder_outside_in_process(places, pytester, monkeypatch):
    """The ``=`` form of ``--aftertrain-model`` and ``--claims-json``, both
    outside the project, from a third folder, with the project's tests as the
    test path: pytest in this process (pytester; the plugins as installed
    entry points load them) runs the test on the named checkpoint and writes
    the ledger. In a child pytest started in that folder: the e2e test below."""
    outside_any_run(monkeypatch)
    monkeypatch.delenv("AFTERTRAIN_MODEL", raising=False)
    monkeypatch.chdir(places["elsewhere"])
    mine, claims = places["mine"], places["tmp"] / "out" / "claims.json"
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        f"--basetemp={places['tmp'] / 'base'}",
        str(places["proj"] / "tests"),
        f"--aftertrain-model={mine}",
        f"--claims-json={claims}",
    )
    assert result.ret == 0, str(result.stdout) + str(result.stderr)
    assert (places["tmp"] / "ran").read_text() == str(mine.resolve())
    assert f"claims ledger on model {mine}" in str(result.stdout)
    assert claims.is_file()


@pytest.mark.parametrize(
    "form", [pytest.param("space", marks=pytest.mark.e2e), pytest.param("equals", marks=pytest.mark.e2e)]
)
def test_a_checkpoint_outside_from_a_folder_outside(places, form):
    mine = str(places["mine"])
    option = ["--aftertrain-model", mine] if form == "space" else [f"--aftertrain-model={mine}"]
    claims = places["tmp"] / "out" / "claims.json"
    # A second run writes over the first one's ledger. The ledger's existing
    # matters to --claims-json (in its = form in both) and not to how the
    # model's path is given: only the space form, the one that can move
    # pytest's rootdir, runs twice.
    for _ in range(2 if form == "space" else 1):
        run = _pytest(
            places["elsewhere"],
            str(places["proj"] / "tests"),
            *option,
            f"--claims-json={claims}",
            tmp=places["tmp"],
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert (places["tmp"] / "ran").read_text() == str(places["mine"].resolve())
        assert f"claims ledger on model {mine}" in run.stdout
        assert claims.is_file()


@pytest.mark.e2e
def test_equals_form_from_the_project_folder(places):
    run = _pytest(places["proj"], f"--aftertrain-model={places['mine']}", tmp=places["tmp"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert (places["tmp"] / "ran").read_text() == str(places["mine"].resolve())


def test_space_form_alone_that_would_move_the_rootdir_is_one_clear_line(places):
    """pytest takes the separate value for a test path before any plugin
    loads and would root itself in the checkpoint's folder, without the
    project's configuration: refused before any test runs, naming both
    fixes."""
    mine = str(places["mine"])
    run = _pytest(places["proj"], "--aftertrain-model", mine, tmp=places["tmp"])
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    [line] = [x for x in run.stderr.splitlines() if x.startswith("ERROR")]
    assert f"--aftertrain-model={mine}" in line and "python -m pytest tests" in line
    assert not (places["tmp"] / "ran").exists()


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("/proc/aftertrain/x/claims.json", "--claims-json /proc/aftertrain/x/claims.json: cannot write"),
        ("{proj}", "is a folder; give a file path"),
        ("{proj}/pyproject.toml/claims.json", "is a file, so the file cannot be written"),
    ],
)
def test_an_unwritable_claims_json_is_refused_before_any_test_runs(pytester, bad, fragment):
    """In process, in the project itself: the ledger plugin refuses the file
    as pytest loads its first conftests, whichever folder pytest started in
    (a subprocess would add only an interpreter's start, a second each)."""
    pytester.makefile(".toml", pyproject=PROJECT_TOML)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_claim.py").write_text(TEST)
    bad = bad.format(proj=pytester.path)
    result = pytester.runpytest(f"--basetemp={pytester.path / 'base'}", f"--claims-json={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert fragment in result.stderr.str(), result.stderr.str()
    assert not (pytester.path / "ran").exists()  # the test writes it there when it runs


def test_without_the_switches_the_plugins_stay_inert(tmp_path):
    """Loaded (as entry points are in every run once aftertrain is
    installed) but not switched on: no model is loaded (torch is not even
    imported), no ledger printed."""
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\ndef test_ok():\n    assert 'torch' not in sys.modules\n"
    )
    run = _pytest(tmp_path, tmp=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "claims ledger" not in run.stdout and "aftertrain model" not in run.stdout


@pytest.mark.slow
def test_q4_and_p6_hold_on_a_checkpoint_without_baselines_naming_the_comparison(places):
    """The real Q4 and P6 tests on a copy of the reference under another
    name (so no stored baselines): every assertion passes, the baseline
    comparison does not run, and the ledger says ``holds`` with the
    baseline part named not run. Slow: the bits table and the pruning
    curve on the model (~30-60 CPU s)."""
    import json

    claims = places["tmp"] / "claims.json"
    run = _pytest(
        ROOT,
        "tests/claims_on_model/test_quant.py::test_bits_table_matches_the_stored_baseline",
        "tests/claims_on_model/test_prune.py::test_int8_beats_75_and_50pct_sparse_bitmask_at_equal_"
        "or_better_compression",
        f"--aftertrain-model={places['mine']}",
        f"--claims-json={claims}",
        "-q",
        tmp=places["tmp"],
        autoload=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    e = {c["id"]: c for c in json.loads(claims.read_text())["claims"]}
    for cid in ("Q4", "P6"):
        assert e[cid]["verdict"] == "holds", e[cid]
        assert e[cid]["parts"] == {"assertions": "holds", "baseline comparison": "not run"}
        assert e[cid]["not_run"] == [{"part": "baseline comparison", "reason": "no baseline for this model"}]
        assert f"{cid} holds: not run: baseline comparison (no baseline for this model)" in run.stdout


def test_an_unknown_hypothesis_profile_is_one_line_before_any_test(pytester: pytest.Pytester):
    """The suite's conftest checks ``--hypothesis-profile`` before
    hypothesis' plugin loads it (which would be an internal error)."""
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    pytester.makepyfile(test_x="def test_x():\n    raise AssertionError('ran')\n")
    result = pytester.runpytest(
        "--hypothesis-profile",
        "nope",
        "-p",
        "no:aftertrain.ledger",
        "-p",
        "no:aftertrain.ledger.model_under_test",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --hypothesis-profile 'nope' is not a profile; known: *"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.e2e
def test_a_second_report_runs_pytest_with_paths_outside_the_checkout(places, monkeypatch):
    """``aftertrain report --models PATH --out DIR``, both outside the
    checkout, DIR already holding the first report's ledger: the pytest
    command it starts (captured, then run with ``--co`` on one test file)
    names the checkout's configuration and every path in ``--flag=PATH``
    form, so pytest roots itself in the checkout. The first report into DIR
    differs only in that the ledger's path does not exist yet: one existing
    path fewer that a word on the command line could root pytest in."""
    from aftertrain.cli import suite

    out = places["tmp"] / "out"
    out.mkdir()
    claims = out / "claims.json"
    commands = []

    def capture(cmd, **kwargs):
        commands.append((cmd, kwargs["cwd"]))
        return subprocess.CompletedProcess(cmd, 2)

    monkeypatch.setattr(suite.subprocess, "run", capture)
    with pytest.raises(suite.ReportError):
        suite.run_ledger(ROOT, claims, False, lambda m: None, model=str(places["mine"]))
    [(cmd, cwd)] = commands
    assert f"--aftertrain-model={places['mine']}" in cmd and f"--claims-json={claims}" in cmd
    assert f"--rootdir={ROOT}" in cmd and f"--config-file={ROOT / 'pyproject.toml'}" in cmd
    monkeypatch.undo()
    claims.write_text("{}")  # the first report's ledger
    run = subprocess.run(
        [*cmd, "--co", "tests/lm/test_text.py"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # node ids relative to the checkout: pytest rooted itself there
    assert any(line.startswith("tests/lm/test_text.py::") for line in run.stdout.splitlines())
