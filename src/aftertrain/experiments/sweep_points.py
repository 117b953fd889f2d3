"""The quality sweep's typed points (:mod:`aftertrain.experiments.sweep`):
one checkpoint's line of the sweep file (:class:`SweepPoint`), its
:class:`KeyFigures` (the experiments' own rows) and what sits beside them,
and the :class:`Margin` per claim with its :class:`Threshold` and
:class:`Side` (:data:`THRESHOLDS`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from aftertrain.claims.tables import TableRow
from aftertrain.core import tolerances as TOL
from aftertrain.experiments import prune as EP
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import speculative as XS
from aftertrain.experiments.article import PublishedAcceptance

#: The matrices outside the blocks: Q7 compares tok against every block matrix,
#: and needs both embeddings ahead of every other matrix.
TOKEN_EMBEDDING = "tok.weight"
POSITION_EMBEDDING = "pos.weight"


class Side(enum.Enum):
    """Where a claim holds against its margin's threshold."""

    ABOVE = "above"
    BELOW = "below"

    def holds(self, value: float, threshold: float) -> bool:
        """Whether ``value`` is on this side of ``threshold``."""
        return value > threshold if self is Side.ABOVE else value < threshold


class Margin(enum.Enum):
    """One number per claim the sweep follows (the value is its name in the sweep file)."""

    Q5_4BIT = "q5_4bit_pc_minus_bigram"
    Q5_3BIT = "q5_3bit_pc_minus_bigram"
    Q6_2BIT = "q6_2bit_pc_minus_pt"
    Q7_TOK = "q7_tok_over_block"
    Q7_POS = "q7_pos_minus_next"
    P1_GLOBAL = "p1_global_minus_layer_30"
    P2_RANDOM = "p2_random5_minus_bigram"
    S4_BIGRAM = "s4_bigram_k8_minus_k1"
    S4_INT8 = "s4_8bit_k8_minus_k1"


@dataclass(frozen=True)
class Threshold:
    """A margin's claim, what it measures, and the side of ``threshold`` where the claim holds."""

    claim: str
    what: str
    threshold: float
    side: Side

    def holds(self, value: float) -> bool:
        """Whether the claim holds at ``value``: strictly on :attr:`side` of :attr:`threshold`."""
        return self.side.holds(value, self.threshold)


#: Each margin's threshold.
THRESHOLDS: dict[Margin, Threshold] = {
    Margin.Q5_4BIT: Threshold("Q5", "4-bit per-channel loss minus the bigram's (nats)", 0.0, Side.BELOW),
    Margin.Q5_3BIT: Threshold("Q5", "3-bit per-channel loss minus the bigram's (nats)", 0.0, Side.ABOVE),
    Margin.Q6_2BIT: Threshold("Q6", "2-bit loss, per-channel minus per-tensor (nats)", 0.0, Side.ABOVE),
    Margin.Q7_TOK: Threshold(
        "Q7",
        "4-bit penalty of tok over the largest block matrix's (ratio)",
        TOL.EMBEDDING_DOMINANCE,
        Side.ABOVE,
    ),
    Margin.Q7_POS: Threshold(
        "Q7", "4-bit penalty of pos minus the largest other matrix's but tok's (nats)", 0.0, Side.ABOVE
    ),
    Margin.P1_GLOBAL: Threshold(
        "P1", "30% pruned loss, global minus per-layer magnitude (nats)", 0.0, Side.BELOW
    ),
    Margin.P2_RANDOM: Threshold("P2", "random 5% pruned loss minus the bigram's (nats)", 0.0, Side.ABOVE),
    Margin.S4_BIGRAM: Threshold("S4", "bigram draft acceptance, k=8 minus k=1", 0.0, Side.BELOW),
    Margin.S4_INT8: Threshold("S4", "8-bit draft acceptance, k=8 minus k=1", 0.0, Side.BELOW),
}


@dataclass(frozen=True)
class KeyFigures(TableRow):
    """The key figures of one model, as the experiments' rows: the validation
    loss, the bigram's, the bits table (Q4), the one-at-a-time 4-bit
    sensitivity (Q7), the three methods at 30% (P1), random at 5% (P2) and
    the acceptance of :data:`aftertrain.experiments.sweep.DRAFTS` at
    :data:`~aftertrain.experiments.sweep.KS` (S4; the article's figures hold
    its published rows, :func:`aftertrain.experiments.sweep.article_figures`)."""

    val_loss: float
    bigram: float
    q4: tuple[EQ.BitsRow, ...]
    q7: tuple[EQ.SensitivityRow, ...]
    p1: tuple[EP.LossRow, ...]
    p2: tuple[EP.RandomRow, ...]
    s4: tuple[XS.AcceptanceRow | PublishedAcceptance, ...]

    @classmethod
    def from_record(cls, data: object) -> KeyFigures:
        """The key figures ``data`` (a :meth:`to_record` dict) holds, S4's rows read back as
        :class:`~aftertrain.experiments.speculative.AcceptanceRow` (the field's type is a
        union, which the generic reading does not resolve); ValueError naming the missing and
        unknown keys."""
        fig = super().from_record(data)
        return replace(fig, s4=tuple(XS.AcceptanceRow.from_record(r) for r in fig.s4))


@dataclass(frozen=True)
class SpeculativeFigure(TableRow):
    """S6/S7 without a clock, one draft at ``k``
    (:func:`aftertrain.experiments.sweep.speculative_figures`)."""

    draft: str
    k: int
    acceptance: float
    chars_per_pass: float
    formula_article_c: float
    break_even_c: float


@dataclass(frozen=True)
class LargestWeight(TableRow):
    """The largest ``|w|`` of a model and the matrix holding it."""

    name: str
    value: float


@dataclass(frozen=True)
class EmbeddingRms(TableRow):
    """tok's and pos's RMS over the RMS of all the blocks' 2-D weights together."""

    tok: float = field(metadata={"key": TOKEN_EMBEDDING})
    pos: float = field(metadata={"key": POSITION_EMBEDDING})


@dataclass(frozen=True)
class Fragility(TableRow):
    """What could make a model fragile under rounding and pruning
    (:func:`aftertrain.experiments.sweep.fragility`)."""

    weight_range: EQ.WeightRanges
    activations: dict[str, EQ.ActivationPeak]
    #: matrix -> the RMS of its weights
    rms: dict[str, float]
    embedding_over_blocks: EmbeddingRms
    max_abs: LargestWeight
    #: matrix -> its share of the summed 4-bit penalties
    q7_share: dict[str, float]


@dataclass(frozen=True)
class Training(TableRow):
    """How a checkpoint was trained, from its ``.pt.json`` (None where the file
    does not say: ``recipe`` is absent from files written before the recipe
    options, those are the reference recipe). ``recipe``: the recipe's knobs by
    name; ``history``: ``(step, train loss, validation loss)`` per evaluation."""

    command: str | None = None
    recipe: dict[str, object] | None = None
    steps: int | None = None
    stop_at: int | None = None
    best_step: int | None = None
    train_loss: float | None = None
    seed: int | None = None
    threads: int | None = None
    history: tuple[tuple[int, float, float], ...] | None = None

    @classmethod
    def of(cls, meta: object) -> Training:
        """The training record of a checkpoint's metadata (its ``.pt.json``);
        the keys it does not have read as None, others are not kept."""
        if not isinstance(meta, dict):
            raise ValueError(f"meta must be a checkpoint's metadata (a dict), got {type(meta).__name__}")
        return cls.from_record({k: meta.get(k) for k in cls.keys()})


@dataclass(frozen=True)
class SweepPoint(TableRow):
    """One checkpoint's entry of the sweep file: its name, validation loss,
    where its figures came from, the figures and their margins; its recipe
    and history, :func:`~aftertrain.experiments.sweep.fragility` and
    :func:`~aftertrain.experiments.sweep.speculative_figures` beside them
    (None in a point written without them)."""

    model: str
    val_loss: float
    figures: KeyFigures
    margins: dict[Margin, float]
    source: str = ""
    sha256: str | None = None
    training: Training | None = None
    fragility: Fragility | None = None
    speculative: tuple[SpeculativeFigure, ...] | None = None

    def to_record(self) -> dict:
        """The point as the sweep file stores it: a field that is None is left out."""
        out = {
            "model": self.model,
            "val_loss": self.val_loss,
            "source": self.source,
            "figures": self.figures.to_record(),
            "margins": {m.value: v for m, v in self.margins.items()},
        }
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.training is not None:
            out["training"] = self.training.to_record()
        if self.fragility is not None:
            out["fragility"] = self.fragility.to_record()
        if self.speculative is not None:
            out["speculative"] = [r.to_record() for r in self.speculative]
        return out

    @classmethod
    def from_record(cls, data: object) -> SweepPoint:
        """The point a sweep file holds; ``ValueError`` naming what is missing or wrong."""
        if not isinstance(data, dict) or not {"model", "val_loss", "margins", "figures"} <= set(data):
            raise ValueError(
                f"data must be a sweep point (model, val_loss, margins, figures), got {str(data)[:80]}"
            )
        training = data.get("training")
        return cls(
            model=str(data["model"]),
            val_loss=float(data["val_loss"]),
            figures=KeyFigures.from_record(data["figures"]),
            margins={Margin(k): float(v) for k, v in data["margins"].items()},
            source=str(data.get("source", "")),
            sha256=data.get("sha256"),
            training=None if training is None else Training.of(training),
            fragility=None if data.get("fragility") is None else Fragility.from_record(data["fragility"]),
            speculative=None
            if data.get("speculative") is None
            else tuple(SpeculativeFigure.from_record(r) for r in data["speculative"]),
        )

    @property
    def complete(self) -> bool:
        """Whether the point has every part a sweep writes (what ``--reuse`` takes as it is)."""
        return None not in (self.sha256, self.training, self.fragility, self.speculative)
