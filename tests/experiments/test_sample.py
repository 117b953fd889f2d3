"""aftertrain sample --draft: the text of the shipped generator and the
run's figures (aftertrain.experiments.sample)."""

from __future__ import annotations

import torch

from aftertrain import speculative as S
from aftertrain.lm.ngram import Bigram


def test_sample_with_a_draft_prints_its_text_and_the_runs_figures(capsys):
    """``aftertrain sample --draft bigram --k 2``: the text the generator
    gives for that seed on standard output, the characters per target pass
    and the speedup measured on the run (a ratio with its interval, never a
    time) on standard error; --length 0 times nothing."""
    from aftertrain.cli import main
    from aftertrain.lm.checkpoint import load_reference

    assert main(["sample", "--draft", "bigram", "--k", "2", "--length", "20", "--seed", "3"]) == 0
    out, err = capsys.readouterr()
    expected = S.speculative_generate(
        load_reference(), Bigram.fit(), "The ", 20, 2, 1.0, torch.Generator().manual_seed(3)
    )
    assert out == "The " + expected.text + "\n"
    assert f"{expected.chars_per_pass:.2f} characters per target pass" in err
    assert "speedup over plain decoding on this run" in err and "99% interval" in err
    assert main(["sample", "--draft", "bigram", "--length", "0"]) == 0
    assert "nothing timed" in capsys.readouterr().err
