"""The claims this project guards, transcribed from ``shared/claims/CLAIMS.md``.

One source for the ledger (:mod:`aftertrain.ledger`) and the claims report:
each claim's ID, its title (the bold words of CLAIMS.md), a one-line
statement, and the article's figures. The figures are the article's,
measured on its own model; ours differ in value (see CLAIMS.md). Claims X*
are this project's own boundaries, not the articles'.

A test ties itself to a claim with ``@pytest.mark.claim("Q2")``;
tests/claims/test_catalogue.py checks these IDs and titles against CLAIMS.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from aftertrain.claims.parts import Part


@dataclass(frozen=True)
class Defining:
    """A part without which a claim is not decided: the ``part`` its tests
    are (:class:`aftertrain.claims.parts.Part`) and ``what`` it is for this
    claim, in words."""

    part: Part
    what: str


#: The defining part of a claim not named otherwise: its assertions.
ASSERTED = Defining(Part.ASSERTIONS, "its assertions")
#: A timing claim's defining part.
TIMED = Defining(Part.TIMED, "the timing")
#: P8's and X5's: only CUDA's sparse kernels skip 2:4 zeros (no CPU kernel).
SPEED_2_4 = Defining(Part.TIMED, "the 2:4 speed-up against dense (CUDA sparse kernels)")


@dataclass(frozen=True)
class Claim:
    """One claim: ``id`` (e.g. "Q2"), ``title`` as CLAIMS.md bolds it (without
    the ID and the final period), ``statement`` in one line, ``article``, the
    article's figures ("" where the claim has none), ``defining``, the
    parts that must run for the claim to read ``holds`` or ``does not
    reproduce`` (:mod:`aftertrain.claims.parts`), and ``any_model``: how the
    claim reads on any model under test, a transformers folder included
    (``yes``, or what it reads there: see :data:`ANY_MODEL`)."""

    id: str
    title: str
    statement: str
    article: str
    defining: tuple[Defining, ...] = (ASSERTED,)
    any_model: str = "yes"


_CLAIMS = (
    # Quantization (part 3)
    Claim(
        "Q1",
        "rule",
        "Symmetric uniform quantization: qmax = 2**(bits-1) - 1, scale = max|w| / qmax, "
        "q = round(w/scale).clamp(-qmax-1, qmax), w_hat = q*scale; one scale per matrix "
        "(per-tensor) or per output channel (per-channel); stored as integers plus float scales.",
        "",
    ),
    Claim(
        "Q2",
        "int8 is nearly free",
        "int8 quantization barely moves the validation loss.",
        "float32 2.0272 -> int8 2.0290 per-tensor (+0.0017), 2.0280 per-channel",
    ),
    Claim(
        "Q3",
        "memory",
        "int8 storage cuts weight memory to about a quarter; 1-D parameters stay float32.",
        "2-D weights 631,808: 2.41 MB fp32 -> 0.60 MB int8; all 637,156 parameters: "
        "2.43 MB -> 0.62 MB, a 74.4% cut (MB = 2**20 bytes)",
    ),
    Claim(
        "Q4",
        "bits table",
        "Validation loss by bit width, per-tensor / per-channel.",
        "8: 2.0290 / 2.0280; 6: 2.0599 / 2.0387; 4: 2.6380 / 2.3571; 3: 4.3960 / 3.4381; 2: 5.7894 / 6.3112",
    ),
    Claim(
        "Q5",
        "where it breaks",
        "Down to 6 bits the loss moves only in the second decimal; 4-bit per-channel barely "
        "beats the bigram; 3 bits collapses.",
        "4-bit per-channel 2.3571 vs bigram 2.6501",
    ),
    Claim(
        "Q6",
        "reconstruction and loss part at 2 bits",
        "At 2 bits per-channel has the worse loss although it reconstructs the weights better; "
        "per-channel is better in loss from 8 down to 3 bits.",
        "loss 6.3112 vs 5.7894; blocks.0.f1: per-tensor zeroes 95.2% with MAE 0.0519, "
        "per-channel zeroes 78.1% with MAE 0.0419",
    ),
    Claim(
        "Q7",
        "sensitivity",
        "Quantizing one matrix at a time to 4 bits: the two embeddings dominate; tok hurts more "
        "than five times any matrix inside a block.",
        "tok.weight +0.0976, pos.weight +0.0618, blocks.2.f1.weight +0.0184, "
        "blocks.0.f2.weight +0.0174, blocks.2.qkv.weight +0.0132, ..., least "
        "blocks.2.f2.weight -0.0020",
    ),
    Claim(
        "Q8",
        "penalties compound",
        "Quantizing all matrices to 4 bits at once costs more than the sum of the one-at-a-time penalties.",
        "sum of one-at-a-time +0.2830; all at once +0.3299",
    ),
    Claim(
        "Q9",
        "same loss is not same text",
        "With the same seed, text sampled from the int8 model departs from the float32 text.",
        "departs at the 22nd character",
    ),
    Claim(
        "Q10",
        "no outliers in this model",
        "Per-channel weight ranges and activation channels are even, so per-channel barely "
        "helps here (unlike large models with outlier channels).",
        "weight range max/median: worst matrix 2.49, median 1.51; 8-bit per-tensor vs "
        "per-channel differ by 0.0010; activations max/median: block 0 FFN input 1.50 "
        "(max 5.24), block 2 FFN input 1.54 (max 6.24), final residual 1.64 (max 6.67)",
    ),
    Claim(
        "Q11",
        "quantization saves memory, not time",
        "Weights rounded to a grid but multiplied in float32 run at float32 speed.",
        "an 8-bit draft costs c = 1.059 target passes per token",
        defining=(TIMED,),
    ),
    # Speculative decoding (part 4)
    Claim(
        "S1",
        "the rule",
        "Accept a drafted x with probability min(1, p(x)/q(x)); on rejection sample from "
        "normalize(max(0, p - q)) and discard the rest; the target checks all k drafted "
        "positions plus one more in a single pass.",
        "",
    ),
    Claim(
        "S2",
        "the output distribution is the target's",
        "TV distance of 20,000 speculative first characters to the target distribution sits "
        "inside the sampling noise of direct sampling.",
        "bigram draft 0.0158, 4-bit draft 0.0095, direct sampling 0.0134",
    ),
    Claim("S3", "drafts", "The drafts are the bigram, the 8-bit model and the 4-bit model.", ""),
    Claim(
        "S4",
        "acceptance follows draft quality",
        "Larger k lowers acceptance but raises characters per target pass; "
        "chars per pass = 1 + k * acceptance (200 characters generated).",
        "bigram k=1 0.290/1.29/155, k=8 0.059/1.47/136; 8-bit k=1 0.896/1.89/106, "
        "k=8 0.610/5.88/34; 4-bit k=1 0.653/1.65/121, k=8 0.351/3.77/53 "
        "(acceptance / chars per pass / target passes)",
    ),
    Claim(
        "S5",
        "draft cost decides the sign",
        "Cost c of one draft character relative to one target pass.",
        "target pass 1235 us; bigram 5 us (c = 0.004); 8-bit 1307 us (c = 1.059); 4-bit 1276 us (c = 1.034)",
        defining=(TIMED,),
    ),
    Claim(
        "S6",
        "measured speedup",
        "Only the worst draft (bigram) is faster than plain decoding.",
        "median of 5 pairs (min~max): bigram k=4 1.30 (1.19~1.47), k=8 1.26 (1.08~1.36); "
        "8-bit k=4 0.80 (0.79~0.91), k=8 0.56 (0.50~0.66); 4-bit k=8 0.41 (0.38~0.47)",
        defining=(TIMED,),
    ),
    Claim(
        "S7",
        "the speedup formula",
        "speedup = (chars per target pass) / (1 + k*c); quantized drafts match to about 0.05, "
        "the bigram is overrated.",
        "predicted/measured: bigram k=2 1.36/1.10, k=4 1.37/1.30; 8-bit k=2 0.87/0.87, "
        "k=4 0.83/0.80, k=8 0.62/0.56; 4-bit k=2 0.67/0.67, k=4 0.49/0.46, k=8 0.41/0.41",
        defining=(TIMED,),
    ),
    Claim(
        "S8",
        "timing method",
        "Baseline and candidate alternate; the claim uses the median of pair ratios with "
        "min~max, so machine drift cancels; acceptance rates and pass counts are exact once "
        "the seed is fixed.",
        "one baseline measured 749 ms and later 448 ms",
    ),
    # Pruning (part 8)
    Claim(
        "P1",
        "loss by sparsity",
        "Validation loss by sparsity, global magnitude / per-layer magnitude / random.",
        "10%: 2.0358 / 2.0397 / 3.7873; 30%: 2.2097 / 2.3893 / 4.4976; "
        "50%: 3.1009 / 3.3498 / 4.4543; 70%: 4.0908 / 4.4716 / 4.5714; "
        "90%: 5.0523 / 5.0089 / 4.6292",
    ),
    Claim(
        "P2",
        "random pruning is ruinous",
        "Random pruning of 5% is already worse than the bigram; 20% is close to untrained.",
        "1% 2.2862, 2% 2.4815, 5% 3.1419, 10% 3.7873, 20% 4.2955",
    ),
    Claim(
        "P3",
        "global beats per-layer",
        "Global magnitude pruning beats per-layer, because layers have different weight scales.",
        "30%: 2.2097 vs 2.3893",
    ),
    Claim(
        "P4",
        "pruning to match quantization",
        "Global magnitude sparsity giving the same loss as 8-, 6- and 4-bit quantization.",
        "8-bit (2.0280): 1.8%; 6-bit (2.0387): 10.3%; 4-bit (2.3571): 35.5%",
    ),
    Claim(
        "P5",
        "bytes per element",
        "Storage per element of dense and sparse formats (COO: 4-byte value + 4-byte index; "
        "bitmask: 1 bit per element).",
        "float32 dense 4.00; int8 dense 1.00; COO / bitmask: 50% 4.00 / 2.12; "
        "75% 2.00 / 1.12; 90% 0.80 / 0.52",
    ),
    Claim(
        "P6",
        "at equal size quantization wins",
        "At equal compression quantization keeps a far lower loss than pruning.",
        "int8 4.00x, loss 2.0280; 75% sparse (bitmask) 3.56x, loss 4.3935; 50% sparse 1.88x, loss 3.1009",
    ),
    Claim(
        "P7",
        "zeros don't speed up a dense matmul",
        "(128x128) @ (128x512) with zeros runs at dense speed; all quartile ranges of the ratio hold 1.0.",
        "dense 73.4 us; 50% zeros 1.010 (0.957~1.105); 90% 1.013 (0.924~1.147); 99% 1.005 (0.850~1.142)",
        defining=(TIMED,),
    ),
    Claim(
        "P8",
        "structure is what pays",
        "Only regular zeros (2 of every 4) can be skipped by dedicated instructions; "
        "unstructured zeros cannot.",
        "",
        defining=(SPEED_2_4,),
    ),
    # Supporting claims
    Claim(
        "K1",
        "cache",
        "Decoding with a key/value cache gives the same logits as recomputing the context up "
        "to float error, but not bit for bit.",
        "max difference 9.06e-06",
    ),
    Claim(
        "B1",
        "baseline losses",
        "Untrained loss ln(100), bigram and float32 reference losses.",
        "untrained 4.6052; bigram 2.6501; float32 2.0272",
    ),
    # Boundaries this project adds
    Claim(
        "X1",
        "why acceptance falls with k",
        "Independent acceptance at the k=1 rate a predicts a(1-a^k) / (k(1-a)) at k: "
        "truncation after the first rejection explains most of the fall.",
        "8-bit: 0.896 predicts 0.629 at k=8 (measured 0.610); bigram: 0.290 predicts 0.051 (measured 0.059)",
        defining=(Defining(Part.ASSERTIONS, "the prediction for every draft whose acceptance falls"),),
    ),
    Claim(
        "X2",
        "a draft that is cheap and good",
        "A draft that costs little (c well under 0.1) and agrees often gives a real speedup "
        "well above the bigram's.",
        "",
        defining=(TIMED,),
    ),
    Claim(
        "X3",
        "real integer kernels",
        "Dynamic int8 Linear against float32 across 1 to 1024 rows: where, if anywhere, "
        "int8 arithmetic starts to pay.",
        "elsewhere on x86: several times slower at 1 row, about 10% faster at 1024",
        defining=(TIMED,),
    ),
    Claim(
        "X4",
        "where zeros start to pay",
        "A CSR sparse kernel against the dense matmul at rising sparsity: the crossover "
        "sparsity on the machine at hand.",
        "",
        defining=(TIMED,),
    ),
    Claim(
        "X5",
        "structured 2:4 pruning",
        "Loss of 2-of-4 magnitude pruning against unstructured 50%, and its storage "
        "(values plus 2-bit positions).",
        "",
        defining=(ASSERTED, SPEED_2_4),
    ),
    Claim(
        "X6",
        "exactness beyond the first token",
        "The joint law of several generated tokens matches the target's (chi-square); at "
        "temperature 0 speculative output equals greedy output token for token.",
        "",
    ),
    Claim(
        "X7",
        "the checks have teeth",
        "Every statistical check rejects a known-broken variant.",
        "",
        defining=(Defining(Part.TEETH, "every broken variant rejected"),),
    ),
    Claim(
        "X8",
        "verification is not free",
        "With a cache, a pass over k+1 positions costs more than over one; "
        "(chars per pass) / (v_k + k*c) should fit the measured speedups better than "
        "(chars per pass) / (1 + k*c).",
        "one thread: 1.09 ms for 1 position, 1.41 ms for 2, 1.63 ms for 5, 1.83 ms for 9",
        defining=(TIMED,),
    ),
)

#: How the claims that read a model's parts read on any model (a
#: transformers folder: :mod:`aftertrain.lm.hf`, its roles by
#: :mod:`aftertrain.lm.anatomy`); every other claim runs there as on ours.
#: Stored baselines exist for the bundled models only.
ANY_MODEL = {
    "Q3": "its own sizes; the article's bytes on ours",
    "P5": "its own sizes; the article's bytes on ours",
    "Q6": "its first feed-forward input",
    "Q7": "its embeddings and head",
    "Q10": "its feed-forward inputs, final norm",
    "B1": "its own tokenizer's text",
    "X1": "yes; draft GPT: --aftertrain-draft",
    "X2": "n-gram; draft GPT: --aftertrain-draft",
    "P8": "yes; timed on CUDA only",
    "X5": "yes; timed on CUDA only",
}

_CLAIMS = tuple(
    dataclasses.replace(c, any_model=ANY_MODEL[c.id]) if c.id in ANY_MODEL else c for c in _CLAIMS
)
CLAIMS: dict[str, Claim] = {claim.id: claim for claim in _CLAIMS}
assert len(CLAIMS) == len(_CLAIMS), "claim IDs must be unique"
