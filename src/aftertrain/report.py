"""The claims report: every table of the articles beside ours, with plots.

Verdicts and figures both come from one pytest run of this project: the
claims ledger (:mod:`aftertrain.ledger`) gives each claim's verdict, and the
tests attach the tables they measured (``record_property("table:NAME",
rows)``), which the ledger writes into its ``--claims-json`` file. The report
never re-derives a verdict or re-measures a figure: it renders what the
tests found, beside the article's figures (:data:`aftertrain.claims.
ARTICLE_TABLES`), as ``report.md`` and PNG plots in one folder.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from aftertrain.claims import ARTICLE_TABLES as A
from aftertrain.claims import CLAIMS
from aftertrain.verdicts import BROKEN, DOES_NOT_REPRODUCE, HOLDS

UNTRAINED = math.log(100)
DASH = "–"

#: What ``--quick`` changes in the pytest run behind the report: the ``quick``
#: hypothesis profile (derandomized like ``ci``, 10 examples instead of 25) and timing with a third of
#: the pairs (``AFTERTRAIN_QUICK=1``, read by the benchmarks' ``record_paired``).
QUICK_ENV = {"HYPOTHESIS_PROFILE": "quick", "AFTERTRAIN_QUICK": "1"}


class ReportError(RuntimeError):
    """The claims ledger could not be produced or read."""


# --- the ledger -------------------------------------------------------------


@dataclass(frozen=True)
class Ledger:
    """Verdicts per claim ID, the figures the tests recorded, their tables."""

    verdicts: dict[str, str]
    measured: dict[str, list[str]]
    reasons: dict[str, list[str]]
    tables: dict[str, object]
    source: str

    @classmethod
    def from_json(cls, data: dict, source: str) -> "Ledger":
        if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
            raise ReportError(f"{source} is not a claims ledger (no 'claims' list)")
        verdicts, measured, reasons = {}, {}, {}
        try:
            for entry in data["claims"]:
                verdicts[entry["id"]] = entry["verdict"]
                measured[entry["id"]] = [str(m) for m in entry.get("measured", [])]
                reasons[entry["id"]] = [t["xfail_reason"] for t in entry.get("tests", [])
                                        if t.get("xfail_reason")]
        except (KeyError, TypeError, AttributeError) as err:
            raise ReportError(f"{source} has a malformed claim entry ({err!r})") from None
        if not isinstance(data.get("tables", {}), dict):
            raise ReportError(f"{source} has 'tables' that is not an object")
        unknown = sorted(set(verdicts) - set(CLAIMS))
        if unknown:
            raise ReportError(f"{source} names claims this version does not know: {unknown}")
        return cls(verdicts, measured, reasons, data.get("tables", {}), source)

    def verdict(self, claim_id: str) -> str:
        return self.verdicts.get(claim_id, "not covered")

    def table(self, name: str):
        return self.tables.get(name)


def read_ledger(path: str | os.PathLike) -> Ledger:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"claims ledger {path} does not exist") from None
    except json.JSONDecodeError as err:
        raise ReportError(f"claims ledger {path} is not valid JSON: {err}") from None
    return Ledger.from_json(data, str(path))


def default_checkout() -> Path | None:
    """The source checkout this package was installed from (editable
    install), if it has the project's tests; else None."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "tests").is_dir() else None


def run_ledger(checkout: Path, json_path: Path, quick: bool,
               log: Callable[[str], None]) -> Ledger:
    """Run the checkout's whole pytest suite, writing its ledger to ``json_path``.

    pytest's own progress streams to standard error as it runs.
    """
    if not (checkout / "pyproject.toml").is_file() or not (checkout / "tests").is_dir():
        raise ReportError(f"checkout must be an aftertrain source tree with tests/, got {checkout}")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
           "--claims-json", str(json_path)]
    env = {**os.environ, **(QUICK_ENV if quick else {})}
    log(f"running the claims' tests: {' '.join(cmd[1:])} (in {checkout})")
    proc = subprocess.run(cmd, cwd=checkout, env=env, stdout=sys.stderr, stderr=sys.stderr)
    if proc.returncode not in (0, 1) or not json_path.is_file():
        raise ReportError(f"pytest exited with status {proc.returncode} and wrote no ledger "
                          f"(an error outside the tests); run `python -m pytest` in {checkout}")
    return read_ledger(json_path)


# --- formatting ---------------------------------------------------------------


def fmt(x, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if isinstance(x, (int, float)):
        return f"{x:.{digits}f}"
    return str(x)


def pct(x, digits: int = 1) -> str:
    return DASH if x is None else f"{100 * x:.{digits}f}%"


def _cell(value) -> str:
    # A "|" inside a cell (max|w|) would end it; a newline would end the row.
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list[str], rows: Iterable[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


VERDICT_MARK = {HOLDS: "holds", DOES_NOT_REPRODUCE: "**does not reproduce**",
                BROKEN: "**BROKEN**", "skipped": "skipped", "not covered": "not covered"}


def verdict_cell(ledger: Ledger, *ids: str) -> str:
    return ", ".join(f"{i} {VERDICT_MARK.get(ledger.verdict(i), ledger.verdict(i))}" for i in ids)


# --- the report -------------------------------------------------------------


@dataclass
class Report:
    ledger: Ledger
    out: Path
    quick: bool
    parts: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text.strip("\n") + "\n")

    def table(self, title: str, claim_ids: tuple[str, ...], header: list[str], rows) -> None:
        self.add(f"**{title}** ({verdict_cell(self.ledger, *claim_ids)})\n\n"
                 + markdown_table(header, rows))

    def missing(self, name: str) -> None:
        self.add(f"*No figures for {name}: the test that measures them did not run "
                 f"or failed before recording them.*")

    def plot(self, name: str, draw: Callable) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8.6, 4.4), dpi=110)
        try:
            caption = draw(ax)
            ax.grid(alpha=0.3)
            # Legends go outside the axes, on the right, so they hide no data.
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
            fig.tight_layout()
            path = self.out / f"{name}.png"
            fig.savefig(path)
        finally:
            plt.close(fig)
        self.plots.append(path)
        self.add(f"![{caption}]({path.name})\n\n*{caption}*")


def claims_table(ledger: Ledger) -> str:
    """One row per claim: ID, the claim in a line, the article's figure,
    ours (as the tests recorded it), verdict."""
    rows = []
    for c in CLAIMS.values():
        ours = "; ".join(dict.fromkeys(ledger.measured.get(c.id, []))) or DASH  # each figure once
        rows.append([c.id, f"{c.title}: {c.statement}", c.article or DASH, ours,
                     VERDICT_MARK.get(ledger.verdict(c.id), ledger.verdict(c.id))])
    return markdown_table(["ID", "claim", "article", "ours", "verdict"], rows)


README_BEGIN = "<!-- claims table: written by `aftertrain report --update-readme` -->"
README_END = "<!-- end of claims table -->"


def update_readme(readme: Path, ledger: Ledger) -> None:
    """Replace the claims table between the README's markers with this
    ledger's (atomically); the markers must be there."""
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ReportError(f"{readme} has no claims-table markers ({README_BEGIN!r} ... {README_END!r})")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    _write_atomic(readme, head + README_BEGIN + "\n" + claims_table(ledger) + "\n" + README_END + tail)


def summary_counts(ledger: Ledger) -> dict[str, int]:
    counts: dict[str, int] = {}
    for cid in CLAIMS:
        v = ledger.verdict(cid)
        counts[v] = counts.get(v, 0) + 1
    return counts


def build(ledger: Ledger, out: str | os.PathLike, quick: bool = False,
          log: Callable[[str], None] = lambda s: None) -> Path:
    """Write ``report.md`` and its plots into ``out``; returns the report's path.

    Each file is written to a temporary name and renamed into place.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rep = Report(ledger, out, quick)
    counts = summary_counts(ledger)
    rep.add("# aftertrain claims report")
    rep.add(
        f"Verdicts and figures from the pytest run recorded in `{Path(ledger.source).name}`; "
        "the article's figures from `aftertrain.claims`. "
        + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) + "."
        + ("\n\n**Quick run**: the `quick` hypothesis profile and a third of the timing "
           "pairs; figures are a first look, not the committed measurement." if quick else "")
    )
    rep.add("## All claims\n\n" + claims_table(ledger))
    for title, section in SECTIONS:
        log(f"writing section: {title}")
        rep.add(f"## {title}")
        section(rep)
    nonrepro = [c for c in CLAIMS if ledger.verdict(c) == DOES_NOT_REPRODUCE]
    if nonrepro:
        rep.add("## What does not reproduce on our model")
        rep.add("\n".join(f"- **{c}** ({CLAIMS[c].title}): " + "; ".join(ledger.reasons[c] or
                          ledger.measured[c] or [DASH]) for c in nonrepro))
    path = out / "report.md"
    _write_atomic(path, "\n".join(rep.parts))
    return path


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes files private; a report is not
    os.replace(tmp, path)


# --- sections: one function per part of the series -----------------------------


def _baselines(rep: Report) -> None:
    b1 = rep.ledger.table("b1")
    if b1 is None:
        return rep.missing("B1")
    rep.table("Validation loss of the baselines (nats)", ("B1",), ["model", "article", "ours"],
              [[k, fmt(A["b1"][k]), fmt(b1[k])] for k in ("uniform", "bigram", "reference")])
    k1 = rep.ledger.table("k1")
    if k1 is not None:
        rep.table("Cached decoding against full recomputation", ("K1",),
                  ["", "article", "ours"],
                  [["largest logit difference", "9.06e-06", f"{k1['max_diff']:.2e}"]])


def _quantization(rep: Report) -> None:
    led = rep.ledger
    q4, b1 = led.table("q4"), led.table("b1")
    bits = q4["rows"] if q4 else None
    if bits is None:
        rep.missing("Q2/Q4")
    else:
        rows = [[r["bits"], fmt(A["q4"][r["bits"]][0]), fmt(r["per_tensor"]),
                 fmt(A["q4"][r["bits"]][1]), fmt(r["per_channel"])] for r in bits]
        rows.insert(0, ["float32", fmt(A["b1"]["reference"]), fmt(q4["float32"]),
                        fmt(A["b1"]["reference"]), fmt(q4["float32"])])
        rep.table("Validation loss by bit width", ("Q2", "Q4", "Q5", "Q6"),
                  ["bits", "per-tensor (article)", "per-tensor (ours)",
                   "per-channel (article)", "per-channel (ours)"], rows)

        def draw(ax):
            xs = [r["bits"] for r in bits]
            ax.plot(xs, [r["per_tensor"] for r in bits], "o-", label="per-tensor (ours)")
            ax.plot(xs, [r["per_channel"] for r in bits], "s-", label="per-channel (ours)")
            ax.plot(list(A["q4"]), [v[0] for v in A["q4"].values()], "o:", color="C0",
                    alpha=0.5, label="per-tensor (article)")
            ax.plot(list(A["q4"]), [v[1] for v in A["q4"].values()], "s:", color="C1",
                    alpha=0.5, label="per-channel (article)")
            ax.axhline(q4["float32"], color="k", lw=1, label="float32 (ours)")
            if b1:
                ax.axhline(b1["bigram"], color="gray", ls="--", lw=1, label="bigram (ours)")
            ax.axhline(UNTRAINED, color="r", ls=":", lw=1, label="untrained ln 100")
            ax.invert_xaxis()
            ax.set(xlabel="bits per weight", ylabel="validation loss (nats)",
                   title="Loss against bits (Q4)")
            return "Validation loss against bits, both granularities, with the float32 and bigram lines"

        rep.plot("quant_bits", draw)
    st = led.table("q3")
    if st is not None:
        mb = 2 ** 20
        pt = st["per-tensor_8"]
        rep.table("Storage of int8 (MB = 2^20 bytes; per-tensor scales)", ("Q3",),
                  ["", "article", "ours"],
                  [["2-D weights float32", f"{A['q3']['weights_fp32_mb']:.2f}",
                    f"{pt['weights_fp32_bytes'] / mb:.2f}"],
                   ["2-D weights int8", f"{A['q3']['weights_int8_mb']:.2f}",
                    f"{(pt['weight_code_bytes'] + pt['scale_bytes']) / mb:.2f}"],
                   ["all parameters float32", f"{A['q3']['parameters_fp32_mb']:.2f}",
                    f"{pt['parameters_fp32_bytes'] / mb:.2f}"],
                   ["all parameters int8", f"{A['q3']['parameters_int8_mb']:.2f}",
                    f"{pt['parameters_quantized_bytes'] / mb:.2f}"],
                   ["cut", pct(A["q3"]["cut"]),
                    pct(1 - pt["parameters_quantized_bytes"] / pt["parameters_fp32_bytes"])]])
    rec = led.table("q6")
    if rec is not None:
        rep.table("2 bits on blocks.0.f1: zeroed elements and mean absolute error", ("Q6",),
                  ["granularity", "zeroed (article)", "zeroed (ours)", "MAE (article)", "MAE (ours)"],
                  [[g, pct(A["q6"][g]["zero_fraction"]), pct(rec[g]["zero_fraction"]),
                    fmt(A["q6"][g]["mean_abs_error"]), fmt(rec[g]["mean_abs_error"])]
                   for g in ("per-tensor", "per-channel")])
    sens = led.table("q7")
    if sens is not None:
        rep.table("One matrix at a time at 4 bits (penalty in nats, most harmful first)", ("Q7",),
                  ["rank", "matrix", "article", "ours"],
                  [[i + 1, r["name"], fmt(A["q7"].get(r["name"])), f"{r['penalty']:+.4f}"]
                   for i, r in enumerate(sens)])

        def draw_sens(ax):
            names = [r["name"].replace(".weight", "") for r in sens]
            ys = range(len(sens))
            ax.barh([y + 0.2 for y in ys], [r["penalty"] for r in sens], height=0.4, label="ours")
            ax.barh([y - 0.2 for y in ys], [A["q7"].get(r["name"], float("nan")) for r in sens],
                    height=0.4, label="article (where published)")
            ax.set_yticks(list(ys), names, fontsize=7)
            ax.invert_yaxis()
            ax.set(xlabel="loss penalty at 4 bits (nats)", title="4-bit sensitivity (Q7)")
            return "4-bit sensitivity: loss penalty of quantizing one matrix at a time"

        rep.plot("quant_sensitivity", draw_sens)
    comp = led.table("q8")
    if comp is not None:
        rep.table("Penalties compound at 4 bits", ("Q8",), ["", "article", "ours"],
                  [["sum of one-at-a-time penalties", f"{A['q8']['sum_of_penalties']:+.4f}",
                    f"{comp['sum_of_penalties']:+.4f}"],
                   ["all at once", f"{A['q8']['all_at_once']:+.4f}", f"{comp['all_at_once']:+.4f}"]])
    div = led.table("q9")
    if div is not None:
        rep.table("Same seed, float32 against int8 text", ("Q9",), ["", "article", "ours"],
                  [["first differing character", A["q9"]["position"], div["position"]]])
        end = (div["position"] or len(div["float32"])) + 20
        rep.add("```\nfloat32: " + repr(div["float32"][:end]) + "\nint8:    "
                + repr(div["quantized"][:end]) + "\n```")
    out = led.table("q10")
    if out is not None:
        w, acts = out["weights"], out["activations"]
        rows = [["weight range max/median, worst matrix", fmt(A["q10"]["worst"], 2), fmt(w["worst"], 2)],
                ["weight range max/median, median matrix", fmt(A["q10"]["median"], 2), fmt(w["median"], 2)]]
        for site in ("block0_ffn_input", "block2_ffn_input", "final_residual"):
            ratio, peak = A["q10"][site]
            rows.append([f"activation {site} max/median (max)", f"{ratio:.2f} ({peak:.2f})",
                         f"{acts[site]['ratio']:.2f} ({acts[site]['max']:.2f})"])
        rows.append(["int8 loss, per-tensor minus per-channel", fmt(A["q10"]["int8_granularity_gap"]),
                     fmt(out["int8_granularity_gap"])])
        rep.table("No outlier channels", ("Q10",), ["", "article", "ours"], rows)
    speed = led.table("q11")
    if speed is not None:
        rep.table("Fake-quantized forward against float32 (time ratio)", ("Q11",),
                  ["", "ours: median [interval]"],
                  [["fake-quantized / float32", _ratio_cell(speed)]])
    x3 = led.table("x3")
    if x3 is not None:
        sizes = sorted(int(r) for r in x3 if r != "crossover_rows")
        rep.table("Dynamic int8 Linear against float32 (time ratio, below 1 = int8 faster)",
                  ("X3",), ["rows multiplied at once", "ours: median [interval]"],
                  [[r, _ratio_cell(x3[str(r)] if str(r) in x3 else x3[r])] for r in sizes])
        rep.add(f"int8 arithmetic starts to pay at: {x3.get('crossover_rows') or 'no size up to 1024'} rows")


def _ratio_cell(r: dict) -> str:
    low, high = r["ci"] if "ci" in r else (r["ci_low"], r["ci_high"])
    return f"{r['median']:.3f} [{low:.3f}, {high:.3f}]"


def _pruning(rep: Report) -> None:
    led = rep.ledger
    p1, b1 = led.table("p1"), led.table("b1")
    if p1 is None:
        rep.missing("P1")
    else:
        rep.table("Validation loss by sparsity (global / per-layer magnitude / random)", ("P1", "P3"),
                  ["sparsity", "global (article / ours)", "per-layer (article / ours)",
                   "random (article / ours)"],
                  [[pct(r["sparsity"], 0)] + [f"{fmt(A['p1'][r['sparsity']][i])} / {fmt(r[k])}"
                                              for i, k in enumerate(("global", "layer", "random"))]
                   for r in p1])

        def draw(ax):
            xs = [100 * r["sparsity"] for r in p1]
            for i, (k, label) in enumerate((("global", "global magnitude"),
                                            ("layer", "per-layer magnitude"),
                                            ("random", "random"))):
                ax.plot(xs, [r[k] for r in p1], "o-", color=f"C{i}", label=f"{label} (ours)")
                ax.plot([100 * s for s in A["p1"]], [v[i] for v in A["p1"].values()], "o:",
                        color=f"C{i}", alpha=0.5, label=f"{label} (article)")
            if b1:
                ax.axhline(b1["bigram"], color="gray", ls="--", lw=1, label="bigram (ours)")
                ax.axhline(b1["reference"], color="k", lw=1, label="unpruned (ours)")
            ax.axhline(UNTRAINED, color="r", ls=":", lw=1, label="untrained ln 100")
            ax.set(xlabel="sparsity of the 2-D weights (%)", ylabel="validation loss (nats)",
                   title="Loss against sparsity (P1)")
            return "Validation loss against sparsity for the three pruning methods"

        rep.plot("prune_sparsity", draw)
    p2 = led.table("p2")
    if p2 is not None:
        rep.table("Random pruning (mean over seeds)", ("P2",),
                  ["sparsity", "article", "ours (mean)", "ours (min~max)"],
                  [[pct(r["sparsity"], 0), fmt(A["p2"].get(round(r["sparsity"], 2))),
                    fmt(r["mean"]), f"{fmt(r['min'])}~{fmt(r['max'])}"] for r in p2])
    p4 = led.table("p4")
    if p4 is not None:
        rep.table("Global-magnitude sparsity with the loss of per-channel quantization", ("P4",),
                  ["bits", "article", "ours", "our quantized loss"],
                  [[r["bits"], pct(A["p4"][r["bits"]]), pct(r["sparsity"]), fmt(r["loss"])]
                   for r in p4])
    p5 = led.table("p5")
    if p5 is not None:
        rows = [["dense float32", "4.00", fmt(p5[0]["dense"], 2), "", ""], ["int8", "1.00", "1.00", "", ""]]
        rows += [[pct(r["sparsity"], 0) + " sparse", "", "",
                  f"{A['p5'][r['sparsity']][0]:.2f} / {A['p5'][r['sparsity']][1]:.2f}",
                  f"{r['coo']:.3f} / {r['bitmask']:.3f}"] for r in p5 if r["sparsity"] in A["p5"]]
        rep.table("Bytes per element", ("P5",),
                  ["storage", "dense (article)", "dense (ours)", "COO / bitmask (article)",
                   "COO / bitmask (ours)"], rows)

        def draw_bytes(ax):
            s = [i / 1000 for i in range(0, 1000)]
            ax.plot([100 * x for x in s], [8 * (1 - x) for x in s], label="COO: 8(1-s)")
            ax.plot([100 * x for x in s], [4 * (1 - x) + 1 / 8 for x in s],
                    label="bitmask: 4(1-s) + 1/8")
            ax.axhline(1.0, color="C2", label="int8 dense")
            ax.axhline(4.0, color="k", lw=1, label="float32 dense")
            ax.plot([100 * r["sparsity"] for r in p5], [r["coo"] for r in p5], "o", color="C0",
                    label="COO measured")
            ax.plot([100 * r["sparsity"] for r in p5], [r["bitmask"] for r in p5], "s",
                    color="C1", label="bitmask measured")
            ax.axvline(96.875, color="gray", ls=":", lw=1)
            ax.set(xlabel="sparsity (%)", ylabel="bytes per element",
                   title="Storage against sparsity (P5)")
            return "Bytes per element against sparsity for COO, bitmask and int8 (they cross at 96.875%)"

        rep.plot("prune_bytes", draw_bytes)
    p6 = led.table("p6")
    if p6 is not None:
        art = list(A["p6"].values())
        rep.table("At equal size: int8 against sparse bitmask storage", ("P6",),
                  ["", "compression (article / ours)", "loss (article / ours)"],
                  [[r["name"], f"{art[i][0]:.2f}x / {r['compression']:.2f}x",
                    f"{fmt(art[i][1])} / {fmt(r['loss'])}"] for i, r in enumerate(p6)])
    p7 = [led.table(f"p7_{s}") for s in (0.5, 0.9, 0.99) if led.table(f"p7_{s}") is not None]
    if p7:
        rep.table("Dense (128x128)@(128x512) with zeros against the original (time ratio)", ("P7",),
                  ["zeros", "article: median (quartiles)", "ours: median [interval]"],
                  [[pct(r["sparsity"], 0),
                    "{:.3f} ({:.3f}~{:.3f})".format(*A["p7"][r["sparsity"]]) if r["sparsity"] in A["p7"] else DASH,
                    _ratio_cell(r)] for r in p7])
    x4 = led.table("x4")
    if x4 is not None:
        rep.table("CSR sparse matmul against dense (time ratio, below 1 = sparse faster)", ("X4",),
                  ["sparsity", "ours: median [interval]"],
                  [[pct(r["sparsity"]), _ratio_cell(r)] for r in x4["rows"]])
        rep.add(f"CSR starts to pay at: {pct(x4['crossover']) if x4['crossover'] else 'no sparsity tried'}")
    x5 = led.table("x5")
    if x5 is not None:
        rep.table("2:4 structured pruning against unstructured 50%", ("P8", "X5"), ["", "ours"],
                  [["loss, 2:4", fmt(x5["two_four"])], ["loss, global 50%", fmt(x5["global_50"])],
                   ["loss, per-layer 50%", fmt(x5["layer_50"])],
                   ["bytes per element, 2:4 storage", fmt(x5["bytes_two_four"], 3)],
                   ["bytes per element, bitmask", fmt(x5["bytes_bitmask"], 3)],
                   ["bytes per element, COO", fmt(x5["bytes_coo"], 3)]])


def _speculative(rep: Report) -> None:
    led = rep.ledger
    s2 = led.table("spec_first_token")
    if s2 is not None:
        rows = [[f"speculative, {r['draft']} draft", fmt(A["s2"].get(r["draft"])), fmt(r["tv"]),
                 f"{r['chi2_pvalue']:.3g}"] for r in s2]
        rows.append(["direct sampling (one draw)", fmt(A["s2"]["direct"]), fmt(s2[0]["direct_tv"]), DASH])
        rep.table("TV distance of 20,000 first characters to the target's law", ("S2",),
                  ["sampler", "article", "ours", "chi-square p"], rows)
        rep.add(f"Same-sample-size baseline (direct sampling, simulated): median "
                f"{s2[0]['null_median']:.4f}, 99% quantile {s2[0]['null_q99']:.4f}; "
                f"alarm threshold at alpha 1e-6: {s2[0]['tv_threshold']:.4f}.")
    s4 = led.table("spec_acceptance")
    if s4 is None:
        rep.missing("S4")
    else:
        rows = []
        for r in s4:
            art = A["s4"].get((r["draft"], r["k"]))
            a = (lambda i, f: f.format(art[i]) if art else DASH)
            rows.append([r["draft"], r["k"], a(0, "{:.3f}"), f"{r['acceptance']:.3f}",
                         f"{r['predicted_acceptance']:.3f}", a(1, "{:.2f}"),
                         f"{r['chars_per_pass']:.2f}", a(2, "{}"), r["target_passes"]])
        rep.table("Acceptance follows draft quality (200 characters, seed fixed)", ("S4", "S8", "X1"),
                  ["draft", "k", "acceptance (article)", "acceptance (ours)",
                   "X1 prediction from k=1 (ours)", "chars/pass (article)", "chars/pass (ours)",
                   "target passes (article)", "target passes (ours)"], rows)

        def draw(ax):
            drafts = list(dict.fromkeys(r["draft"] for r in s4))
            for i, d in enumerate(drafts):
                rs = [r for r in s4 if r["draft"] == d]
                ax.plot([r["k"] for r in rs], [r["acceptance"] for r in rs], "o-", color=f"C{i}",
                        label=f"{d} (ours)")
                ax.plot([r["k"] for r in rs], [r["predicted_acceptance"] for r in rs], ":",
                        color=f"C{i}", label=f"{d} X1 prediction")
                _article_points(ax, A["s4"], d, f"C{i}")
            ax.set_xscale("log", base=2)
            ax.set(xlabel="draft length k", ylabel="acceptance rate (accepted / drafted)",
                   title="Acceptance against k (S4, X1)")
            return "Acceptance rate against k per draft, with the X1 prediction a(1-a^k)/(k(1-a))"

        rep.plot("spec_acceptance", draw)
    x1 = led.table("spec_x1")
    if x1 is not None:
        rep.table("Acceptance at k=8 predicted from k=1 (1,000-character runs)", ("X1",),
                  ["draft", "k=1", "predicted at k=8", "measured at k=8",
                   "article: k=1 / predicted / measured"],
                  [[d, f"{rs[0]['acceptance']:.3f}", f"{rs[-1]['predicted_acceptance']:.3f}",
                    f"{rs[-1]['acceptance']:.3f}",
                    "{:.3f} / {:.3f} / {:.3f}".format(*A["x1"][d]) if d in A["x1"] else DASH]
                   for d, rs in _by_draft(x1).items()])
    s5 = led.table("spec_draft_cost")
    if s5 is not None:
        rep.table("Cost c of one draft character relative to one target step", ("S5",),
                  ["draft", "article: us (c)", "ours: us", "ours: c [interval]"],
                  [[r["draft"], "{} ({:.3f})".format(*A["s5"][r["draft"]]) if r["draft"] in A["s5"] else DASH,
                    f"{r['draft_us']:.0f}", f"{r['c']:.3f} [{r['c_low']:.3f}, {r['c_high']:.3f}]"]
                   for r in s5])
        rep.add(f"One plain target step (ours): {s5[0]['target_us']:.0f} us; the article's: "
                f"{A['s5']['target_us']} us.")
    x8 = led.table("spec_verify_cost")
    if x8 is not None:
        art_base = A["x8"][1]
        rep.table("Verification pass over k+1 positions against one plain step", ("X8",),
                  ["k", "article (ms ratio to 1 position)", "ours: v_k [interval]"],
                  [[r["k"], f"{A['x8'][r['k'] + 1] / art_base:.2f}" if r["k"] + 1 in A["x8"] else DASH,
                    f"{r['v_k']:.3f} [{r['v_low']:.3f}, {r['v_high']:.3f}]"] for r in x8])
    s6 = led.table("spec_speedup")
    if s6 is None:
        rep.missing("S6/S7")
    else:
        rows = []
        for r in s6:
            art6 = A["s6"].get((r["draft"], r["k"]))
            art7 = A["s7"].get((r["draft"], r["k"]))
            rows.append([r["draft"], r["k"],
                         "{:.2f} ({:.2f}~{:.2f})".format(*art6) if art6 else DASH,
                         f"{r['speedup']:.2f} ({r['speedup_min']:.2f}~{r['speedup_max']:.2f})",
                         f"{art7[0]:.2f}" if art7 else DASH,
                         f"{r['predicted']:.2f}", f"{r['predicted_vk']:.2f}"])
        rep.table("Speedup over plain cached decoding (median of alternating pairs, min~max)",
                  ("S6", "S7", "X8", "X2"),
                  ["draft", "k", "article", "ours", "article's prediction",
                   "ours: (chars/pass)/(1+kc)", "ours: (chars/pass)/(v_k+kc)"], rows)
        best = max(s6, key=lambda r: r["speedup"])
        rep.add(f"Best draft (X2): {best['draft']} at k={best['k']}, speedup {best['speedup']:.2f} "
                f"({best['speedup_min']:.2f}~{best['speedup_max']:.2f}); predicted "
                f"{best['predicted']:.2f} by the article's formula, {best['predicted_vk']:.2f} "
                f"with the measured verification cost.")

        def draw(ax):
            for i, (d, rs) in enumerate(_by_draft(s6).items()):
                ks = [r["k"] for r in rs]
                ax.plot(ks, [r["speedup"] for r in rs], "o-", color=f"C{i}", label=f"{d} measured")
                ax.fill_between(ks, [r["speedup_min"] for r in rs], [r["speedup_max"] for r in rs],
                                color=f"C{i}", alpha=0.15)
                ax.plot(ks, [r["predicted_vk"] for r in rs], ":", color=f"C{i}",
                        label=f"{d} predicted (v_k)")
                _article_points(ax, A["s6"], d, f"C{i}")
            ax.axhline(1.0, color="k", lw=1)
            ax.set_xscale("log", base=2)
            ax.set(xlabel="draft length k", ylabel="speedup over plain decoding (x)",
                   title="Speedup against k (S6, S7, X8, X2)")
            return ("Speedup against k per draft: median of alternating pairs, min~max band, "
                    "and the prediction with the measured verification cost")

        rep.plot("spec_speedup", draw)


def _article_points(ax, table: dict, draft: str, color: str) -> None:
    """The article's first figure per k for ``draft`` (tables keyed (draft, k)), as crosses."""
    points = sorted((k, v[0]) for (d, k), v in table.items() if d == draft)
    if points:
        ax.plot(*zip(*points), "x", color=color, ms=9, label=f"{draft} (article)")


def _by_draft(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: r["k"]):
        out.setdefault(r["draft"], []).append(r)
    return out


SECTIONS: list[tuple[str, Callable[[Report], None]]] = [
    ("Baselines (B1, K1)", _baselines),
    ("Quantization (part 3)", _quantization),
    ("Pruning (part 8)", _pruning),
    ("Speculative decoding (part 4)", _speculative),
]


def main(args) -> int:
    """``aftertrain report``: see :func:`aftertrain.cli.build_parser`."""
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[report {time.perf_counter() - t0:5.0f}s] {msg}", file=sys.stderr, flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.claims_json:
        ledger = read_ledger(args.claims_json)
        log(f"read the claims ledger {args.claims_json}")
    else:
        checkout = Path(args.checkout) if args.checkout else default_checkout()
        if checkout is None:
            raise ReportError("no checkout to run the tests in: give --checkout PATH (an aftertrain "
                              "source tree) or --claims-json FILE (from `pytest --claims-json FILE`)")
        ledger = run_ledger(checkout.resolve(), (out / "claims.json").resolve(), args.quick, log)
    path = build(ledger, out, args.quick, log)
    if args.update_readme:
        checkout = Path(args.checkout) if args.checkout else default_checkout()
        if checkout is None:
            raise ReportError("--update-readme needs a checkout (--checkout PATH)")
        update_readme(checkout / "README.md", ledger)
        log(f"updated the claims table of {checkout / 'README.md'}")
    counts = summary_counts(ledger)
    log(f"wrote {path} and {len(list(out.glob('*.png')))} plots")
    print(f"{path}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    return 1 if counts.get(BROKEN) else 0
