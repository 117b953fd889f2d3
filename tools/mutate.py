#!/usr/bin/env python3
"""Mutation harness: how many realistic bugs in src/ does the suite catch?

Each mutant of tools/mutants.py (a snippet, its replacement, a description,
a module tag) is applied alone to a temporary copy of the working tree; the
copy's tests run with ``PYTHONPATH`` pointing at the copy's ``src``, so the
working tree is never edited. A mutant is

- killed: pytest exits non-zero (a test failed, or the mutated code broke
  collection);
- survived: every test passed;
- timeout: pytest ran past ``--timeout`` seconds (counted as killed, shown apart);
- stale: its snippet occurs nowhere, or more than once, in the ``.py`` and
  ``.json`` files under src/aftertrain/ (the code moved or changed: refresh
  the snippet); never silently skipped.

Mutants marked ``equivalent`` (with the reason) are run but kept out of the
kill rate. The unmutated tree is run first (``--no-baseline`` skips it): if
it fails, every mutant would look killed, so the harness stops.

Usage (from the repository root)::

    python tools/mutate.py --list                      # locate every snippet, run nothing
    python tools/mutate.py --out mutation.md           # the full campaign
    python tools/mutate.py --only stats-03 rule-01 -- tests/test_stats.py
    python tools/mutate.py --module stats --jobs 2 --timeout 900 -- -n 2
    python tools/mutate.py --set blind --list          # the independent bug set
    python tools/mutate.py --set capabilities --module schema --jobs 1 -- tests/claims -n 0

``--set`` picks the bug set: ``project`` (tools/mutants.py, the default),
``blind`` (tools/mutants_blind.py, written from src/ and docs/ alone) or
``kit`` (tools/mutants_kit.py, the same for the checks kit, the reuse, the
ledger file, the compare and the CLI) or ``capabilities``
(tools/mutants_capabilities.py, the same for the ledger file's schema and
format and the README's claims table).

Arguments after ``--`` go to pytest, which always runs as
``python -m pytest -x -q -p no:cacheprovider [args]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutants import MUTANTS, Mutant

#: The bug sets ``--set`` chooses from (module with a ``MUTANTS`` tuple).
SETS = {
    "project": "mutants",
    "blind": "mutants_blind",
    "kit": "mutants_kit",
    "capabilities": "mutants_capabilities",
    "generator-kit": "mutants_generator_kit",
    "ledger-reader": "mutants_ledger_reader",
    "transformers": "mutants_transformers",
    "account": "mutants_account",
}


def bug_set(name: str) -> tuple[Mutant, ...]:
    """The ``MUTANTS`` of the bug set ``name`` (a key of :data:`SETS`); the
    project's is this module's ``MUTANTS``, looked up when called."""
    if name == "project":
        return MUTANTS
    import importlib

    return importlib.import_module(SETS[name]).MUTANTS


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("src") / "aftertrain"
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
#: Not copied: version control, environments, caches and generated output.
IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", ".mutation"
)
OUTCOMES = ("killed", "timeout", "survived", "stale", "error")
#: The files under src/aftertrain a snippet is searched in: the code and the
#: JSON shipped in the package (the ledger file's schema, claims.schema.json).
SEARCHED = ("*.py", "*.json")

#: ``--subset``: the test files of each module, run first (deterministic tests
#: of the default suite, so a mutant they kill is killed by the default
#: ``pytest``); only the survivors go on to the full run (``--full``).
_UNTIMED = ["--benchmark-disable"]
_SPEC = [
    "tests/speculative/test_rule.py",
    "tests/speculative/test_generator.py",
    "tests/claims_on_model/test_speculative.py",
    "tests/claims_on_model/test_teeth.py",
    "tests/checks/test_speculative.py",
    "tests/speculative/test_bad_inputs.py",
    "tests/lm/test_decoding_laws.py",
]
_QUANT = [
    "tests/quant/test_primitives.py",
    "tests/claims_on_model/test_quant.py",
    "tests/checks/test_quant.py",
    "tests/quant/test_bad_inputs.py",
    "tests/core/test_packing.py",
    "tests/checks/test_peer_torch.py",
    "tests/prune/test_masks.py",
]
_PRUNE = [
    "tests/prune/test_masks.py",
    "tests/claims_on_model/test_prune.py",
    "tests/checks/test_prune.py",
    "tests/prune/test_bad_inputs.py",
    "tests/core/test_packing.py",
    "tests/prune/test_masks.py",
]
_MODEL = [
    "tests/lm/test_model.py",
    "tests/lm/test_protocol.py",
    "tests/lm/test_bad_inputs.py",
    "tests/lm/test_decoding_laws.py",
    "tests/prune/test_masks.py",
]
#: Timing and ledger mutants: the fake-clock and ledger tests, with timing on
#: (no --benchmark-disable), plus the benchmark that exercises a decision.
_TIMED = [
    "tests/timing/test_paired.py",
    "tests/timing/test_bad_inputs.py",
    "tests/ledger/test_plugin.py",
    "tests/claims/test_catalogue.py",
]
SUBSETS: dict[str, list[str]] = {
    "model": _MODEL + _UNTIMED,
    "decoding": _MODEL + ["tests/speculative/test_generator.py"] + _UNTIMED,
    "evaluation": [
        "tests/lm/test_model.py",
        "tests/lm/test_ngram.py",
        "tests/lm/test_ngram_large_vocab.py",
        "tests/lm/test_evaluation.py",
        "tests/lm/test_bad_inputs.py",
    ]
    + _UNTIMED,
    "checkpoint": ["tests/lm/test_model.py", "tests/lm/test_train.py", "tests/lm/test_bad_inputs.py"]
    + _UNTIMED,
    "bigram": [
        "tests/lm/test_ngram.py",
        "tests/lm/test_counts.py",
        "tests/lm/test_ngram_large_vocab.py",
        "tests/lm/test_protocol.py",
        "tests/lm/test_decoding_laws.py",
    ]
    + _UNTIMED,
    "drafts": [
        "tests/lm/test_decoding_laws.py",
        "tests/prune/test_masks.py",
        "tests/lm/test_ngram.py",
        "tests/lm/test_counts.py",
        "tests/lm/test_ngram_large_vocab.py",
        "tests/lm/test_protocol.py",
        "tests/claims_on_model/test_speculative.py",
    ]
    + _UNTIMED,
    "protocol": [
        "tests/lm/test_protocol.py",
        "tests/lm/test_model.py",
        "tests/lm/test_ngram.py",
        "tests/lm/test_decoding_laws.py",
    ]
    + _UNTIMED,
    "packing": [
        "tests/core/test_packing.py",
        "tests/quant/test_primitives.py",
        "tests/prune/test_masks.py",
        "tests/prune/test_masks.py",
    ]
    + _UNTIMED,
    "quant": _QUANT + _UNTIMED,
    "prune": _PRUNE + _UNTIMED,
    "speculative-rule": _SPEC + _UNTIMED,
    # the S2 table's null (experiments/speculative.py) is pinned in test_stats.py
    "speculative-generator": _SPEC + ["tests/test_stats.py"] + _UNTIMED,
    "stats": [
        "tests/test_stats.py",
        "tests/test_stats_bad_inputs.py",
        "tests/prune/test_masks.py",
        "tests/lm/test_decoding_laws.py",
    ]
    + _UNTIMED,
    "timing": _TIMED + ["benchmarks/test_forward_benchmark.py"],
    "ledger": _TIMED + ["tests/report/test_assemble.py", "tests/cli/test_cli.py"],
    "report": ["tests/report/test_assemble.py", "tests/cli/test_cli.py"] + _UNTIMED,
    "checks": [
        "tests/checks/test_quant.py",
        "tests/checks/test_prune.py",
        "tests/checks/test_speculative.py",
        "tests/checks/test_rule_battery.py",
        "tests/claims_on_model/test_teeth.py",
    ]
    + _UNTIMED,
    "text": ["tests/lm/test_text.py", "tests/lm/test_model.py"] + _UNTIMED,
    "speedup": ["tests/experiments/test_speedup_rules.py"] + _UNTIMED,
}
# The figure tests (tests/*/test_*_figures.py) recompute each recorded figure
# independently: every area's subset runs its own.
for _tag, _extra in {
    "quant": ["tests/experiments/test_quant_figures.py"],
    "prune": ["tests/experiments/test_prune_figures.py"],
    "speculative-generator": ["tests/experiments/test_speculative_figures.py"],
    "speculative-rule": ["tests/experiments/test_speculative_figures.py"],
    "stats": ["tests/experiments/test_speculative_figures.py"],
    "speedup": ["tests/experiments/test_speedup_figures.py", "tests/experiments/test_speedup_rules.py"],
    "timing": [
        "tests/timing/test_paired_figures.py",
        "tests/timing/test_sequential.py",
        "tests/experiments/test_speedup_figures.py",
    ],
    "report": [
        "tests/report/test_rendering.py",
        "tests/report/test_rendering_figures.py",
        "tests/report/test_sweep_figures.py",
        "tests/report/test_plots_figures.py",
        "tests/report/test_multimodel.py",
    ],
}.items():
    SUBSETS[_tag] = SUBSETS[_tag] + _extra  # pytest takes options and paths in any order
# Tags of the independent set (tools/mutants_blind.py) that the project's set has not.
SUBSETS |= {
    "train": ["tests/lm/test_train.py", "tests/lm/test_model.py", "tests/lm/test_checkpoint.py"] + _UNTIMED,
    "ngram": [
        "tests/lm/test_ngram.py",
        "tests/lm/test_counts.py",
        "tests/lm/test_ngram_large_vocab.py",
        "tests/lm/test_protocol.py",
        "tests/lm/test_decoding_laws.py",
        "tests/claims_on_model/test_speculative.py",
    ]
    + _UNTIMED,
    "core": [
        "tests/core",
        "tests/lm/test_bad_inputs.py",
        "tests/quant/test_bad_inputs.py",
        "tests/prune/test_bad_inputs.py",
        "tests/timing/test_bad_inputs.py",
    ]
    + _UNTIMED,
    "experiments": ["tests/experiments", "tests/claims_on_model"] + _UNTIMED,
    "claims": [
        "tests/claims/test_catalogue.py",
        "tests/claims/test_ledgerfile.py",
        "tests/claims/test_catalogue_figures.py",
        "tests/report/test_assemble.py",
        "tests/experiments/test_tables.py",
    ]
    + _UNTIMED,
    "cli": ["tests/cli", "tests/lm/test_train.py", "tests/report/test_multimodel.py"] + _UNTIMED,
}


# Tags of the third independent set (tools/mutants_kit.py): the module's own test files.
_CB = "tests/checks/test_bad_inputs.py"
SUBSETS |= {
    "r3-quant": ["tests/checks/test_quant.py", "tests/checks/test_quant_guarantees.py", _CB] + _UNTIMED,
    "r3-prune": ["tests/checks/test_prune.py", _CB] + _UNTIMED,
    "r3-exact": ["tests/checks/test_rule_exact.py", "tests/checks/test_adapters.py", _CB] + _UNTIMED,
    "r3-adapters": ["tests/checks/test_adapters.py", _CB] + _UNTIMED,
    "r3-assertions": ["tests/checks/test_assertions.py", _CB] + _UNTIMED,
    "r3-speculative": ["tests/checks/test_speculative.py", "tests/checks/test_assertions.py", _CB] + _UNTIMED,
    "r3-reuse": ["tests/ledger/test_reuse.py", "tests/ledger/test_reuse_unclaimed.py"] + _UNTIMED,
    "r3-state": [
        "tests/ledger/test_state.py",
        "tests/ledger/test_state_parts.py",
        "tests/ledger/test_state_phases.py",
        "tests/ledger/test_reuse.py",
    ]
    + _UNTIMED,
    "r3-ledgerfile": ["tests/claims/test_ledgerfile.py", "tests/claims/test_ledgerfile_fields.py"] + _UNTIMED,
    "r3-compare": [
        "tests/timing/test_compare.py",
        "tests/timing/test_compare_intervals.py",
        "tests/timing/test_compare_machines.py",
    ]
    + _UNTIMED,
    "r3-cli": ["tests/cli/test_check.py", "tests/cli/test_cli.py", "tests/cli/test_cli_limits.py"] + _UNTIMED,
}

# Tags of the capabilities' set (tools/mutants_capabilities.py): each capability's own test files.
SUBSETS |= {
    "schema": [
        "tests/claims/test_ledgerfile_schema.py",
        "tests/meta/test_ledger_docs.py",
        "tests/claims/test_ledgerfile.py",
        "tests/claims/test_ledgerfile_fields.py",
    ]
    + _UNTIMED,
    "readme-table": [
        "tests/report/test_assemble.py",
        "tests/report/test_multimodel.py",
        "tests/meta/test_readme.py",
        "tests/core/test_io.py",
    ]
    + _UNTIMED,
}

# Tags of the transformers path's set (tools/mutants_transformers.py): each module's own test files.
_HF = ["tests/lm/test_hf.py", "tests/lm/test_hf_text.py", "tests/lm/test_hf_llama_fixture.py"]
_TABLES = ["tests/lm/test_counts.py", "tests/lm/test_ngram_large_vocab.py", "tests/lm/test_ngram.py"]
SUBSETS |= {
    "hf": _HF + _UNTIMED,
    "anatomy": _HF + _UNTIMED,
    "counts": _TABLES + _UNTIMED,
    "ngram-tf": _TABLES + _UNTIMED,
    "drafts-tf": _HF + ["tests/speculative/test_table_drafts.py"] + _UNTIMED,
    "export": ["tests/lm/test_hf_export.py"] + _HF + _UNTIMED,
}

# The cost account in place's set (tools/mutants_account.py): its tests and the timing folder (Timed sides).
SUBSETS |= {"account-inplace": ["tests/experiments/test_round_account.py", "tests/timing"] + _UNTIMED}


@dataclass
class Result:
    id: str
    module: str
    description: str
    outcome: str  # one of OUTCOMES
    equivalent: str | None
    where: str  # file the snippet was found in, or why it is stale
    seconds: float
    tail: str  # last lines of pytest's output
    stage: str = "full"  # "subset" (killed by its module's tests) or "full" (the default suite)


def locate(mutant: Mutant, root: Path) -> tuple[Path | None, str]:
    """The one file under ``root/src/aftertrain`` (its ``.py`` and ``.json``
    files, :data:`SEARCHED`) holding the snippet, or
    ``(None, reason)`` when it is found in no file or more than once."""
    hits = []
    files = (
        [root / PACKAGE / mutant.file]
        if mutant.file
        else sorted(p for pattern in SEARCHED for p in (root / PACKAGE).rglob(pattern))
    )
    for path in files:
        if not path.is_file():
            return None, f"file {mutant.file} not found"
        n = path.read_text().count(mutant.find)
        hits += [path] * n
    if len(hits) == 1:
        return hits[0], str(hits[0].relative_to(root))
    if not hits:
        return None, "snippet not found"
    files = ", ".join(sorted({str(h.relative_to(root)) for h in hits}))
    return None, f"snippet found {len(hits)} times ({files})"


def copy_tree(dest: Path) -> Path:
    shutil.copytree(ROOT, dest, ignore=IGNORE, symlinks=True)
    return dest


#: pytest's exit statuses that mean the tests ran red: 1 (a test failed) and 2
#: (interrupted, e.g. a collection error: the mutated code does not import).
#: 3 (internal error), 4 (usage error: a bad argument of this harness) and 5
#: (no tests collected) say nothing about the mutant: outcome "error".
RED = (1, 2)


def run_pytest(tree: Path, extra: list[str], timeout: float) -> tuple[str, float, str]:
    """``(outcome, seconds, tail)`` of pytest in ``tree``: passed, failed
    (exit status in RED), error (any other status) or timeout."""
    # One process per run where the tree's addopts say -n auto (the mutants'
    # own --jobs share the cores); an explicit -n N in ``extra`` still wins.
    env = {
        **os.environ,
        "PYTHONPATH": str(tree / "src"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_XDIST_AUTO_NUM_WORKERS": "0",
    }
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, *PYTEST, *extra],
            cwd=tree,
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as err:
        out = err.stdout or b""
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        return "timeout", time.monotonic() - start, "\n".join(out.splitlines()[-5:])
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-5:])
    outcome = "passed" if proc.returncode == 0 else "failed" if proc.returncode in RED else "error"
    return outcome, time.monotonic() - start, tail


def run_mutant(
    mutant: Mutant,
    tree: Path,
    extra: list[str],
    timeout: float,
    subset: bool = False,
    full: list[str] | None = None,
) -> Result:
    """One mutant: with ``subset``, first its module's tests (SUBSETS); a
    survivor of those (and every mutant without ``subset``) runs ``extra``
    (the full suite), or ``full`` for the survivors when given."""
    path, where = locate(mutant, tree)
    if path is None:
        return Result(
            mutant.id, mutant.module, mutant.description, "stale", mutant.equivalent, where, 0.0, ""
        )
    original = path.read_text()
    path.write_text(original.replace(mutant.find, mutant.replace, 1))
    spent, stage = 0.0, "full"
    # A module tag without a subset (most of the blind set's) goes straight to
    # the full run: --full's arguments when given, else those after "--".
    has_subset = subset and mutant.module in SUBSETS
    try:
        if has_subset:
            outcome, spent, tail = run_pytest(tree, SUBSETS[mutant.module], timeout)
            stage = "subset"
        if not has_subset or (outcome == "passed" and full is not None):
            args = list(full) if subset and full is not None else list(extra)
            outcome, seconds, tail = run_pytest(tree, args, timeout)
            spent += seconds
            stage = "full"
    finally:
        path.write_text(original)
    outcome = {"passed": "survived", "failed": "killed"}.get(outcome, outcome)
    return Result(
        mutant.id, mutant.module, mutant.description, outcome, mutant.equivalent, where, spent, tail, stage
    )


def source_of(r: Result) -> str:
    """The mutated code's home: the package under src/aftertrain (``quant/``)
    or the module file (``model.py``); ``stale`` when it was not found."""
    if r.outcome == "stale" or not r.where.startswith(str(PACKAGE)):
        return "stale"
    parts = Path(r.where).relative_to(PACKAGE).parts
    return parts[0] + "/" if len(parts) > 1 else parts[0]


def table(results: list[Result], key=lambda r: r.module, title: str = "module") -> str:
    """Markdown table by module (or by ``key``): counts per outcome and the
    kill rate over the mutants that ran and are not equivalent ((killed +
    timeout) / run)."""
    modules = sorted({key(r) for r in results})
    header = [
        title,
        "mutants",
        "equivalent",
        "stale",
        "killed",
        "of them by the subset",
        "timeout",
        "survived",
        "kill rate",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def row(name: str, rs: list[Result]) -> str:
        c = Counter(r.outcome for r in rs if not r.equivalent)
        ran = c["killed"] + c["timeout"] + c["survived"]
        rate = f"{100 * (c['killed'] + c['timeout']) / ran:.1f}%" if ran else "-"
        by_subset = sum(1 for r in rs if not r.equivalent and r.outcome == "killed" and r.stage == "subset")
        cells = [
            name,
            len(rs),
            sum(1 for r in rs if r.equivalent),
            c["stale"],
            c["killed"],
            by_subset,
            c["timeout"],
            c["survived"],
            rate,
        ]
        return "| " + " | ".join(map(str, cells)) + " |"

    for m in modules:
        lines.append(row(m, [r for r in results if key(r) == m]))
    lines.append(row("**all**", results))
    return "\n".join(lines)


def details(results: list[Result]) -> str:
    parts = []
    for title, keep in (
        ("Survived", lambda r: r.outcome == "survived" and not r.equivalent),
        ("Stale", lambda r: r.outcome == "stale"),
        ("Timeout", lambda r: r.outcome == "timeout"),
        ("Equivalent (excluded from the rate)", lambda r: bool(r.equivalent)),
    ):
        rs = [r for r in results if keep(r)]
        if rs:
            parts.append(
                f"**{title}**\n\n"
                + "\n".join(
                    f"- `{r.id}` ({r.where}): {r.description}"
                    + (f" (equivalent: {r.equivalent})" if r.equivalent else "")
                    + (f" [{r.outcome}]" if title.startswith("Equivalent") else "")
                    for r in rs
                )
            )
    return "\n\n".join(parts)


def select(args, bugs: tuple[Mutant, ...] = MUTANTS) -> list[Mutant]:
    chosen = list(bugs)
    if args.only:
        unknown = sorted(set(args.only) - {m.id for m in bugs})
        if unknown:
            raise SystemExit(f"--only: unknown mutant ids {unknown}")
        chosen = [m for m in chosen if m.id in args.only]
    if args.module:
        chosen = [m for m in chosen if m.module in args.module]
    if args.limit:
        chosen = chosen[: args.limit]
    return chosen


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--set",
        choices=sorted(SETS),
        default="project",
        help="the bug set: project (tools/mutants.py, default), blind "
        "(tools/mutants_blind.py, written from src/ and docs/ alone), kit "
        "(tools/mutants_kit.py, the checks kit, the reuse, the ledger file, the compare, the CLI) "
        "or capabilities (tools/mutants_capabilities.py, the ledger's schema, the README's table)",
    )
    ap.add_argument("--list", action="store_true", help="locate every snippet; run nothing")
    ap.add_argument("--only", nargs="+", metavar="ID", help="run these mutant ids")
    ap.add_argument("--module", nargs="+", metavar="TAG", help="run the mutants of these modules")
    ap.add_argument("--limit", type=int, default=0, help="run the first N selected mutants")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant (default 900)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own copy")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    ap.add_argument(
        "--subset",
        action="store_true",
        help="run each mutant's module tests first (SUBSETS); only survivors run the full suite",
    )
    ap.add_argument(
        "--full",
        nargs=argparse.REMAINDER,
        metavar="ARG",
        help="with --subset: rerun the survivors with these pytest arguments (the full "
        "suite: '--full' alone, or '--full -n 2'); last on the line: every "
        "argument after it goes to pytest. '-n N' is dropped for "
        "timing/ledger mutants. Without it a subset survivor is reported "
        "as survived (stage subset)",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="run nothing: merge result files of earlier runs (a later file's "
        "result of a mutant replaces an earlier one), print and --out the table",
    )
    ap.add_argument("--out", type=Path, help="write the markdown table and lists here")
    ap.add_argument("--json", type=Path, help="write every result as JSON here")
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0 or args.limit < 0:
        ap.error("--jobs must be >= 1, --timeout > 0, --limit >= 0")
    bugs = bug_set(args.set)
    ids = Counter(m.id for m in bugs)
    if any(n > 1 for n in ids.values()):
        raise SystemExit(f"duplicate mutant ids: {[i for i, n in ids.items() if n > 1]}")
    mutants = select(args, bugs)

    if args.merge:
        by_id: dict[str, Result] = {}
        for f in args.merge:
            for d in json.loads(f.read_text()):
                by_id[d["id"]] = Result(**d)
        results = []
        for m in mutants:  # current descriptions and equivalence of the bug set
            if m.id in by_id:
                r = by_id[m.id]
                r.description, r.equivalent, r.module = m.description, m.equivalent, m.module
                results.append(r)
        missing = [m.id for m in mutants if m.id not in by_id]
        report = (
            f"Merged from {', '.join(str(f) for f in args.merge)}"
            + (f"; not run: {', '.join(missing)}" if missing else "")
            + "\n\n"
            + table(results)
            + "\n\nBy the file the bug is in:\n\n"
            + table(results, source_of, "source")
            + "\n\n"
            + details(results)
            + "\n"
        )
        print(report)
        if args.out:
            args.out.write_text(report)
        if args.json:
            args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
        return 0

    if args.list:
        by_module = Counter(m.module for m in mutants)
        for m in mutants:
            path, where = locate(m, ROOT)
            state = "ok   " if path else "STALE"
            print(
                f"{state} {m.id:<12} {m.module:<22} {where:<40} {m.description}"
                + (f"  [equivalent: {m.equivalent}]" if m.equivalent else "")
            )
        print(f"{len(mutants)} mutants: " + ", ".join(f"{k} {v}" for k, v in sorted(by_module.items())))
        return 0

    with tempfile.TemporaryDirectory(prefix="aftertrain-mutate-") as tmp:
        trees = [copy_tree(Path(tmp) / f"tree{j}") for j in range(args.jobs)]
        if not args.no_baseline:
            commands = [extra]
            if args.subset:  # every subset the selection uses must pass unmutated
                commands = list(
                    {
                        tuple(SUBSETS[m.module]): SUBSETS[m.module] for m in mutants if m.module in SUBSETS
                    }.values()
                ) or [extra]
            for command in commands:
                outcome, seconds, tail = run_pytest(trees[0], command, args.timeout)
                print(f"baseline (unmutated) {' '.join(command)}: {outcome} in {seconds:.0f} s", flush=True)
                if outcome != "passed":
                    print(tail, file=sys.stderr)
                    print("the unmutated tree does not pass: fix that first", file=sys.stderr)
                    return 2
        free = list(trees)
        results: list[Result] = []

        def work(m: Mutant) -> Result:
            tree = free.pop()
            try:
                r = run_mutant(m, tree, extra, args.timeout, args.subset, args.full)
            finally:
                free.append(tree)
            print(f"{r.outcome:<8} {r.id:<14} {r.stage:<6} {r.seconds:6.0f} s  {r.description}", flush=True)
            return r

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(work, mutants))

    command = "Command: `python -m pytest -x -q -p no:cacheprovider " + " ".join(extra) + "`"
    if args.subset:
        command = (
            "Each mutant first against its module's tests (tools/mutate.py SUBSETS); "
            "survivors against `python -m pytest -x -q -p no:cacheprovider "
            + " ".join(args.full if args.full is not None else extra)
            + "`"
        )
    report = (
        command
        + "\n\n"
        + table(results)
        + "\n\nBy the file the bug is in:\n\n"
        + table(results, source_of, "source")
        + "\n\n"
        + details(results)
        + "\n"
    )
    print("\n" + report)
    if args.out:
        args.out.write_text(report)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
