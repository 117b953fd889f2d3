"""The run's metadata: the report's header says when, where and on what the
claims were measured (date, commit, CPU, torch, threads, load, model).

From the ledger's ``"meta"`` when it has one; otherwise taken by
``aftertrain report`` when it starts the run itself, or (a ledger from
elsewhere without metadata) taken at render time and labelled so.
"""

from __future__ import annotations

from pathlib import Path

from aftertrain.core import runmeta
from aftertrain.report.reading import META_FROM_LEDGER, META_FROM_REPORT_RUN, LedgerFile

BEGIN = "<!-- run metadata -->"
END = "<!-- end of run metadata -->"


def collect_for_model(checkout: Path | None, model: str | None = None) -> dict:
    """The metadata of this machine now (:func:`aftertrain.core.runmeta.collect`),
    for ``model`` (a bundled name or checkpoint path; its recorded SHA-256
    when it can be read)."""
    from aftertrain.lm import registry as _models

    sha = None
    if model is not None:
        try:
            sha = _models.model_meta(model).get("sha256")
        except (OSError, ValueError):
            sha = None
    return runmeta.collect(checkout, model=model, model_sha256=sha, quick=False)


def header(ledger: LedgerFile, checkout: Path | None) -> str:
    """The metadata block of the report, between :data:`BEGIN` and :data:`END`."""
    if ledger.meta_source == META_FROM_LEDGER:
        meta, source = ledger.meta, "recorded in the ledger by the test run"
    elif ledger.meta_source == META_FROM_REPORT_RUN:
        meta, source = ledger.meta, "taken by `aftertrain report` as it started the test run"
    else:
        meta = collect_for_model(checkout)
        source = (
            "**taken at render time**: the ledger carries no run metadata, so these "
            "describe the machine that rendered this report, not necessarily the run"
        )

    def known(key: str) -> object:
        value = meta.get(key)
        return "unknown" if value is None else value

    quick = meta.get("quick")
    kind = {True: "quick run", False: "full run"}.get(quick, "run kind not recorded")
    sha = str(known("model_sha256"))[:16]
    load = meta.get("load1")
    fields = [
        f"date {known('date')}",
        f"commit {known('commit')}",
        f"CPU {known('cpu')}",
        f"torch {known('torch')}",
        f"{known('threads')} torch thread(s)",
        f"load {'unknown' if load is None else f'{load:.2f}'} (1-minute average)",
        f"model {known('model')} (sha256 {sha}…)",
        kind,
    ]
    return f"{BEGIN}\n**Run**: " + " · ".join(fields) + f" ({source}).\n{END}"


def strip_header(markdown: str) -> str:
    """``markdown`` without its metadata block (what varies between renders of
    one ledger without metadata)."""
    if BEGIN not in markdown or END not in markdown:
        return markdown
    head, rest = markdown.split(BEGIN, 1)
    return head + rest.split(END, 1)[1]
