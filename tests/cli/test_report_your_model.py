"""The CI recipe's claims step (docs/examples/aftertrain-ci.yml, "The
claims on your model") run as a user's workflow runs it: the step's own
shell lines, with ``MODEL`` a transformers folder inside the user's
repository (the Llama-style fixture copied there) and aftertrain's checkout
where the recipe clones it. The report's quick variables are set in the
environment, as ``--quick`` sets them for the run it starts, so the step
stays within the end-to-end budget; the command is the recipe's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from aftertrain.report.reading import QUICK_ENV
from tests.common.inner_runs import outside_any_run

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "docs" / "examples" / "aftertrain-ci.yml"
FIXTURE = ROOT / "src" / "aftertrain" / "data" / "llama-bpe"


def claims_step() -> str:
    """The shell lines of the recipe's step that runs the claims on ``MODEL``."""
    steps = yaml.safe_load(RECIPE.read_text())["jobs"]["checks"]["steps"]
    (step,) = [s for s in steps if s.get("name") == "The claims on your model"]
    assert step["if"] == "env.MODEL != ''"
    return step["run"]


def test_the_recipe_has_a_claims_step_that_reads_model():
    assert 'aftertrain report --models "$model"' in claims_step()


@pytest.mark.e2e
def test_the_recipes_claims_step_runs_on_a_transformers_folder(tmp_path, monkeypatch):
    pytest.importorskip("transformers", reason="transformers installs with the test extra on Python >= 3.11")
    outside_any_run(monkeypatch)
    repo, runner = tmp_path / "repo", tmp_path / "runner"
    shutil.copytree(FIXTURE, repo / "models" / "mine")
    runner.mkdir()
    (runner / "aftertrain").symlink_to(ROOT)
    env = {
        **os.environ,
        **QUICK_ENV,
        "MODEL": "models/mine",
        "RUNNER_TEMP": str(runner),
        "GITHUB_WORKSPACE": str(repo),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", claims_step()], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    ledger = json.loads((repo / "aftertrain-report" / "claims.json").read_text())
    assert ledger["meta"]["model"].endswith("models/mine")
    verdicts = {c["id"]: c["verdict"] for c in ledger["claims"]}
    assert (
        len(verdicts) == 37 and "broken" not in verdicts.values() and "not covered" not in verdicts.values()
    )
    assert (repo / "aftertrain-report" / "report.md").is_file()
