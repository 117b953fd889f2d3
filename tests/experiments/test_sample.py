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


def test_sample_run_tells_progress_each_run_as_it_starts():
    """``progress`` hears of the speculative run, then each of the timed
    runs by number (warm-up and pairs, both sides), so ``aftertrain sample``
    can say where a long run is."""
    from aftertrain.experiments.sample import sample_run
    from aftertrain.lm.text import VOCAB_SIZE
    from tests.common.toys import toy_gpt

    heard: list[str] = []
    target = toy_gpt(VOCAB_SIZE, seed=0)
    sample_run(target, Bigram.fit(), "The ", 3, 2, pairs=8, progress=heard.append)
    assert heard[0] == "the speculative run (3 characters, k=2)"
    runs = [h for h in heard[1:] if h.startswith("timing the speedup: run ")]
    assert runs == heard[1:] and len(runs) == 2 * (8 + 1)
    assert runs[-1].startswith("timing the speedup: run 18 of 18 (")
