"""The command line on a user's mistakes: one line on standard error that
names the bad value and what is allowed, exit status 2, no traceback, and
nothing long started first (no training, no test run, no sampling).

One case per (subcommand, bad input). Paths in a case are templates filled
from the ``paths`` fixture ({tmp}, {file}, {plain}...).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

import pytest
import torch

from aftertrain import cli
from aftertrain.lm import decoding as _decoding
from aftertrain.lm.checkpoint import reference_path

ROOT = Path(__file__).resolve().parents[2]
LEDGER = str(ROOT / "report" / "claims.json")


def _with_meta(path: Path, blob: bytes, meta: dict | None = None) -> str:
    path.write_bytes(blob)
    sha = hashlib.sha256(blob).hexdigest()
    Path(f"{path}.json").write_text(json.dumps({"sha256": sha, **(meta or {})}))
    return str(path)


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "a_file").write_text("not a folder\n")
    (tmp / "empty_dir").mkdir()
    (tmp / "not_json.json").write_text("{ not json")
    (tmp / "binary.json").write_bytes(b"\xff\xfe\x00\x01\x80")
    (tmp / "not_ledger.json").write_text(json.dumps({"something": 1}))
    (tmp / "list.json").write_text("[]")
    (tmp / "unknown_claim.json").write_text(
        json.dumps({"format": 2, "claims": [{"id": "Z99", "verdict": "holds"}], "tables": {}})
    )
    (tmp / "unknown_verdict.json").write_text(
        json.dumps({"format": 2, "claims": [{"id": "Q2", "verdict": "mostly"}], "tables": {}})
    )
    (tmp / "no_verdict.json").write_text(json.dumps({"format": 2, "claims": [{"id": "Q2"}], "tables": {}}))
    (tmp / "bad_tables.json").write_text(json.dumps({"format": 2, "claims": [], "tables": [1, 2]}))
    (tmp / "bad_meta.json").write_text(json.dumps({"format": 2, "claims": [], "tables": {}, "meta": "today"}))
    ledger = json.loads(Path(LEDGER).read_text())
    q2 = next(c for c in ledger["claims"] if c["id"] == "Q2")
    (tmp / "q2_twice.json").write_text(
        json.dumps({**ledger, "claims": [*ledger["claims"], {**q2, "verdict": "broken"}]})
    )
    row = ledger["tables"]["q4"]["rows"][0]
    (tmp / "nan_figure.json").write_text(
        json.dumps(ledger).replace(f'"per_tensor": {row["per_tensor"]}', '"per_tensor": NaN', 1)
    )
    for name, bad in (
        ("row_missing_a_field.json", {}),
        ("row_with_a_text_figure.json", {"per_tensor": "low"}),
    ):
        rows = [
            {k: v for k, v in row.items() if k != "per_tensor"} | bad,
            *ledger["tables"]["q4"]["rows"][1:],
        ]
        tables = {**ledger["tables"], "q4": {**ledger["tables"]["q4"], "rows": rows}}
        (tmp / name).write_text(json.dumps({**ledger, "tables": tables}))
    (tmp / "table_not_rows.json").write_text(
        json.dumps({**ledger, "tables": {**ledger["tables"], "b1": [1, 2]}})
    )
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    os.symlink(tmp / "loop.json", tmp / "loop.json")
    os.mkfifo(tmp / "pipe.json")
    (tmp / "nan_sweep.json").write_text(
        re.sub(
            r'"val_loss": [-+.0-9e]+',
            '"val_loss": NaN',
            (ROOT / "report" / "sweep.json").read_text(),
            count=1,
        )
    )
    state = torch.load(reference_path(), map_location="cpu", weights_only=True)
    buf = tmp / "buf.pt"
    torch.save(state["state_dict"], buf)
    plain = _with_meta(tmp / "plain.pt", buf.read_bytes())
    cfg = dict(state["config"], n_embd=state["config"]["n_embd"] * 2)
    torch.save({"config": cfg, "state_dict": state["state_dict"]}, buf)
    wrong = _with_meta(tmp / "wrong_shape.pt", buf.read_bytes())
    garbage = _with_meta(tmp / "garbage.pt", b"this is not a torch file")
    (tmp / "bad_meta.pt").write_bytes(b"x")
    Path(f"{tmp / 'bad_meta.pt'}.json").write_text("{ not json")
    (tmp / "list_meta.pt").write_bytes(b"x")
    Path(f"{tmp / 'list_meta.pt'}.json").write_text("[]")
    (tmp / "corrupt.pt").write_bytes(b"x")
    Path(f"{tmp / 'corrupt.pt'}.json").write_text(json.dumps({"sha256": "0" * 64}))
    locked = tmp / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    return {
        "tmp": str(tmp),
        "file": str(tmp / "a_file"),
        "dir": str(tmp / "empty_dir"),
        "plain": plain,
        "wrong": wrong,
        "garbage": garbage,
        "locked": str(locked),
        "ledger": LEDGER,
    }


@pytest.fixture(autouse=True)
def no_long_work(monkeypatch):
    """A mistake must be found before training, testing or sampling starts."""

    def refuse(*a, **k):
        raise AssertionError("long work started before the mistake was reported")

    from aftertrain.lm import train as _train

    monkeypatch.setattr(_train, "train", refuse)
    monkeypatch.setattr("aftertrain.cli.suite.run_ledger", refuse)
    monkeypatch.setattr(_decoding, "sample_text", refuse)


CASES = [
    # (id, argv template, a fragment the message must contain)
    ("no-command", [], "required"),
    ("unknown-command", ["bogus"], "'bogus'"),
    ("unknown-flag", ["sample", "--bogus"], "--bogus"),
    # report
    ("report-out-is-file", ["report", "--out", "{file}"], "{file} is a file"),
    ("report-out-under-file", ["report", "--out", "{file}/sub"], "is a file"),
    ("report-out-unwritable", ["report", "--out", "{locked}/sub"], "not writable"),
    ("report-ledger-missing", ["report", "--claims-json", "{tmp}/missing.json"], "does not exist"),
    ("report-ledger-folder", ["report", "--claims-json", "{dir}"], "is a folder"),
    ("report-ledger-not-json", ["report", "--claims-json", "{tmp}/not_json.json"], "not valid JSON"),
    ("report-ledger-binary", ["report", "--claims-json", "{tmp}/binary.json"], "not a text file"),
    ("report-ledger-not-ledger", ["report", "--claims-json", "{tmp}/not_ledger.json"], "not a claims ledger"),
    ("report-ledger-list", ["report", "--claims-json", "{tmp}/list.json"], "not a claims ledger"),
    ("report-ledger-unknown-claim", ["report", "--claims-json", "{tmp}/unknown_claim.json"], "Z99"),
    ("report-ledger-unknown-verdict", ["report", "--claims-json", "{tmp}/unknown_verdict.json"], "'mostly'"),
    (
        "report-ledger-no-verdict",
        ["report", "--claims-json", "{tmp}/no_verdict.json"],
        "claim entry 0 has no verdict",
    ),
    ("report-ledger-bad-tables", ["report", "--claims-json", "{tmp}/bad_tables.json"], "'tables'"),
    ("report-ledger-bad-meta", ["report", "--claims-json", "{tmp}/bad_meta.json"], "'meta'"),
    (
        "report-ledger-a-claim-twice",
        ["report", "--claims-json", "{tmp}/q2_twice.json"],
        "more than one entry for Q2 (Q2: holds, broken)",
    ),
    ("report-ledger-nan-figure", ["report", "--claims-json", "{tmp}/nan_figure.json"], "NaN, not finite"),
    (
        "report-ledger-row-missing-a-field",
        ["report", "--claims-json", "{tmp}/row_missing_a_field.json"],
        "table 'q4' is malformed: data is not a BitsRow record: missing ['per_tensor']",
    ),
    (
        "report-ledger-row-with-a-text-figure",
        ["report", "--claims-json", "{tmp}/row_with_a_text_figure.json"],
        "table 'q4' is malformed: BitsRow.per_tensor must be a finite number, got 'low'",
    ),
    ("report-ledger-table-not-rows", ["report", "--claims-json", "{tmp}/table_not_rows.json"], "table 'b1'"),
    ("report-ledger-deep", ["report", "--claims-json", "{tmp}/deep.json"], "nested more than 32 deep"),
    ("report-ledger-link-loop", ["report", "--claims-json", "{tmp}/loop.json"], "symbolic link loop"),
    ("report-ledger-pipe", ["report", "--claims-json", "{tmp}/pipe.json"], "is a named pipe"),
    ("report-ledger-device", ["report", "--claims-json", "/dev/zero"], "/dev/zero is a device"),
    ("sweep-ledger-pipe", ["sweep", "--claims-json", "{tmp}/pipe.json"], "is a named pipe"),
    ("report-sweep-nan-val-loss", ["report", "--sweep", "{tmp}/nan_sweep.json"], "NaN, not finite"),
    (
        "report-sweep-pipe",
        ["report", "--sweep", "{tmp}/pipe.json"],
        "sweep file {tmp}/pipe.json is a named pipe",
    ),
    ("sweep-reuse-pipe", ["sweep", "--reuse", "{tmp}/pipe.json", "--out", "{tmp}/o7"], "is a named pipe"),
    ("sweep-ledger-a-claim-twice", ["sweep", "--claims-json", "{tmp}/q2_twice.json"], "more than one entry"),
    (
        "report-quick-with-ledger",
        ["report", "--quick", "--claims-json", "{ledger}", "--out", "{tmp}/q"],
        "--quick",
    ),
    ("report-checkout-missing", ["report", "--checkout", "{tmp}/nowhere"], "{tmp}/nowhere"),
    ("report-checkout-no-tests", ["report", "--checkout", "{dir}"], "not an aftertrain source tree"),
    ("report-checkout-is-file", ["report", "--checkout", "{file}"], "not an aftertrain source tree"),
    (
        "report-checkout-bad-with-ledger",
        ["report", "--checkout", "{dir}", "--claims-json", "{ledger}", "--update-committed"],
        "not an aftertrain source tree",
    ),
    ("report-out-and-committed", ["report", "--out", "{tmp}/o", "--update-committed"], "not allowed with"),
    ("report-ledger-no-value", ["report", "--claims-json"], "expected one argument"),
    ("report-extra-argument", ["report", "extra"], "extra"),
    # train: every value checked before training starts
    ("train-steps-zero", ["train", "--steps", "0"], "from 1 to"),
    ("train-steps-negative", ["train", "--steps", "-5"], "-5"),
    ("train-steps-word", ["train", "--steps", "many"], "'many'"),
    ("train-steps-fraction", ["train", "--steps", "1.5"], "'1.5'"),
    ("train-steps-huge", ["train", "--steps", "10000000000"], "10000000000"),
    ("train-seed-negative", ["train", "--seed", "-1"], "from 0 to"),
    ("train-seed-word", ["train", "--seed", "x"], "'x'"),
    ("train-threads-zero", ["train", "--threads", "0"], "from 1 to 256"),
    ("train-threads-huge", ["train", "--threads", "1000"], "1000"),
    ("train-eval-every-zero", ["train", "--eval-every", "0"], "from 1 to"),
    ("train-out-folder", ["train", "--out", "{dir}"], "is a folder"),
    ("train-out-trailing-slash", ["train", "--out", "{tmp}/new/"], "is a folder"),
    ("train-out-empty", ["train", "--out", ""], "give a file name"),
    ("train-out-missing-folder", ["train", "--out", "{tmp}/nowhere/model.pt"], "does not exist"),
    ("train-out-under-file", ["train", "--out", "{file}/model.pt"], "not a folder"),
    ("train-out-unwritable", ["train", "--out", "{locked}/model.pt"], "not writable"),
    ("train-draft-steps-zero", ["train", "--draft", "--steps", "0"], "from 1 to"),
    # sample
    (
        "sample-k-without-draft",
        ["sample", "--k", "8"],
        "--k 8 applies only with --draft (characters drafted per round); give --draft NAME or leave --k out",
    ),
    ("sample-length-negative", ["sample", "--length", "-1"], "from 0 to 2000"),
    ("sample-length-word", ["sample", "--length", "abc"], "'abc'"),
    ("sample-length-huge", ["sample", "--length", "100000000"], "100000000"),
    ("sample-length-fraction", ["sample", "--length", "2.5"], "'2.5'"),
    ("sample-temperature-negative", ["sample", "--temperature", "-1"], ">= 0"),
    ("report-jobs-zero", ["report", "--jobs", "0"], "--jobs must be a whole number >= 1"),
    ("report-jobs-word", ["report", "--jobs", "two"], "'two'"),
    ("sample-temperature-nan", ["sample", "--temperature", "nan"], "nan"),
    ("sample-temperature-inf", ["sample", "--temperature", "inf"], "inf"),
    ("sample-temperature-word", ["sample", "--temperature", "hot"], "'hot'"),
    ("sample-seed-negative", ["sample", "--seed", "-3"], "-3"),
    ("sample-prompt-outside-vocabulary", ["sample", "--prompt", "é"], "'é'"),
    ("sample-prompt-empty", ["sample", "--prompt", ""], "at least one character"),
    ("sample-checkpoint-missing", ["sample", "--checkpoint", "{tmp}/none.pt"], "does not exist"),
    ("sample-checkpoint-folder", ["sample", "--checkpoint", "{dir}"], "is a folder"),
    (
        "sample-checkpoint-plain-state-dict",
        ["sample", "--checkpoint", "{plain}"],
        "not an aftertrain checkpoint",
    ),
    ("sample-checkpoint-wrong-shape", ["sample", "--checkpoint", "{wrong}"], "not an aftertrain checkpoint"),
    ("sample-checkpoint-garbage", ["sample", "--checkpoint", "{garbage}"], "not an aftertrain checkpoint"),
    (
        "sample-checkpoint-meta-not-json",
        ["sample", "--checkpoint", "{tmp}/bad_meta.pt"],
        "not an aftertrain checkpoint",
    ),
    ("sample-checkpoint-corrupt", ["sample", "--checkpoint", "{tmp}/corrupt.pt"], "corrupted"),
    ("sample-checkpoint-no-metadata", ["sample", "--checkpoint", "{file}"], ".json is missing"),
    # inputs that once failed silently or obscurely
    (
        "train-stop-at-past-steps",
        ["train", "--stop-at", "999", "--steps", "10"],
        "--stop-at must be at most the steps run (10)",
    ),
    (
        "report-out-under-proc",
        ["report", "--out", "/proc/aftertrain-test/sub"],
        "--out /proc/aftertrain-test/sub",
    ),
    ("report-ledger-names-its-flag", ["report", "--claims-json", "{tmp}/missing.json"], "--claims-json"),
    # empty paths, a list as metadata, another architecture for --models
    (
        "sample-checkpoint-empty",
        ["sample", "--checkpoint", ""],
        "--checkpoint must name a checkpoint file, got ''",
    ),
    ("report-out-empty", ["report", "--out", ""], "--out must name a folder, got ''"),
    (
        "sample-checkpoint-meta-list",
        ["sample", "--checkpoint", "{tmp}/list_meta.pt"],
        "must be a JSON object with a 'sha256' string",
    ),
    (
        "report-models-other-architecture",
        ["report", "--out", "{tmp}/o2", "--models", "{wrong}"],
        "--models: ",
    ),
    # a negative value named, a run too short for its options, empty model names
    (
        "train-lr-negative-exponent",
        ["train", "--lr", "-1e-3"],
        "argument --lr: must be a finite number > 0, got -1e-3",
    ),
    ("train-min-lr-negative", ["train", "--min-lr", "-1e-5"], "got -1e-5"),
    ("train-lr-equals-negative", ["train", "--lr=-1e-3"], "got -1e-3"),
    (
        "train-warmup-past-steps",
        ["train", "--steps", "10", "--warmup", "100"],
        "--warmup 100 is longer than the run: at most the steps run (10)",
    ),
    ("train-warmup-past-default-steps", ["train", "--warmup", "6000"], "at most the steps run (5000)"),
    (
        "train-stop-rising-under-stop-below",
        ["train", "--steps", "10", "--stop-below", "1", "--stop-rising-to", "0.5"],
        "--stop-rising-to: stop_rising_to has an invalid value 0.5; allowed: above stop_below",
    ),
    (
        "report-models-empty",
        ["report", "--out", "{tmp}/o3", "--models", ""],
        "--models '' holds an empty name",
    ),
    (
        "report-models-empty-name",
        ["report", "--out", "{tmp}/o4", "--models", "reference,,article"],
        "holds an empty name",
    ),
    (
        "report-claims-json-empty",
        ["report", "--out", "{tmp}/o5", "--claims-json", ""],
        "--claims-json '' holds an empty name",
    ),
    ("sweep-models-empty", ["sweep", "--out", "{tmp}/o6", "--models", ""], "--models '' holds an empty name"),
    (
        "report-models-folder-not-a-model",
        ["report", "--out", "{tmp}/o7", "--models", "{tmp}"],
        "is a folder without config.json: not a transformers model folder",
    ),
]

#: Words of argparse's or Python's internals that a message must never show.
INTERNALS = (
    "Traceback",
    "invalid _",
    "_int_in",
    "_temperature",
    "parse value",
    "Namespace(",
    "KeyError",
    "NoneType",
)


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("argv, fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_is_one_line_and_exit_status_2(argv, fragment, paths, capsys, request):
    if "{locked}" in " ".join(argv) and os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder: the case cannot fail as root")
    argv = [a.format(**paths) for a in argv]
    status, err = _run(argv, capsys)
    assert status == 2, err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert fragment.format(**paths) in lines[0], lines[0]
    assert lines[0].startswith("aftertrain"), lines[0]
    for word in INTERNALS:
        assert word not in err, err


def test_there_are_enough_cases():
    assert len(CASES) >= 80
    assert len({c[0] for c in CASES}) == len(CASES)


def test_every_command_has_a_description_line_in_its_help():
    """``aftertrain COMMAND --help`` says what the command does above its
    options (argparse shows ``description``, not the one-line ``help``)."""
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    commands = sub.choices
    assert set(commands) == {"report", "sweep", "train", "sample", "check"}
    assert [name for name, p in commands.items() if not p.description] == []


def test_version_prints_the_package_version(capsys):
    from aftertrain import __version__

    try:
        cli.main(["--version"])
    except SystemExit as exit_:
        assert exit_.code == 0
    assert capsys.readouterr().out.strip() == f"aftertrain {__version__}"


def test_a_bug_is_not_disguised_as_a_users_mistake(monkeypatch):
    """Only UsageError becomes exit status 2: an error inside aftertrain
    still raises (a traceback: a bug to report), so exit 2 always means the
    user's input."""

    def bug(args):
        raise KeyError("config")

    monkeypatch.setattr("aftertrain.cli.sample.run", bug)
    with pytest.raises(KeyError):
        cli.main(["sample"])


def test_a_checkpoint_with_nan_weights_is_one_line_and_exit_status_2(tmp_path, capsys):
    """NaN weights never load silently."""
    state = torch.load(reference_path(), map_location="cpu", weights_only=True)
    nan = {
        k: torch.full_like(v, float("nan")) if v.is_floating_point() else v
        for k, v in state["state_dict"].items()
    }
    buf = tmp_path / "buf.pt"
    torch.save({"config": state["config"], "state_dict": nan}, buf)
    path = _with_meta(tmp_path / "nan.pt", buf.read_bytes())
    status, err = _run(["sample", "--checkpoint", path], capsys)
    assert status == 2, err
    assert len(err.strip("\n").splitlines()) == 1, err
    assert "NaN or inf weights" in err, err


def test_a_long_prompt_says_so_before_the_long_work(monkeypatch, capsys):
    """A prompt of thousands of characters takes one model step each: one
    progress line on standard error comes before that work starts."""
    seen = []

    def stub(net, prompt, length, temperature, seed):
        seen.append(capsys.readouterr().err)  # what was said before the work
        return "x" * length

    monkeypatch.setattr(_decoding, "sample_text", stub)
    assert cli.main(["sample", "--prompt", "a" * 5000, "--length", "5"]) == 0
    assert seen == ["reading the 5000-character prompt (one model step per character beyond the first)...\n"]


def test_temperature_0_is_greedy_sampling_not_an_error(monkeypatch, capsys):
    """0 is the smallest temperature allowed (greedy decoding): it reaches the
    sampler as 0.0; only negatives, NaN and inf are refused."""
    seen = []

    def stub(net, prompt, length, temperature, seed):
        seen.append(temperature)
        return "x" * length

    monkeypatch.setattr(_decoding, "sample_text", stub)
    assert cli.main(["sample", "--prompt", "a", "--length", "3", "--temperature", "0"]) == 0
    assert seen == [0.0] and capsys.readouterr().out.startswith("axxx")


def test_a_run_that_diverges_is_one_line_exit_1_and_no_checkpoint(monkeypatch, tmp_path, capsys):
    """A loss that becomes NaN or inf (``--weight-decay 1e9``, ``--lr 1e10
    --no-grad-clip``) is not a usage error (the options are valid) but the
    run's failure: one line naming it, exit status 1, nothing written."""
    from aftertrain.lm import train as _train
    from aftertrain.lm.evaluation import NonFiniteLossError

    for error in (
        NonFiniteLossError(
            "model: it produced a non-finite loss (NaN or inf logits) on the validation split"
        ),
        FloatingPointError("training loss became nan at step 3"),
    ):

        def diverge(cfg, on_progress=None, error=error):
            raise error

        monkeypatch.setattr(_train, "train", diverge)
        out = tmp_path / "model.pt"
        status, err = _run(
            ["train", "--steps", "5", "--lr", "1e10", "--no-grad-clip", "--out", str(out)], capsys
        )
        lines = err.strip("\n").splitlines()
        assert status == 1, err
        assert (
            lines[-1].startswith("aftertrain train: the run diverged: ")
            and str(error) in lines[-1]
            and "no checkpoint written" in lines[-1]
        ), err
        assert not out.exists() and "Traceback" not in err


def test_training_shows_progress_every_interval_however_slow_a_step():
    """The progress display writes a line whenever nothing was written for
    ``every`` seconds, from a thread: during the start-up (no step yet) and
    during a step slower than ``every``, on a log as on a terminal. The
    interval is read on a clock the test moves by hand (the thread looks
    every 5 ms of real time), so the lines do not depend on the machine's pace."""
    import io

    from aftertrain.cli.train import training_progress
    from aftertrain.lm.train import Progress

    def wait_for(n: int) -> list[str]:  # the thread's lines once there are n (at most 30 s)
        deadline = time.monotonic() + 30
        while len(log.getvalue().splitlines()) < n and time.monotonic() < deadline:
            time.sleep(0.005)
        return log.getvalue().splitlines()

    log, now = io.StringIO(), [0.0]
    with training_progress(stream=log, every=4.0, clock=lambda: now[0], poll=0.005) as show:
        now[0] = 3.9
        time.sleep(0.2)  # the thread looks about 40 times: under the interval, no line
        assert log.getvalue() == ""
        now[0] = 4.0  # the start-up: no step yet
        wait_for(1)
        now[0] = 5.0
        show(Progress(3, 10, 2.5, None, None, 1.0))  # no validation: no line of its own
        now[0] = 8.0  # a slow step: 4 s since the last line (not since the last step)
        wait_for(2)
    assert log.getvalue().splitlines() == ["  4s: starting (corpus, model)", "  8s: step 3/10, loss 2.5000"]
    quiet = io.StringIO()
    with training_progress(stream=quiet, every=4.0, clock=lambda: 0.0, poll=0.005) as show:
        show(Progress(1, 10, 2.5, None, None, 0.1))  # no validation, nothing slow: no line
        time.sleep(0.05)
    assert quiet.getvalue() == ""


def test_train_lets_torch_threads_wait_passively():
    """Two spinning OpenMP threads stall on a busy 2-core machine
    (docs/measurement.md): ``aftertrain train`` asks for passive waiting
    before torch loads (OpenMP reads it then), unless the user chose a policy.
    The probe stops the command where it first imports the model layer."""
    import subprocess
    import sys

    probe = (
        "import builtins, os, sys\n"
        "from aftertrain import cli\n"
        "real_import = builtins.__import__\n"
        "def spy(name, *args, **kwargs):\n"
        "    if name.startswith('aftertrain.lm'):\n"
        "        print('policy', os.environ.get('OMP_WAIT_POLICY'), 'torch',\n"
        "              'torch' in sys.modules, file=sys.stderr)\n"
        "        raise SystemExit(0)\n"
        "    return real_import(name, *args, **kwargs)\n"
        "builtins.__import__ = spy\n"
        "cli.main(['train', '--steps', '2'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for given, want in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        out = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            env=dict(env, **({} if given is None else {"OMP_WAIT_POLICY": given})),
            timeout=120,
        )
        assert f"policy {want} torch False" in out.stderr, out.stderr
