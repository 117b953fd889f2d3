"""The permissions of the files aftertrain writes (:mod:`aftertrain.core.io`).

An atomic write goes through a temporary file; ``tempfile.mkstemp`` creates
it 0o600, and a fixed chmod ignores the user's umask, so both are checked
here against the oracle of a file written the plain way (``open(path, "w")``)
in the same folder under the same umask: a new file 0o666 less the umask, an
existing file keeping its mode. The writers that keep files (checkpoints,
the README's claims table) are checked the same way; the ledger and the
report are checked by tests/cli/test_report_end_to_end.py.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aftertrain.core.io import atomic_write


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask():
    """Set the process umask for one test; restored after."""
    before = os.umask(0o022)
    os.umask(before)
    yield lambda value: os.umask(value)
    os.umask(before)


def plain_mode(folder: Path) -> int:
    """The mode ``open(path, "w")`` gives a new file in ``folder`` now."""
    probe = folder / "plain.txt"
    probe.write_text("x")
    mode = mode_of(probe)
    probe.unlink()
    return mode


@pytest.mark.parametrize(
    ("mask", "expected"),
    [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)],
    ids=["umask-022", "umask-077", "umask-002"],
)
def test_a_new_file_gets_the_mode_a_plain_write_gives(tmp_path, umask, mask, expected):
    """0o666 less the umask, as open() gives (checked against open() itself);
    no temporary left beside it."""
    umask(mask)
    path = atomic_write(tmp_path / "out.json", "{}\n")
    assert mode_of(path) == plain_mode(tmp_path) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_an_existing_file_keeps_its_mode(tmp_path, umask):
    """Rewriting a file 0o640 (or 0o664) leaves it so, as open(path, "w")
    would: a committed README or report keeps what its owner gave it."""
    umask(0o022)
    path = tmp_path / "README.md"
    for mode in (0o640, 0o664):
        path.write_text("old")
        path.chmod(mode)
        atomic_write(path, "new")
        assert (path.read_text(), mode_of(path)) == ("new", mode)


def test_an_explicit_mode_is_set_outright(tmp_path, umask):
    umask(0o077)
    path = tmp_path / "x.bin"
    path.write_bytes(b"old")
    path.chmod(0o600)
    atomic_write(path, b"new", mode=0o644)
    assert mode_of(path) == 0o644


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["umask-022", "umask-077"])
def test_a_checkpoint_and_its_sidecar_get_the_plain_mode(tmp_path, umask, mask):
    """save_checkpoint writes the weights and their .pt.json through
    atomic_write: both as a plain write would leave them (a one-layer GPT of
    width 8 keeps it cheap)."""
    from aftertrain.lm import checkpoint as CK
    from aftertrain.lm import model as M

    umask(mask)
    net = M.GPT(M.GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=8))
    CK.save_checkpoint(net, tmp_path / "m.pt", {"note": "mode test"})
    expected = plain_mode(tmp_path)
    assert mode_of(tmp_path / "m.pt") == mode_of(tmp_path / "m.pt.json") == expected
    assert json.loads((tmp_path / "m.pt.json").read_text())["note"] == "mode test"


def test_the_readme_table_update_keeps_the_readmes_mode(tmp_path, umask):
    """update_readme rewrites README.md in place: a group-writable README
    (umask 0o002 checkouts) stays 0o664."""
    from aftertrain.report.assemble import README_BEGIN, README_END, update_readme
    from aftertrain.report.reading import read_ledger

    umask(0o022)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_BEGIN}\nSTALE TABLE\n{README_END}\n")
    readme.chmod(0o664)
    root = Path(__file__).resolve().parents[2]
    update_readme(readme, read_ledger(root / "report" / "claims.json"))
    assert "STALE TABLE" not in readme.read_text() and mode_of(readme) == 0o664


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "claims.json"
    path.write_text("old")

    def crash(*args):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        atomic_write(path, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["claims.json"]
    assert path.read_text() == "old"
