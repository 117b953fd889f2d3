"""What the command line and the package load: ``aftertrain --version``,
every ``--help`` and the usage errors the arguments alone decide answer
without importing torch (torch's import can take 13-23 s on a loaded 2-core
machine), and ``import aftertrain`` names only modules that exist.

Method: one fresh interpreter runs every command line of the table through
``aftertrain.cli.main`` and reports, per command line, its exit status and
whether ``torch`` is in ``sys.modules`` after it (a fresh interpreter: the
suite itself has torch loaded).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import aftertrain

SRC = Path(aftertrain.__file__).resolve().parent
#: A file and a folder that exist, and a ledger, wherever the probe runs.
A_FILE, A_FOLDER = str(SRC / "__init__.py"), str(SRC)
A_LEDGER = str(Path(__file__).resolve().parents[2] / "report" / "claims.json")

#: (argv, exit status): a command line answered before torch is needed.
TORCH_FREE = [
    (["--version"], 0),
    (["--help"], 0),
    *[([cmd, "--help"], 0) for cmd in ("report", "sweep", "train", "sample", "check")],
    (["check", "rule", "--help"], 0),
    ([], 2),
    (["bogus"], 2),
    (["train", "--steps", "0"], 2),
    (["train", "--lr", "-1e-3"], 2),
    (["train", "--dropout", "1"], 2),
    (["train", "--steps", "10", "--warmup", "100"], 2),
    (["train", "--steps", "10", "--stop-at", "999"], 2),
    (["train", "--draft", "--lr", "1e-3"], 2),
    (["train", "--out", "/"], 2),
    (["sample", "--length", "-1"], 2),
    (["sample", "--temperature", "nan"], 2),
    (["report", "--jobs", "many"], 2),
    (["report", "--jobs", "0"], 2),
    (["report", "--out", ""], 2),
    (["report", "--out", A_FILE], 2),
    (["report", "--models", ""], 2),
    (["report", "--checkout", "/no/such/folder"], 2),
    (["report", "--claims-json", "/no/such/ledger.json"], 2),
    (["report", "--quick", "--claims-json", A_LEDGER], 2),
    (["sweep", "--models", "a,a"], 2),
    (["sweep", "--reuse", ""], 2),
    (["sweep", "--out", A_FILE], 2),
    (["sample", "--checkpoint", "/no/such/file.pt"], 2),
    (["sample", "--checkpoint", A_FOLDER], 2),
    (["check", "rule", "no_colon"], 2),
    (["check", "rule", "m:f", "--n", "5"], 2),
    (["check", "rule", "m:f", "--n", "1000000000000"], 2),
    (["check", "rule", "m:f", "--dtype", "int8"], 2),
    (["check", "rule", "no_such_module_anywhere:f"], 2),
]

PROBE = """
import json, sys
from aftertrain import cli
rows = []
for argv in json.loads(sys.argv[1]):
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    rows.append([argv, status, "torch" in sys.modules])
print(json.dumps(rows))
"""


def test_version_help_and_usage_errors_do_not_import_torch(tmp_path):
    argvs = [argv for argv, _ in TORCH_FREE]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert [status for _, status, _ in rows] == [status for _, status in TORCH_FREE], out.stderr
    loaded = [argv for argv, _, torch_loaded in rows if torch_loaded]
    assert loaded == [], f"torch was imported by {loaded[0]}"


@pytest.mark.e2e
def test_the_probe_sees_torch_when_a_command_loads_it(tmp_path):
    """The probe's own teeth: a command line that does reach the model
    (sampling from the bundled reference, length 0) is reported as loading torch."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([["sample", "--length", "0"]])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    [[_, status, torch_loaded]] = json.loads(out.stdout.strip().splitlines()[-1])
    assert status == 0 and torch_loaded, out.stderr


def test_the_lazy_module_list_is_the_packages_folder():
    """``aftertrain.<name>`` loads on first use for every package and
    top-level module of src/aftertrain/ (``aftertrain.lm`` among them), and
    the list names nothing else (the modules that moved into packages)."""
    on_disk = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    on_disk |= {p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert aftertrain._SUBMODULES == on_disk
    for name in sorted(on_disk):
        assert getattr(aftertrain, name) is importlib.import_module(f"aftertrain.{name}")


def test_a_name_outside_the_list_is_an_attribute_error():
    import pytest

    for name in ("text", "model", "bigram"):  # moved into aftertrain.lm / speculative
        with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
            getattr(aftertrain, name)
