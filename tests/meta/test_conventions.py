"""The suite's own conventions, read from the source with ast.

- A teeth test (a deliberately broken variant fails a check) is marked
  ``@pytest.mark.teeth`` and named ``test_<check>_catches_<bug>``; every test
  named so is marked, and every marked test is named so.
- No test module imports another test module (or a conftest): shared code
  lives in the helper modules of ``tests/common/`` (toys, strategies, bug
  sets, the bad-input harness) and shared fixtures in the one conftest.py at
  the root.
- Tests by subject: each test file names the source module it tests
  (``tests/<package>/test_<module>[_<aspect>].py`` for
  ``src/aftertrain/<package>/<module>.py``, ``tests/test_<module>*.py`` for a
  top-level module), or is one of a few named kinds: a package's input policy
  table (``test_bad_inputs.py``), the kit's peers (``tests/checks/test_peer_*``),
  and the folders of one kind (:data:`FOLDERS_OF_A_KIND`: the claims on a
  model, ``tests/claims_on_model/``, and the suite's own tooling,
  ``tests/meta/``). docs/architecture.md says where a new test goes.
- Each source module has a test file named after it, or a line in
  :data:`TESTED_IN` naming the file that tests it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "aftertrain"
TEST_MODULES = sorted([*ROOT.glob("tests/**/test_*.py"), *ROOT.glob("benchmarks/test_*.py")])


@functools.cache
def parsed(source: str) -> ast.Module:
    """``ast.parse(source)``, once per text: three checks read each test
    module's tree (none changes it)."""
    return ast.parse(source)


def _is_teeth_marker(decorator: ast.expr) -> bool:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(node) == "pytest.mark.teeth"


def functions_under_test(tree: ast.Module):
    """Every test function of a module: top level and in Test* classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            yield node
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (f for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test_"))


def teeth_naming_problems(source: str) -> list[str]:
    """Tests of ``source`` that break the teeth convention, one line each."""
    problems = []
    for fn in functions_under_test(parsed(source)):
        marked = any(_is_teeth_marker(d) for d in fn.decorator_list)
        named = "_catches_" in fn.name
        if marked and not named:
            problems.append(f"{fn.name}: marked teeth, so its name says test_<check>_catches_<bug>")
        if named and not marked:
            problems.append(f"{fn.name}: named *_catches_*, so it is marked @pytest.mark.teeth")
    return problems


def imported_test_modules(source: str) -> list[str]:
    """Test modules (test_*, conftest) that ``source`` imports."""
    out = []
    for node in ast.walk(parsed(source)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        for name in names:
            last = name.split(".")[-1]
            helper = name == "tests.common" or name.startswith("tests.common.")
            if not helper and (
                last.startswith("test_")
                or last == "conftest"
                or name.split(".")[0] in ("tests", "benchmarks")
            ):
                out.append(name)
    return out


#: Test folders that mirror no package, each holding one kind of test.
FOLDERS_OF_A_KIND = {
    "claims_on_model": "the claims on a model, by claim area (as benchmarks/ holds the timed ones)",
    "meta": "the suite's own tooling",
}


def subject_problem(rel: Path, src: Path = SRC) -> str | None:
    """Why the test file ``rel`` (relative to the repository root) does not map
    to a subject; None when it does."""
    parts = rel.parts
    if parts[0] == "benchmarks":
        return None  # benchmarks are grouped by claim area, not by module
    name = rel.stem.removeprefix("test_")
    if len(parts) == 2:  # tests/test_<module>*.py: a top-level module
        modules = {p.stem for p in src.glob("*.py") if p.stem != "__init__"}
        where = "src/aftertrain/"
    else:
        package = parts[1]
        if package in FOLDERS_OF_A_KIND:
            return None
        if package == "common":
            return "tests/common/ holds helpers, not tests"
        if not (src / package).is_dir():
            return f"tests/{package}/ mirrors no package of src/aftertrain/"
        if name == "bad_inputs" or (package == "checks" and name.startswith("peer_")):
            return None
        modules = {p.stem.lstrip("_") for p in (src / package).glob("*.py")} | {package}
        where = f"src/aftertrain/{package}/"
    if any(name == m or name.startswith(m + "_") for m in modules):
        return None
    return f"{rel}: test_<module>[_<aspect>].py names no module of {where}"


#: Source modules whose tests are in a file not named after them, and that
#: file: a module tested through the one that uses it (a command's options
#: through the command line, a report section through the rendered report,
#: the verdicts' words through the ledger that gives them).
TESTED_IN = {
    "ledger/model_inputs.py": "tests/ledger/test_model_under_test.py",
    "checks/generator_battery.py": "tests/checks/test_speculative.py",
    "checks/model_adapters.py": "tests/checks/test_adapters.py",
    "checks/patterns.py": "tests/checks/test_prune.py",
    "checks/prune_battery.py": "tests/checks/test_prune.py",
    "checks/prune_guarantees.py": "tests/checks/test_prune.py",
    "checks/quant_battery.py": "tests/checks/test_quant.py",
    "checks/quant_output.py": "tests/checks/test_quant_guarantees.py",
    "checks/precision.py": "tests/checks/test_schemes.py",
    "checks/quant_reference.py": "tests/checks/test_quant_guarantees.py",
    "checks/report.py": "tests/checks/test_rule_battery.py",
    "checks/rule_probes.py": "tests/checks/test_rule_exact.py",
    "checks/zoo.py": "tests/checks/test_speculative.py",
    "claims/parts.py": "tests/ledger/test_state_parts.py",
    "claims/tables.py": "tests/experiments/test_tables.py",
    "claims/verdicts.py": "tests/ledger/test_state.py",
    "cli/check_common.py": "tests/cli/test_check.py",
    "cli/options.py": "tests/cli/test_cli_limits.py",
    "cli/sample.py": "tests/cli/test_cli.py",
    "cli/suite.py": "tests/report/test_multimodel.py",
    "cli/sweep.py": "tests/experiments/test_sweep.py",
    "cli/train.py": "tests/cli/test_cli.py",
    "experiments/article.py": "tests/claims/test_catalogue_figures.py",
    "experiments/quant_outliers.py": "tests/experiments/test_quant_figures.py",
    "experiments/round_replays.py": "tests/experiments/test_round_account.py",
    "experiments/speculative_steps.py": "tests/experiments/test_speedup_decodings.py",
    "experiments/speedup_tables.py": "tests/experiments/test_speedup_figures.py",
    "experiments/sweep_points.py": "tests/experiments/test_sweep.py",
    "ledger/benchmark.py": "tests/timing/test_compare_machines.py",
    "ledger/verdict_rule.py": "tests/ledger/test_state_parts.py",
    "prune/formats.py": "tests/prune/test_masks.py",
    "quant/api.py": "tests/quant/test_primitives.py",
    "report/baselines.py": "tests/report/test_rendering_figures.py",
    "report/document.py": "tests/report/test_assemble.py",
    "report/reading.py": "tests/report/test_assemble.py",
    "report/markdown.py": "tests/report/test_rendering.py",
    "report/meta.py": "tests/report/test_assemble.py",
    "report/paths.py": "tests/ledger/test_path_options.py",
    "report/prune.py": "tests/report/test_rendering_figures.py",
    "report/quant.py": "tests/report/test_rendering_figures.py",
    "report/speculative.py": "tests/report/test_rendering_figures.py",
    "report/sweep_tables.py": "tests/report/test_sweep_figures.py",
    "speculative/drafters.py": "tests/speculative/test_generator_fast_loop.py",
    "speculative/drafts.py": "tests/experiments/test_speedup_rules.py",
    "speculative/rounds.py": "tests/speculative/test_generator_fast_loop.py",
    "timing/decision.py": "tests/timing/test_sequential.py",
    "timing/look_plan.py": "tests/timing/test_sequential.py",
}


def own_test_files(module: Path, src: Path = SRC, tests: Path = ROOT / "tests") -> list[Path]:
    """The test files named after the source module ``module``
    (``tests/<package>/test_<module>[_<aspect>].py``; a top-level module's
    in ``tests/``)."""
    rel = module.relative_to(src)
    folder = tests if len(rel.parts) == 1 else tests / rel.parts[0]
    stem = module.stem.lstrip("_")
    return sorted([*folder.glob(f"test_{stem}.py"), *folder.glob(f"test_{stem}_*.py")])


def untested_problem(module: Path, src: Path = SRC, tested_in: dict[str, str] = TESTED_IN) -> str | None:
    """Why the source module ``module`` has no home for its tests; None when
    a test file is named after it or :data:`TESTED_IN` names an existing one."""
    rel = module.relative_to(src).as_posix()
    if module.name in ("__init__.py", "__main__.py") or own_test_files(module, src):
        return None
    where = tested_in.get(rel)
    if where is None:
        return (
            f"src/aftertrain/{rel} has no test file named after it; add one, or a line in "
            f"TESTED_IN naming the file that tests it"
        )
    if not (ROOT / where).is_file():
        return f"TESTED_IN names {where} for src/aftertrain/{rel}: no such file"
    return None


SOURCE_MODULES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("module", SOURCE_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_each_source_module_has_a_test_file(module):
    assert untested_problem(module) is None


def test_every_tested_in_entry_names_a_source_module():
    """A module renamed or removed takes its line with it."""
    assert sorted(m for m in TESTED_IN if not (SRC / m).is_file()) == []


@pytest.mark.teeth
def test_test_home_check_catches_a_module_with_no_test_file(tmp_path):
    src = tmp_path / "aftertrain"
    (src / "quant").mkdir(parents=True)
    lonely = src / "quant" / "lonely.py"
    lonely.write_text("")
    assert "no test file named after it" in untested_problem(lonely, src, {})
    assert "no such file" in untested_problem(lonely, src, {"quant/lonely.py": "tests/nowhere.py"})
    assert untested_problem(lonely, src, {"quant/lonely.py": "tests/meta/test_conventions.py"}) is None
    assert untested_problem(SRC / "quant" / "primitives.py") is None  # tests/quant/test_primitives.py


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_test_file_maps_to_a_source_module(path):
    assert subject_problem(path.relative_to(ROOT)) is None


@pytest.mark.teeth
def test_subject_check_catches_a_file_named_after_no_module():
    assert subject_problem(Path("tests/quant/test_api.py")) is None
    assert subject_problem(Path("tests/quant/test_primitives_grid.py")) is None
    assert subject_problem(Path("tests/test_stats.py")) is None
    assert subject_problem(Path("tests/claims_on_model/test_quant.py")) is None
    assert subject_problem(Path("tests/claims/test_catalogue_figures.py")) is None
    assert subject_problem(Path("tests/claims/test_quant.py")) is not None  # no claims/quant.py
    assert subject_problem(Path("tests/quant/test_edges.py")) is not None
    assert subject_problem(Path("tests/test_quant_edges.py")) is not None
    assert subject_problem(Path("tests/nowhere/test_x.py")) is not None
    assert subject_problem(Path("tests/common/test_toys.py")) is not None


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_teeth_tests_are_marked_and_named_catches(path):
    assert teeth_naming_problems(path.read_text()) == []


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_test_module_imports_another(path):
    assert imported_test_modules(path.read_text()) == []


def test_the_suite_has_teeth_tests():
    """The convention is not met vacuously: both folders hold teeth tests."""
    counts = {"tests": 0, "benchmarks": 0}
    for path in TEST_MODULES:
        for fn in functions_under_test(parsed(path.read_text())):
            counts[path.relative_to(ROOT).parts[0]] += any(_is_teeth_marker(d) for d in fn.decorator_list)
    assert counts["tests"] >= 30 and counts["benchmarks"] >= 4, counts


@pytest.mark.teeth
def test_convention_check_catches_an_unmarked_teeth_test_and_a_test_import():
    """Teeth of the two checks above on made-up modules."""
    unmarked = "def test_rule_catches_a_bug():\n    pass\n"
    misnamed = "import pytest\n@pytest.mark.teeth\ndef test_rule_rejects_a_bug():\n    pass\n"
    fine = (
        "import pytest\n@pytest.mark.teeth\n@pytest.mark.parametrize('b', [1])\n"
        "def test_rule_catches_bug(b):\n    pass\n"
    )
    assert len(teeth_naming_problems(unmarked)) == 1
    assert len(teeth_naming_problems(misnamed)) == 1
    assert teeth_naming_problems(fine) == []
    assert imported_test_modules("from test_model import x\nimport toys\n") == ["test_model"]
    assert imported_test_modules("def f():\n    import conftest\n") == ["conftest"]
    assert (
        imported_test_modules(
            "from tests.common.toys import ToyTable\nfrom aftertrain.claims import tables\n"
        )
        == []
    )
    assert imported_test_modules("from tests.lm.test_model import x\n") == ["tests.lm.test_model"]
