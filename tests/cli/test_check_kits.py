"""``aftertrain check quantizer`` and ``aftertrain check pruner``
(aftertrain.cli.check_kits), beside ``check rule``: exit 0 passed (edge
findings printed), 1 failed (``--strict``: an edge finding too), 2 on a
usage error in one line; ``--json`` parses; ``path/to/file.py:FUNC``
imports the modules beside that file."""

from __future__ import annotations

import json
import sys

import pytest

from aftertrain import cli
from aftertrain.cli import check_kits

USER_CODE = '''
import torch

def absmax_int4(w, scheme):
    """symmetric, per group of 32, codes in [-8, 7]: torchao's SYMMETRIC."""
    if w.shape[1] % 32:
        raise ValueError(f"rows of {w.shape[1]} are not whole groups of 32")
    g = w.reshape(w.shape[0], -1, 32)
    s = (g.abs().amax(-1, keepdim=True) / 7.5).clamp_min(torch.finfo(torch.float32).tiny)
    return (torch.round(g / s).clamp(-8, 7) * s).reshape(w.shape)


def floor_int4(w, scheme):
    """broken: floor instead of round."""
    g = w.reshape(w.shape[0], -1, 32)
    s = (g.abs().amax(-1, keepdim=True) / 7.5).clamp_min(torch.finfo(torch.float32).tiny)
    return (torch.floor(g / s).clamp(-8, 7) * s).reshape(w.shape)


def two_four(weights, sparsity):
    out = {}
    for name, w in weights.items():
        if w.shape[-1] % 4:
            raise ValueError(f"rows of {w.shape[-1]} are not whole blocks of 4")
        blocks = w.abs().reshape(-1, 4)
        keep = torch.zeros_like(blocks, dtype=torch.bool)
        keep.scatter_(1, blocks.topk(2, dim=1).indices, True)
        out[name] = keep.reshape(w.shape)
    return out


def _rows_by(norm, weights, sparsity):
    out = {}
    for name, w in weights.items():
        drop = round(sparsity * w.shape[0])
        order = torch.linalg.vector_norm(w, ord=norm, dim=1).argsort(stable=True)
        keep = torch.ones_like(w, dtype=torch.bool)
        keep[order[:drop]] = False
        out[name] = keep
    return out


def rows_l2(weights, sparsity):
    """whole rows, the smallest L2 norms first: torch.nn.utils.prune.ln_structured(n=2, dim=0)."""
    return _rows_by(2, weights, sparsity)


def rows_l1(weights, sparsity):
    """whole rows, the smallest L1 norms first: right under rows:1, wrong under the default norm 2."""
    return _rows_by(1, weights, sparsity)


def rows_kept_truncated(weights, sparsity):
    """whole rows by L2 norm, torch-pruning's count n - int(n * (1 - s)), never the last row."""
    out = {}
    for name, w in weights.items():
        n = w.shape[0]
        drop = min(n - int(n * (1 - sparsity)), n - 1)
        keep = torch.ones_like(w, dtype=torch.bool)
        keep[torch.linalg.vector_norm(w, dim=1).argsort(stable=True)[:drop]] = False
        out[name] = keep
    return out


def signed_two_four(weights, sparsity):
    """broken: keeps the 2 largest signed values."""
    out = {}
    for name, w in weights.items():
        if w.shape[-1] % 4:
            raise ValueError("not whole blocks")
        blocks = w.reshape(-1, 4)
        keep = torch.zeros_like(blocks, dtype=torch.bool)
        keep.scatter_(1, blocks.topk(2, dim=1).indices, True)
        out[name] = keep.reshape(w.shape)
    return out
'''


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    (tmp_path / "my_kits.py").write_text(USER_CODE)
    sub = tmp_path / "lib"
    sub.mkdir()
    (sub / "helper_33.py").write_text("from aftertrain.checks import zoo\nRULE = zoo.make_rule()\n")
    (sub / "rules_33.py").write_text(
        "import helper_33\n\ndef rule(p, q, d, u, v):\n    return helper_33.RULE(p, q, d, u, v)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("my_kits", "helper_33", "rules_33"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


SCHEME = "int4 SYMMETRIC_FULL PerGroup(32)"


def test_a_quantizer_with_edge_findings_exits_0_and_1_with_strict(user_folder, capsys):
    """The docs' absmax int4: -8 x (max / 7.5) overflows at float32's max (an
    edge finding, printed), the row of 48 is refused (a reshape's
    RuntimeError with a message): exit 0; with --strict exit 1."""
    assert cli.main(["check", "quantizer", "my_kits:absmax_int4", "--scheme", SCHEME, "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("absmax_int4: PASSED, ") and " edge findings (" in out[0], out
    assert all(line.startswith("  - edge: float32 max") for line in out[1:]), out
    assert (
        cli.main(["check", "quantizer", "my_kits:absmax_int4", "--scheme", SCHEME, "--strict", "--quiet"])
        == 1
    )
    assert "FAILED" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.teeth
def test_check_quantizer_catches_floor_rounding_with_exit_1_and_json_classes(user_folder, capsys):
    assert (
        cli.main(["check", "quantizer", "my_kits:floor_int4", "--scheme", SCHEME, "--json", "--quiet"]) == 1
    )
    [report] = json.loads(capsys.readouterr().out)
    assert not report["passed"] and report["verdict"] == "FAILED"
    failed = [r for r in report["rows"] if not r["passed"]]
    assert {r["severity"] for r in failed} == {"failure", "edge"}
    assert "round-trip" in {r["check"] for r in failed if r["severity"] == "failure"}


def test_a_pruner_exits_0_and_a_broken_one_1(user_folder, capsys):
    assert cli.main(["check", "pruner", "my_kits:two_four", "--pattern", "2:4", "--json", "--quiet"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert report["passed"] and any(r["check"] == "refused" for r in report["rows"])
    assert cli.main(["check", "pruner", "my_kits:signed_two_four", "--pattern", "2:4", "--quiet"]) == 1
    assert "magnitude failed" in capsys.readouterr().out


def test_rows_without_a_norm_means_the_l2_norm(user_folder, capsys):
    """``--pattern rows`` (and ``columns``) without ``:NORM`` judges by the
    L2 norm, as documented (and as ``ln_structured``'s usual ``n=2``): an L2
    row pruner passes it, an L1 one passes only ``rows:1`` and fails it."""
    assert check_kits.parse_pattern("rows") == ("structured", 0, 2, "HALF_EVEN", 0)
    assert check_kits.parse_pattern("columns") == ("structured", 1, 2, "HALF_EVEN", 0)
    argv = ["--json", "--quiet"]
    assert cli.main(["check", "pruner", "my_kits:rows_l2", "--pattern", "rows", *argv]) == 0
    assert cli.main(["check", "pruner", "my_kits:rows_l1", "--pattern", "rows:1", *argv]) == 0
    capsys.readouterr()
    assert cli.main(["check", "pruner", "my_kits:rows_l1", "--pattern", "rows", *argv]) == 1
    [report] = json.loads(capsys.readouterr().out)
    assert any(r["check"] == "magnitude" and not r["passed"] for r in report["rows"])


def test_a_declared_count_convention_passes_and_undeclared_reads_mismatch(user_folder, capsys):
    """torch-pruning's count, declared in --pattern's words, passes (every
    row's class "passed" in --json); undeclared, the count rows it explains
    are mismatches naming the declaration, and the report fails."""
    declared = "rows:2 rounding=kept_truncated keep_at_least=1"
    argv = ["check", "pruner", "my_kits:rows_kept_truncated", "--json", "--quiet", "--pattern"]
    assert cli.main([*argv, declared]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert {r["class"] for r in report["rows"]} == {"passed"}
    assert cli.main([*argv, "rows"]) == 1
    [report] = json.loads(capsys.readouterr().out)
    assert {r["class"] for r in report["rows"] if not r["passed"]} == {"mismatch"}
    assert report["mismatches"] and all(
        line.endswith(
            "(declare Structured(dim=0, norm=2, rounding=Rounding.KEPT_TRUNCATED, keep_at_least=1))"
        )
        for line in report["mismatches"]
    ), report["mismatches"]


def test_a_file_path_imports_the_modules_beside_it(user_folder, capsys):
    """``path/to/file.py:FUNC``: the file's folder goes first on the path, so
    its own imports of the modules beside it work."""
    assert cli.main(["check", "rule", "lib/rules_33.py:rule", "--exact", "--n", "100", "--quiet"]) == 0, (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "argv, match",
    [
        (["quantizer", "my_kits:absmax_int4"], "the following arguments are required: --scheme"),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "int9 SYMMETRIC PerTensor()"],
            "bits must be int2 to int8",
        ),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SIMETRIC PerTensor()"],
            "mapping must be one of",
        ),
        (["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SYMMETRIC PerRow()"], "granularity must be"),
        (["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SYMMETRIC PerGroup(0)"], "at least 1"),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SYMMETRIC PerTensor() input=float32"],
            "input= must be float16 or bfloat16, got 'input=float32'",
        ),
        (
            [
                "quantizer",
                "my_kits:absmax_int4",
                "--scheme",
                "int4 SYMMETRIC PerTensor() scale=float16 scale=float16",
            ],
            "floor=, input=, scale=, output= each at most once",
        ),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "NF4 PerGroup(64) floor=eps"],
            "input=, scale=, output= each",
        ),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "NF4 PerGroup(None)"],
            "a codebook's blocks must have",
        ),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SYMMETRIC PerBlock(64)"],
            "is a codebook's granularity",
        ),
        (["quantizer", "my_kits:absmax_int4", "--scheme", "NF5 PerGroup(64)"], "or 'NF4|FP4 <granularity>"),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SYMMETRIC PerTensor() floor=x"],
            "floor=<float>",
        ),
        *(
            (
                ["quantizer", "my_kits:absmax_int4", "--scheme", f"int4 SYMMETRIC PerTensor() floor={floor}"],
                f"--scheme 'int4 SYMMETRIC PerTensor() floor={value}': scale_floor must be a float in "
                f"[1.18e-38, 1), got {value}",
            )
            for floor, value in (("nan", "nan"), ("-1", "-1.0"), ("inf", "inf"), ("1", "1.0"))
        ),
        (
            ["quantizer", "my_kits:absmax_int4", "--scheme", "int4 SYMMETRIC PerGroup(1000000000)"],
            "--scheme 'int4 SYMMETRIC PerGroup(1000000000)': a group size must be at most 65,536 "
            "(the largest the default battery is built for), got 1,000,000,000",
        ),
        (
            ["pruner", "my_kits:two_four", "--pattern", "1:1000000"],
            "--pattern 1:1000000: M must be at most 65,536 (the longest block the default battery",
        ),
        (["pruner", "my_kits:two_four", "--pattern", "4:2"], "1 <= N < M"),
        (["pruner", "my_kits:two_four", "--pattern", "diagonal"], "expected N:M"),
        (["pruner", "my_kits:two_four", "--pattern", "2:4 rounding=floor"], "N:M keeps exactly N of every M"),
        (
            ["pruner", "my_kits:rows_l2", "--pattern", "rows rounding=banker"],
            "rounding=<half_even|half_up|floor|ceil|kept_truncated> or keep_at_least=<int >= 0>, "
            "got 'rounding=banker'",
        ),
        (["pruner", "my_kits:rows_l2", "--pattern", "rows keep_at_least=-1"], "got 'keep_at_least=-1'"),
        (
            ["pruner", "my_kits:rows_l2", "--pattern", "rows:2 rounding=floor rounding=ceil"],
            "argument --pattern: after the pattern: rounding= at most once, got it twice in "
            "'rows:2 rounding=floor rounding=ceil'",
        ),
        (
            ["pruner", "my_kits:rows_l2", "--pattern", "rows keep_at_least=1 keep_at_least=2"],
            "keep_at_least= at most once, got it twice in 'rows keep_at_least=1 keep_at_least=2'",
        ),
        (
            ["pruner", "my_kits:rows_l2", "--pattern", "rows keep_at_least=\u00b2"],
            "keep_at_least=<int >= 0>, got 'keep_at_least=\u00b2'",
        ),
        (
            ["pruner", "my_kits:two_four", "--pattern", "2:4", "--sparsities", "0.5"],
            "--sparsities does not apply to an N:M pattern",
        ),
        (["pruner", "my_kits:two_four", "--pattern", "global", "--sparsities", "2"], "sparsities in [0, 1]"),
        (["rule", "my_kits:two_four", "--uniforms", "float32"], "--uniforms applies only with --exact"),
        (["pruner", "nowhere.py:f", "--pattern", "2:4"], "nowhere.py: no such file"),
    ],
)
def test_usage_errors_exit_2_with_one_line(user_folder, capsys, argv, match):
    try:
        code = cli.main(["check", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert match in err and len(err.strip().splitlines()) == 1, err


def test_scheme_and_pattern_words_are_the_kits():
    """--scheme's mapping, codebook and precision names are repeated (a usage
    error needs no torch): they must be the kit's; a scheme's printed form
    (options and codebooks too) parses back to it."""
    import torch

    from aftertrain.checks.prune import NM, Rounding, Scope, Structured, Unstructured
    from aftertrain.checks.quant import Mapping, PerAxis, PerBlock, PerGroup, PerTensor, QuantScheme

    assert check_kits.MAPPINGS == tuple(m.name for m in Mapping)
    for scheme in (
        QuantScheme(4, Mapping.SYMMETRIC_FULL, PerGroup(32)),
        QuantScheme(8, Mapping.ASYMMETRIC, PerAxis(0)),
        QuantScheme(2, Mapping.ASYMMETRIC_FLOAT_SHIFT, PerGroup(None)),
        QuantScheme(3, Mapping.SYMMETRIC, PerTensor()),
    ):
        assert check_kits.build_scheme(check_kits.parse_scheme(str(scheme))) == scheme
    eps = check_kits.build_scheme(check_kits.parse_scheme("int8 SYMMETRIC_FULL PerAxis(0) floor=eps"))
    assert eps.scale_floor == 2.0**-23
    from aftertrain.checks.codebooks import CODEBOOKS, FP4, NF4, CodebookScheme
    from aftertrain.checks.precision import LOW_PRECISION

    assert check_kits.CODEBOOK_NAMES == tuple(CODEBOOKS) and check_kits.PRECISIONS == tuple(LOW_PRECISION)
    for scheme in (
        QuantScheme(4, Mapping.ASYMMETRIC_FREE_ZERO, PerGroup(64), scale_floor=5e-5),
        QuantScheme(8, Mapping.SYMMETRIC_SIGNED_SCALE, PerAxis(0), scale_dtype=torch.float16),
        QuantScheme(8, Mapping.SYMMETRIC, PerAxis(0), scale_floor=2.0**-23, input_dtype=torch.bfloat16),
        CodebookScheme(NF4, PerGroup(64), input_dtype=torch.float16, output_dtype=torch.float16),
        QuantScheme(
            4, Mapping.ASYMMETRIC_FREE_ZERO, PerGroup(64), scale_floor=5e-5, output_dtype=torch.float16
        ),
        CodebookScheme(FP4, PerTensor(), scale_dtype=torch.bfloat16),
        CodebookScheme(NF4, PerBlock(64), output_dtype=torch.float16),
    ):
        assert check_kits.build_scheme(check_kits.parse_scheme(str(scheme))) == scheme, str(scheme)
    build = check_kits.build_pattern
    assert build(check_kits.parse_pattern("2:4")) == NM(2, 4)
    assert build(check_kits.parse_pattern("global")) == Unstructured(Scope.GLOBAL)
    assert build(check_kits.parse_pattern("columns:inf")) == Structured(1, float("inf"))
    assert check_kits.ROUNDINGS == tuple(r.name for r in Rounding)
    assert build(check_kits.parse_pattern("rows:2 rounding=kept_truncated keep_at_least=1")) == Structured(
        0, 2, rounding=Rounding.KEPT_TRUNCATED, keep_at_least=1
    )
    assert build(check_kits.parse_pattern("per-layer rounding=FLOOR")) == Unstructured(
        Scope.PER_LAYER, rounding=Rounding.FLOOR
    )


def test_a_file_named_like_a_loaded_module_does_not_shadow_it(user_folder, capsys):
    """``lib/json.py:rule`` loads the file under another name: the json
    module the command writes its output with stays the standard one."""
    (user_folder / "lib" / "json.py").write_text(
        "from aftertrain.checks import zoo\nrule = zoo.make_rule()\n"
    )
    assert cli.main(["check", "rule", "lib/json.py:rule", "--exact", "--n", "100", "--json", "--quiet"]) == 0
    assert [r["passed"] for r in json.loads(capsys.readouterr().out)] == [True, True]
    assert json.dumps is sys.modules["json"].dumps


def test_check_quantizer_judges_a_codebook_scheme(user_folder, capsys):
    """``--scheme 'NF4 PerGroup(64) input=float16'``: bitsandbytes' NF4 on a
    float16 copy, the kit's reference, passes (exit 0)."""
    (user_folder / "nf4_kit.py").write_text(
        "from aftertrain.checks.codebooks import quantize_codebook\n\n\n"
        "def nf4(w, scheme):\n    return quantize_codebook(w, scheme)\n"
    )
    argv = ["check", "quantizer", "nf4_kit:nf4", "--scheme", "NF4 PerGroup(64) input=float16", "--quiet"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.startswith("nf4: PASSED")
