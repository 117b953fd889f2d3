"""Which tests check each figure against an independent computation, and how.

One entry per figure that :func:`tests.common.figures.enumerate_figures`
lists (``tests/meta/test_figures.py`` fails on a figure with no entry, an
entry for a figure that no longer exists, or a test that does not exist).
A key is a figure's name, or a pattern with ``*`` for figures named after a
model or a draft (``report.plot:spec_acceptance | * measured``); a pattern
that matches nothing is stale like any other entry.

*Independent* means a second computation: a closed form, torch or scipy,
a hand-worked case, a second implementation written in the test, or a
second table the figure must agree with. A test that only compares a run
with a stored run, or only checks a verdict, is not one.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """The tests (``path::name``) that check a figure, and how."""

    nodes: tuple[str, ...]
    how: str


CHECKS: dict[str, Check] = {}


def _add(names, nodes, how: str) -> None:
    names = (names,) if isinstance(names, str) else names
    nodes = (nodes,) if isinstance(nodes, str) else nodes
    for name in names:
        assert name not in CHECKS, f"two entries for {name}"
        CHECKS[name] = Check(tuple(nodes), how)


def check_of(figure: str, checks: dict[str, Check] | None = None) -> Check | None:
    """The entry of ``figure``: its exact name's, else the first pattern's that matches."""
    checks = CHECKS if checks is None else checks
    if figure in checks:
        return checks[figure]
    return next((c for k, c in checks.items() if "*" in k and fnmatch.fnmatchcase(figure, k)), None)


# --- test modules ---------------------------------------------------------------------------
QF = "tests/experiments/test_quant_figures.py"
PF = "tests/experiments/test_prune_figures.py"
SF = "tests/experiments/test_speculative_figures.py"
UF = "tests/experiments/test_speedup_figures.py"
TF = "tests/timing/test_paired_figures.py"
RF = "tests/report/test_rendering_figures.py"
WF = "tests/report/test_sweep_figures.py"
AS = "tests/report/test_assemble.py"
MM = "tests/report/test_multimodel.py"
CAT = "tests/claims/test_catalogue_figures.py"
META = "tests/core/test_runmeta_figures.py"

QUANT_CELLS = f"{RF}::test_quantization_cells"
PRUNE_CELLS = f"{RF}::test_pruning_cells"
TIMING_CELLS = f"{RF}::test_timing_ratio_cells"
SPEC_CELLS = f"{RF}::test_speculative_cells_and_prose"
PAIRED = (
    f"{TF}::test_quartiles_median_and_interval_of_skewed_ratios",
    "tests/timing/test_paired.py::test_fake_clock_median_of_ratios_not_ratio_of_medians_and_per_call_times",
    "tests/timing/test_paired.py::test_median_interval_ranks_for_n21_at_0p99",
)
PAIRED_HOW = (
    "a paired timing's median, quartiles and interval on a fake clock: hand-interpolated "
    "quartiles and scipy.stats.binom ranks on skewed ratios"
)
ARTICLE = f"{CAT}::test_every_article_table_figure_is_in_the_claims_article_texts"
ARTICLE_HOW = "the article's figure: the claim's article text from CLAIMS.md writes the same number"

# --- rows of the claims' tables -------------------------------------------------------------------
_add(
    "row:Baselines.uniform",
    "tests/lm/test_ngram.py::test_uniform_predictor_scores_ln_of_the_vocabulary_size",
    "closed form ln V (ln 100 on our characters)",
)
_add(
    "row:Baselines.bigram",
    (
        "tests/lm/test_decoding_laws.py::test_bigram_draft_is_the_hand_count",
        "tests/lm/test_evaluation.py::test_val_loss_of_varied_losses_is_the_float64_mean_of_float32_terms",
    ),
    "the bigram's law against a hand count; val_loss against a hand float64 mean",
)
_add(
    "row:Baselines.reference",
    (
        f"{QUANT_CELLS}",
        "tests/lm/test_evaluation.py::test_val_loss_over_100k_targets_is_exact_with_float64_accumulation",
    ),
    "val_loss against closed forms; equal to Q4's float32 loss, measured apart",
)
_add(
    ("row:CacheDiff.max_diff", "row:CacheDiff.positions"),
    "tests/lm/test_model.py::test_cached_decoding_matches_recomputation_across_the_window_slide",
    "the test recomputes every position's logits in full and takes the largest difference",
)
_add(
    [
        f"row:StorageRow.{f}"
        for f in (
            "weights",
            "parameters",
            "weights_fp32_bytes",
            "weight_code_bytes",
            "scale_bytes",
            "parameters_fp32_bytes",
            "parameters_quantized_bytes",
        )
    ],
    (
        "tests/claims_on_model/test_quant.py::test_int8_storage_is_the_articles_figures_exactly",
        "tests/quant/test_primitives.py::test_storage_bytes_of_a_partly_quantized_model_counts_the_float32_rest",
    ),
    "hand counts: 631,808 weights, 15 per-tensor / 3,784 per-channel float32 scales, 2 codes per byte at 4 bits",
)
_add(
    "row:BitsTable.float32",
    (
        QUANT_CELLS,
        "tests/lm/test_evaluation.py::test_val_loss_of_varied_losses_is_the_float64_mean_of_float32_terms",
    ),
    "equal to B1's reference loss; val_loss against a hand float64 mean",
)
_add(
    ("row:BitsRow.bits", "row:BitsRow.per_tensor", "row:BitsRow.per_channel"),
    f"{QF}::test_bits_rows_are_the_losses_of_torch_fake_quantized_models",
    "losses of a tiny GPT fake-quantized by torch.fake_quantize_per_tensor/per_channel_affine",
)
_add(
    ("row:Reconstruction.zero_fraction", "row:Reconstruction.mean_abs_error"),
    "tests/quant/test_primitives.py::test_reconstruction_figures_of_a_hand_quantized_row",
    "hand-quantized row",
)
_add(
    ("row:SensitivityRow.loss", "row:SensitivityRow.penalty"),
    f"{QF}::test_sensitivity_rows_are_one_matrix_losses_minus_the_float_loss",
    "one matrix fake-quantized by torch, loss minus the float32 loss",
)
_add(
    ("row:Compounding.sum_of_penalties", "row:Compounding.all_at_once", "row:Compounding.excess"),
    ("tests/quant/test_primitives.py::test_compounding_excess_is_all_at_once_minus_the_sum", QUANT_CELLS),
    "hand case; the committed sum equals Q7's penalties summed and all-at-once Q4's 4-bit per-channel loss minus float32",
)
_add(
    "row:Divergence.position",
    QUANT_CELLS,
    "the two recorded texts agree before the position and differ at it (1-based)",
)
_add(
    ("row:WeightRanges.matrices", "row:WeightRanges.worst", "row:WeightRanges.median"),
    f"{QF}::test_weight_ranges_are_max_over_median_of_row_ranges",
    "numpy float64 max / median of the rows' max|w|, exact",
)
_add(
    ("row:ActivationPeak.ratio", "row:ActivationPeak.max"),
    f"{QF}::test_activation_peaks_are_max_over_median_of_channel_peaks",
    "inputs recorded by hooks written in the test, numpy max and median",
)
_add(
    "row:Outliers.int8_granularity_gap", QUANT_CELLS, "equal to Q4's 8-bit per-tensor minus per-channel loss"
)
_add(
    (
        "row:FakeQuantSpeed.median",
        "row:FakeQuantSpeed.ci",
        "row:Ratio.median",
        "row:Ratio.ci",
        "row:DenseZeros.median",
        "row:DenseZeros.ci",
        "row:DenseZeros.q1",
        "row:DenseZeros.q3",
        "row:CsrRatio.median",
        "row:CsrRatio.ci",
    ),
    PAIRED,
    PAIRED_HOW,
)
_add("row:FakeQuantSpeed.holds_1", TIMING_CELLS, "1 lies in the recorded interval")
_add(
    ("row:Int8Linear.crossover_rows", "row:CsrTable.crossover"),
    TIMING_CELLS,
    "the first size (sparsity) from which every interval lies below 1",
)
_add(
    ("row:DenseZeros.sparsity", "row:CsrRatio.sparsity"),
    "tests/prune/test_masks.py::test_global_magnitude_removes_exactly_round_s_n_even_with_heavy_ties",
    "the masks remove exactly round(s n) weights (hand count)",
)
_add(
    ("row:LossRow.sparsity", "row:LossRow.global_", "row:LossRow.layer", "row:LossRow.random"),
    (
        f"{PF}::test_loss_rows_are_the_losses_of_models_pruned_by_hand",
        "tests/prune/test_masks.py::test_masks_remove_the_same_count_and_positions_as_torch_l1_unstructured",
    ),
    "losses of a tiny GPT pruned by hand sorts; masks against torch.nn.utils.prune",
)
_add(
    (
        "row:RandomRow.sparsity",
        "row:RandomRow.mean",
        "row:RandomRow.std",
        "row:RandomRow.min",
        "row:RandomRow.max",
    ),
    f"{PF}::test_random_rows_are_the_statistics_of_the_seeds_losses",
    "statistics.fmean / stdev / min / max of the seeds' losses",
)
_add(
    "row:MatchingRow.sparsity",
    (
        f"{PF}::test_matching_sparsity_is_where_the_hand_pruned_loss_reaches_the_target",
        "tests/prune/test_masks.py::test_matching_sparsity_is_the_first_grid_point_reaching_the_target",
    ),
    "the hand-pruned loss reaches the target there and not one grid step below",
)
_add(
    ("row:MatchingRow.bits", "row:MatchingRow.loss"),
    PRUNE_CELLS,
    "each target is Q4's per-channel loss at that width",
)
_add(
    (
        "row:BytesRow.sparsity",
        "row:BytesRow.dense",
        "row:BytesRow.coo",
        "row:BytesRow.bitmask",
        "row:BytesRow.csr",
    ),
    (
        f"{PF}::test_bytes_rows_are_torch_sparse_sizes_of_the_hand_pruned_weights",
        "tests/prune/test_masks.py::test_bytes_per_element_closed_forms_and_bitmask_beats_coo_exactly_below_96p875pct",
    ),
    "torch's to_sparse_coo / to_sparse_csr sizes and the bitmask's bit count; closed forms",
)
_add(
    ("row:CompressionRow.compression", "row:CompressionRow.loss"),
    f"{PF}::test_compression_rows_are_four_bytes_over_the_bitmask_bytes",
    "4 bytes over the bitmask's bytes of the hand-pruned weights; their loss",
)
_add(
    [
        f"row:TwoFour.{f}"
        for f in ("two_four", "global_50", "layer_50", "bytes_two_four", "bytes_bitmask", "bytes_coo")
    ],
    f"{PF}::test_two_four_row_is_the_loss_and_bytes_of_a_hand_made_2_4_model",
    "a hand-made 2:4 model's loss and torch sparse sizes; 2.125 = 4 x 0.5 + 0.5 x 2 / 8",
)
_add(
    [f"row:FirstTokenRow.{f}" for f in ("tv", "direct_tv", "null_median", "null_q99", "tv_threshold")],
    f"{SF}::test_first_token_figures_are_the_skewed_nulls_summaries",
    "a skewed null sorted by hand: middle order statistics, interpolation at 0.99 (n-1), "
    "mean + sqrt(ln(1e6)/(2n)); TV from the counts",
)
_add(
    "row:FirstTokenRow.chi2_pvalue",
    (
        f"{SF}::test_first_token_figures_are_the_skewed_nulls_summaries",
        "tests/test_stats.py::test_chisquare_pooling_matches_a_hand_written_pooling",
    ),
    "the samples' chi-square; the pooling against a hand-written one and scipy.stats.chisquare",
)
# LongRunRow (X1) is an AcceptanceRow of longer runs, from the same acceptance_table
_add(
    [
        f"row:{t}.{f}"
        for t in ("AcceptanceRow", "LongRunRow")
        for f in ("k", "drafted", "accepted", "target_passes")
    ],
    (
        f"{SF}::test_a_draft_equal_to_the_target_has_every_draft_accepted",
        "tests/speculative/test_generator.py::test_generator_bookkeeping_and_logits_hold_on_any_run",
    ),
    "draft = target: every draft accepted, ceil(n / (k + 1)) passes; passes + accepted = n",
)
_add(
    [f"row:{t}.{f}" for t in ("AcceptanceRow", "LongRunRow") for f in ("acceptance", "chars_per_pass")],
    f"{SF}::test_acceptance_and_chars_per_pass_are_the_counts_ratios",
    "accepted / drafted, n / passes",
)
_add(
    ("row:AcceptanceRow.predicted_acceptance", "row:LongRunRow.predicted_acceptance"),
    (
        f"{SF}::test_x1_prediction_is_the_sum_of_the_k1_rates_powers",
        "tests/claims_on_model/test_speculative.py::test_predicted_acceptance_formula",
    ),
    "sum_{i<=k} a^i / k summed term by term; the article's worked example",
)
_add(
    [f"row:CostRow.{f}" for f in ("c", "c_low", "c_high", "target_us", "draft_us")],
    f"{UF}::test_cost_rows_are_each_drafts_ratio_and_median_times",
    "hand-made timings: each draft's own ratio, medians of even counts of skewed times",
)
_add(
    [f"row:VerifyRow.{f}" for f in ("k", "v_k", "v_low", "v_high", "verify_us", "step_us")],
    f"{UF}::test_verify_rows_are_each_ks_ratio_and_median_times",
    "hand-made timings: each k's own ratio, medians of the times",
)
_add(
    [
        f"row:SpeedupRow.{f}"
        for f in (
            "k",
            "chars_per_pass",
            "speedup",
            "speedup_min",
            "speedup_max",
            "predicted",
            "predicted_vk",
            "c",
            "v_k",
        )
    ],
    (
        f"{UF}::test_speedup_rows_invert_the_ratio_and_apply_both_formulas",
        f"{RF}::test_speedup_predictions_are_the_formulas_of_the_costs_they_name",
    ),
    "1 / ratio with the interval's ends swapped; cpp / (1 + k c) and cpp / (v_k + k c) written out "
    "from the c and v_k of each draft's and k's own ratios, and on the committed ledger from the "
    "row's c and v_k, one per draft and per k",
)
# --- the ledger's run metadata ---------------------------------------------------------------------
_add(
    "ledger.meta:commit",
    f"{META}::test_commit_is_git_head_and_says_when_a_tracked_file_changed",
    "git rev-parse HEAD of a repository made in the test; marked after a tracked file changes",
)
_add(
    ("ledger.meta:model", "ledger.meta:model_sha256"),
    (
        f"{META}::test_load_threads_cpu_torch_date_model_and_quick",
        "tests/lm/test_registry.py::test_bundled_models_load_with_their_identity",
    ),
    "passed through as given; a bundled model's identity is the SHA-256 of its file's bytes",
)
_add(
    [f"ledger.meta:{k}" for k in ("date", "cpu", "torch", "threads", "load1", "quick")],
    f"{META}::test_load_threads_cpu_torch_date_model_and_quick",
    "a patched os.getloadavg, torch.get_num_threads, torch.__version__, /proc/cpuinfo, the clock",
)

# --- the report ----------------------------------------------------------------------------------
_add(
    ("report.text:Run", "report.text:Run of `article`"),
    (
        f"{RF}::test_header_shows_the_ledgers_metadata",
        f"{RF}::test_second_models_header_and_losses_come_from_its_own_ledger",
    ),
    "the header written out from each ledger's raw meta",
)
_add(
    (
        "report.table:All claims | claim",
        "report.table:All claims | article",
        "report.table:Does not reproduce on `*`: on `*`? | article",
        "report.table:Holds on `*` but not on `*` | article",
    ),
    "tests/claims/test_catalogue.py::test_claim_ids_and_titles_match_claims_md_in_order",
    "the catalogue's claims against CLAIMS.md",
)
_add(
    (
        "report.table:All claims | ours (*)",
        "report.table:Does not reproduce on `*`: on `*`? | ours (*)",
        "report.table:Holds on `*` but not on `*` | ours (*)",
    ),
    (
        f"{AS}::test_each_figure_once_per_cell",
        f"{AS}::test_figures_once_drops_repeats_and_keeps_distinct_figures",
    ),
    "the tests' measured strings, each figure once: hand-worked cases",
)
_add(
    "report.table:All claims | verdict (*)",
    (
        f"{AS}::test_report_lists_every_claim_with_its_verdict",
        "tests/report/test_rendering.py::test_a_part_not_run_is_named_beside_the_verdict",
    ),
    "the ledger's verdicts, and the parts not run with their reasons (hand-made ledgers)",
)
_add(
    (
        "report.table:Validation loss of the baselines (nats) | ours",
        "report.table:Cached decoding against full recomputation | ours",
        "report.table:Storage of int8 (MB = 2^20 bytes; per-tensor scales) | ours",
    ),
    f"{RF}::test_baseline_cache_and_storage_cells",
    "the raw JSON written out; MB = bytes / 2^20, the cut 1 - quantized / float32 (2.41, 0.60, 2.43, 0.62)",
)
_add(
    (
        "report.table:Validation loss by bit width | per-tensor (ours)",
        "report.table:Validation loss by bit width | per-channel (ours)",
    ),
    f"{AS}::test_table_cells_are_the_ledgers_figures",
    "the raw JSON written out",
)
_add(
    (
        "report.table:Validation loss by bit width | bits",
        "report.table:2 bits on blocks.0.f1: zeroed elements and mean absolute error | zeroed (ours)",
        "report.table:2 bits on blocks.0.f1: zeroed elements and mean absolute error | MAE (ours)",
        "report.table:One matrix at a time at 4 bits (penalty in nats, most harmful first) | rank",
        "report.table:One matrix at a time at 4 bits (penalty in nats, most harmful first) | ours",
        "report.table:Penalties compound at 4 bits | ours",
        "report.table:Same seed, float32 against int8 text | ours",
        "report.table:No outlier channels | ours",
    ),
    QUANT_CELLS,
    "the raw JSON written out; ranks in descending penalty; cross-table sums",
)
_add(
    (
        "report.table:Fake-quantized forward against float32 (time ratio) | ours: median [CI of the median]",
        "report.table:Dynamic int8 Linear against float32 (time ratio, below 1 = int8 faster) | rows multiplied at once",
        "report.table:Dynamic int8 Linear against float32 (time ratio, below 1 = int8 faster) | ours: median [CI of the median]",
        "report.table:Dense (128x128)@(128x512) with zeros against the original (time ratio) | zeros",
        "report.table:Dense (128x128)@(128x512) with zeros against the original (time ratio) | ours: median [interval]",
        "report.table:CSR sparse matmul against dense (time ratio, below 1 = sparse faster) | sparsity",
        "report.table:CSR sparse matmul against dense (time ratio, below 1 = sparse faster) | ours: median [interval]",
        "report.text:CSR starts to pay at:",
    ),
    TIMING_CELLS,
    "the raw JSON written out: median [low, high] to 3 decimals; the crossover's sentence",
)
_add(
    (
        "report.table:Validation loss by sparsity (global / per-layer magnitude / random) | global (article / ours)",
        "report.table:Validation loss by sparsity (global / per-layer magnitude / random) | per-layer (article / ours)",
        "report.table:Validation loss by sparsity (global / per-layer magnitude / random) | random (article / ours)",
    ),
    (f"{AS}::test_table_cells_are_the_ledgers_figures", ARTICLE),
    "the raw JSON written out beside the article's figure from CLAIMS.md",
)
_add(
    (
        "report.table:Validation loss by sparsity (global / per-layer magnitude / random) | sparsity",
        "report.table:Random pruning (mean over seeds) | sparsity",
        "report.table:Random pruning (mean over seeds) | ours (mean)",
        "report.table:Random pruning (mean over seeds) | ours (min~max)",
        "report.table:Global-magnitude sparsity with the loss of per-channel quantization | bits",
        "report.table:Global-magnitude sparsity with the loss of per-channel quantization | ours",
        "report.table:Global-magnitude sparsity with the loss of per-channel quantization | our quantized loss",
        "report.table:Bytes per element | storage",
        "report.table:Bytes per element | dense (ours)",
        "report.table:Bytes per element | COO / bitmask (ours)",
        "report.table:At equal size: int8 against sparse bitmask storage | ",
        "report.table:At equal size: int8 against sparse bitmask storage | compression (article / ours)",
        "report.table:At equal size: int8 against sparse bitmask storage | loss (article / ours)",
        "report.table:2:4 structured pruning against unstructured 50% | ",
        "report.table:2:4 structured pruning against unstructured 50% | ours",
    ),
    PRUNE_CELLS,
    "the raw JSON written out; COO 8f and bitmask 4f + 1/8 of one kept fraction f; "
    "2:4 storage 2.125; X5's 50% losses are P1's",
)
_add(
    (
        "report.table:TV distance of 20,000 first characters to the target's law | ours",
        "report.table:TV distance of 20,000 first characters to the target's law | chi-square p",
        "report.text:Same-sample-size baseline (direct sampling, simulated): median",
        "report.table:Acceptance follows draft quality (200 characters, seed fixed) | X1 prediction from k=1 (ours)",
        "report.table:Acceptance at k=8 predicted from k=1 (300-character runs) | k=1",
        "report.table:Acceptance at k=8 predicted from k=1 (300-character runs) | predicted at k=8",
        "report.table:Acceptance at k=8 predicted from k=1 (300-character runs) | measured at k=8",
        "report.table:Cost c of one draft character relative to one target step | ours: us",
        "report.table:Cost c of one draft character relative to one target step | ours: c, median [CI of the median]",
        "report.table:Verification pass over k+1 positions against one plain step | k",
        "report.table:Verification pass over k+1 positions against one plain step | ours: v_k, median [CI of the median]",
        "report.table:Speedup over plain cached decoding (ours: median of alternating pairs [confidence "
        "interval of the median]; undecided: the interval contains 1) | ours: (chars/pass)/(1+kc)",
        "report.table:Speedup over plain cached decoding (ours: median of alternating pairs [confidence "
        "interval of the median]; undecided: the interval contains 1) | ours: c, v_k used",
        "report.text:Highest median speedup (X",
    ),
    SPEC_CELLS,
    "the raw JSON written out; the X1 prediction as a sum of powers of the k=1 rate; "
    "the predictions from the row's own c and v_k",
)
_add(
    (
        "report.table:Acceptance follows draft quality (200 characters, seed fixed) | k",
        "report.table:Acceptance follows draft quality (200 characters, seed fixed) | acceptance (ours)",
        "report.table:Acceptance follows draft quality (200 characters, seed fixed) | chars/pass (ours)",
        "report.table:Acceptance follows draft quality (200 characters, seed fixed) | target passes (ours)",
        "report.table:Speedup over plain cached decoding (ours: median of alternating pairs [confidence "
        "interval of the median]; undecided: the interval contains 1) | k",
        "report.table:Speedup over plain cached decoding (ours: median of alternating pairs [confidence "
        "interval of the median]; undecided: the interval contains 1) | ours",
        "report.table:Speedup over plain cached decoding (ours: median of alternating pairs [confidence "
        "interval of the median]; undecided: the interval contains 1) | ours: (chars/pass)/(v_k+kc)",
    ),
    (f"{AS}::test_table_cells_are_the_ledgers_figures", SPEC_CELLS),
    "the raw JSON written out, undecided where the interval holds 1; acceptance = accepted / drafted",
)
_add(
    [
        f"report.table:{t} | {c}"
        for t, c in (
            ("Validation loss of the baselines (nats)", "article"),
            ("Cached decoding against full recomputation", "article"),
            ("Validation loss by bit width", "per-tensor (article)"),
            ("Validation loss by bit width", "per-channel (article)"),
            ("Storage of int8 (MB = 2^20 bytes; per-tensor scales)", "article"),
            ("2 bits on blocks.0.f1: zeroed elements and mean absolute error", "zeroed (article)"),
            ("2 bits on blocks.0.f1: zeroed elements and mean absolute error", "MAE (article)"),
            ("One matrix at a time at 4 bits (penalty in nats, most harmful first)", "article"),
            ("Penalties compound at 4 bits", "article"),
            ("Same seed, float32 against int8 text", "article"),
            ("No outlier channels", "article"),
            ("Random pruning (mean over seeds)", "article"),
            ("Global-magnitude sparsity with the loss of per-channel quantization", "article"),
            ("Bytes per element", "dense (article)"),
            ("Bytes per element", "COO / bitmask (article)"),
            (
                "Dense (128x128)@(128x512) with zeros against the original (time ratio)",
                "article: median (quartiles)",
            ),
            ("TV distance of 20,000 first characters to the target's law", "article"),
            ("Acceptance follows draft quality (200 characters, seed fixed)", "acceptance (article)"),
            ("Acceptance follows draft quality (200 characters, seed fixed)", "chars/pass (article)"),
            ("Acceptance follows draft quality (200 characters, seed fixed)", "target passes (article)"),
            (
                "Acceptance at k=8 predicted from k=1 (300-character runs)",
                "article: k=1 / predicted / measured",
            ),
            ("Cost c of one draft character relative to one target step", "article: us (c)"),
            (
                "Verification pass over k+1 positions against one plain step",
                "article (ms ratio to 1 position)",
            ),
            (
                "Speedup over plain cached decoding (ours: median of alternating pairs [confidence interval of the "
                "median]; undecided: the interval contains 1)",
                "article",
            ),
            (
                "Speedup over plain cached decoding (ours: median of alternating pairs [confidence interval of the "
                "median]; undecided: the interval contains 1)",
                "article's prediction",
            ),
        )
    ],
    ARTICLE,
    ARTICLE_HOW,
)
_add(
    "report.text:Validation loss of each model (B",
    f"{RF}::test_second_models_header_and_losses_come_from_its_own_ledger",
    "each ledger's raw B1 reference loss written out",
)
_add(
    "report.text:What does not reproduce on our model (list)",
    f"{AS}::test_not_reproduced_bullets_quote_only_this_runs_figures",
    "every figure a bullet quotes is one of this run's or the article's",
)

# the report's plots
_add(
    (
        "report.plot:quant_bits | per-tensor (ours)",
        "report.plot:quant_bits | per-channel (ours)",
        "report.plot:quant_bits | float32 (ours)",
        "report.plot:quant_sensitivity | ours",
        "report.plot:prune_sparsity | global magnitude (ours)",
        "report.plot:prune_sparsity | per-layer magnitude (ours)",
        "report.plot:prune_sparsity | random (ours)",
        "report.plot:prune_bytes | COO measured",
        "report.plot:prune_bytes | bitmask measured",
        "report.plot:spec_acceptance | * measured",
        "report.plot:spec_acceptance | * X1 prediction",
        "report.plot:spec_speedup | * measured",
        "report.plot:spec_speedup | * predicted (v_k)",
    ),
    (
        f"{AS}::test_plot_series_are_the_ledgers_tables",
        "tests/report/test_plots_figures.py::test_vertical_bars_read_as_positions_and_heights",
    ),
    "the series read back against the raw JSON; the reader against hand-drawn bars and lines",
)
_add(
    (
        "report.plot:quant_bits | bigram (ours)",
        "report.plot:quant_bits | untrained ln 100",
        "report.plot:prune_sparsity | bigram (ours)",
        "report.plot:prune_sparsity | unpruned (ours)",
        "report.plot:prune_sparsity | untrained ln 100",
        "report.plot:prune_bytes | COO: 8(1-s)",
        "report.plot:prune_bytes | bitmask: 4(1-s) + 1/8",
        "report.plot:prune_bytes | int8 dense",
        "report.plot:prune_bytes | float32 dense",
        "report.plot:models_quant_bits | bigram",
        "report.plot:models_quant_bits | untrained ln 100",
        "report.plot:models_prune_sparsity | untrained ln 100",
        "report.plot:models_quant_bits | per-tensor (*)",
        "report.plot:models_quant_bits | per-channel (*)",
        "report.plot:models_prune_sparsity | global magnitude (*)",
        "report.plot:models_prune_sparsity | per-layer magnitude (*)",
        "report.plot:models_prune_sparsity | random (*)",
    ),
    f"{RF}::test_reference_lines_and_overlays_are_the_ledgers_and_closed_forms",
    "ln 100, B1's losses, 4(1-s)+1/8 and 8(1-s) written out; each model's lines from its own raw JSON",
)
_add(
    (
        "report.plot:quant_bits | per-tensor (article)",
        "report.plot:quant_bits | per-channel (article)",
        "report.plot:quant_sensitivity | article (where published)",
        "report.plot:prune_sparsity | global magnitude (article)",
        "report.plot:prune_sparsity | per-layer magnitude (article)",
        "report.plot:prune_sparsity | random (article)",
        "report.plot:spec_acceptance | * article",
        "report.plot:spec_speedup | * article",
        "report.plot:models_quant_bits | per-tensor (published)",
        "report.plot:models_quant_bits | per-channel (published)",
        "report.plot:models_prune_sparsity | * (published)",
    ),
    ARTICLE,
    ARTICLE_HOW + " (drawn from experiments.article.ARTICLE)",
)

# the sweep
_add(
    (
        "report.table:Recipe of each checkpoint | recipe",
        "report.table:Recipe of each checkpoint | schedule (steps)",
        "report.table:Recipe of each checkpoint | stopped (kept)",
        "report.table:Recipe of each checkpoint | val loss",
        "report.table:Recipe of each checkpoint | train loss",
        "report.table:Recipe of each checkpoint | command",
        "report.text:Validation history",
    ),
    "tests/experiments/test_sweep.py::test_sweep_section_renders_the_recipe_sweep",
    "a hand-made point's recipe row and history written out",
)
_add(
    "report.table:Key figures per checkpoint | *",
    f"{WF}::test_key_figure_cells",
    "the sweep file's raw figures written out",
)
_add(
    "report.table:Each claim's margin | *",
    f"{WF}::test_margins_are_their_definitions_and_their_cells_say_which_side",
    "each margin from its definition, and its side of the threshold",
)
_add(
    "report.table:What could make a model fragile | *",
    f"{WF}::test_fragility_cells_and_shares",
    "the raw fragility written out; each share a penalty over the sum of penalties",
)
_add(
    "report.table:S6 and S7 without a clock | *",
    f"{WF}::test_speculative_cells_are_the_formulas_of_chars_per_pass",
    "(cpp - 1) / k and cpp / (1 + k c) with the article's c, written out",
)
_add(
    ("report.plot:sweep_* | *", "report.plot:recipe_* | *"),
    (
        f"{WF}::test_margin_plots_draw_the_points_margins",
        "tests/report/test_multimodel.py::test_sweep_section_marks_where_each_claim_flips",
    ),
    "the lines and bars against each point's margins from their definitions; thresholds 0 and 5",
)

# --- the values the tests show in their measured texts -----------------------------------------
# (tests/common/measured.py resolves the placeholders that name a row's field ({BitsRow.per_tensor}),
# a label ({kind!s}) or a constant; these are the named values: fixtures, locals computed in a
# test, counts of a check's report)
MS = "measured:"
SPEC_T, QUANT_T, PRUNE_T = (
    "tests/claims_on_model/test_speculative.py",
    "tests/claims_on_model/test_quant.py",
    "tests/claims_on_model/test_prune.py",
)
GEN_T, KIT_T = "tests/speculative/test_generator.py", "tests/checks/test_speculative.py"
PEER_T, BENCH_SPEC = "tests/checks/test_peer_transformers.py", "benchmarks/test_spec_speedup.py"
EVAL_HAND = "tests/lm/test_evaluation.py::test_val_loss_of_varied_losses_is_the_float64_mean_of_float32_terms"
BIGRAM_HAND = "tests/lm/test_decoding_laws.py::test_bigram_draft_is_the_hand_count"
REFERENCE_LOSS = (
    QUANT_CELLS,
    "tests/lm/test_evaluation.py::test_val_loss_over_100k_targets_is_exact_with_float64_accumulation",
)
NO_FIGURE = "no figure: "


def _label(names, why: str) -> None:
    """A placeholder that prints no figure of the project (a parametrized
    k, the test's own CPU seconds, a text with no measurement): no test,
    the reason instead, shown in docs/figures.md."""
    for name in (names,) if isinstance(names, str) else names:
        assert name.startswith(MS), f"only a measured placeholder can be a label: {name}"
        assert name not in CHECKS, f"two entries for {name}"
        CHECKS[name] = Check((), NO_FIGURE + why)


_add(
    (f"{MS}{QUANT_T}::* | bigram", f"{MS}{PRUNE_T}::* | bigram"),
    (BIGRAM_HAND, EVAL_HAND),
    "the bigram's val loss (the B1 fixture): its law against a hand count; val_loss against a hand float64 mean",
)
_add(
    f"{MS}{QUANT_T}::* | float32",
    REFERENCE_LOSS,
    "the reference's val loss (B1's reference, Q4's float32): val_loss against closed forms",
)
_add(
    (
        f"{MS}{QUANT_T}::test_int8_loss_within_0p01_of_float32 | per_tensor",
        f"{MS}{QUANT_T}::test_int8_loss_within_0p01_of_float32 | per_channel",
    ),
    (f"{QF}::test_bits_rows_are_the_losses_of_torch_fake_quantized_models", *REFERENCE_LOSS),
    "the 8-bit penalty: a row:BitsRow loss (torch fake-quantized models) minus the float32 loss, "
    "both checked; the difference is written in the test",
)
_add(
    [
        f"{MS}{QUANT_T}::test_int8_storage_is_the_articles_figures_exactly | {e}"
        for e in (
            "weights",
            "weights_mb",
            "int8_mb",
            "parameters",
            "parameters_mb",
            "quantized_mb",
            "per_channel_mb",
            "cut_pc",
        )
    ],
    f"{QUANT_T}::test_int8_storage_is_the_articles_figures_exactly",
    "hand counts in the test: 631,808 weights, 637,156 parameters, 4 bytes each in float32, one code byte "
    "a weight plus 15 (per-tensor) or 3,784 (per-channel) float32 scales plus the float32 rest; "
    "the per-channel cut 73.8%",
)
_add(
    f"{MS}{PRUNE_T}::test_bytes_per_element_table_is_exact | int8",
    f"{PRUNE_T}::test_bytes_per_element_table_is_exact",
    "the hand count {values: 1, with_scales: 1 + 4 x 3,784 / 631,808} (one float32 scale per output row)",
)
_add(
    f"{MS}{PRUNE_T}::test_magnitude_pruning_beats_random_from_10_to_70pct | magnitude",
    f"{PF}::test_loss_rows_are_the_losses_of_models_pruned_by_hand",
    "the larger of two row:LossRow losses (each a hand-pruned model's loss), Python's max",
)
_add(
    f"{MS}{PRUNE_T}::test_random_pruning_at_20pct_is_closer_to_untrained_than_to_bigram | midpoint",
    (BIGRAM_HAND, "tests/lm/test_ngram.py::test_uniform_predictor_scores_ln_of_the_vocabulary_size"),
    "(bigram + ln V) / 2 written in the test, from the bigram's checked loss and the closed form ln V",
)
_add(
    f"{MS}{PRUNE_T}::test_random_pruning_at_5pct_is_worse_than_the_bigram | first",
    f"{PF}::test_first_sparsity_above_is_the_smallest_sparsity_over_the_level_in_any_order",
    "first_sparsity_above on hand-made rows out of order: the smallest sparsity above the level, "
    "strictly above, None when none is",
)
_add(
    (
        f"{MS}{PRUNE_T}::test_global_magnitude_beats_per_layer_at_30pct | glob",
        f"{MS}{PRUNE_T}::test_global_magnitude_beats_per_layer_at_30pct | layer",
    ),
    f"{PF}::test_loss_rows_are_the_losses_of_models_pruned_by_hand",
    "the loss curve at 30% global / per-layer: the curve's losses against models pruned by hand sorts",
)
_add(
    f"{MS}{SPEC_T}::test_drafts_are_the_bigram_and_the_8bit_and_4bit_reference | value",
    (EVAL_HAND, BIGRAM_HAND, f"{SPEC_T}::test_drafts_are_the_bigram_and_the_8bit_and_4bit_reference"),
    "each draft's val loss: val_loss against a hand float64 mean, of drafts the test rebuilds "
    "(the bigram's table, torch-checked fake-quantized weights)",
)
_add(
    f"{MS}{SPEC_T}::test_same_seed_gives_same_text_and_statistics | passes",
    "tests/speculative/test_generator.py::test_generator_bookkeeping_and_logits_hold_on_any_run",
    "the generator's passes: passes + accepted = characters on any run, and ceil(n / (k + 1)) "
    "when every draft is accepted",
)
_add(
    (
        f"{MS}{GEN_T}::test_joint_law_of_first_three_symbols_is_the_targets | statistic",
        f"{MS}{GEN_T}::test_joint_law_of_first_three_symbols_is_the_targets | dof",
        f"{MS}{GEN_T}::test_joint_law_of_first_three_symbols_is_the_targets | p_value",
    ),
    (
        "tests/test_stats.py::test_chisquare_pooling_matches_a_hand_written_pooling",
        "tests/test_stats.py::test_chisquare_rejects_exactly_beyond_the_closed_form_critical_value",
    ),
    "the kit's chi-square: pooling, statistic, dof and p-value against a hand-written pooling, "
    "scipy.stats.chisquare and the closed-form critical value",
)
_add(
    f"{MS}{GEN_T}::test_verification_logits_equal_plain_decoding_across_window_moves | diff",
    f"{GEN_T}::test_verification_logits_equal_plain_decoding_across_window_moves",
    "torch's max |a - b| of the rule's logits and plain decoding's, recomputed in the test; "
    "assert_close bounds the same difference",
)
_add(
    f"{MS}{GEN_T}::test_verification_logits_equal_plain_decoding_across_window_moves | n",
    f"{GEN_T}::test_verification_logits_equal_plain_decoding_across_window_moves",
    "the positions plain cached decoding scores in the test, one per emitted token after the "
    "prompt: the shapes asserted equal (n, V) for the rule's logits and plain decoding's",
)
_add(
    (
        f"{MS}{'tests/claims_on_model/test_teeth.py'}::test_first_character_check_catches_always_accept_on_the_reference"
        " | tv",
        f"{MS}{'tests/claims_on_model/test_teeth.py'}::test_first_character_check_catches_always_accept_on_the_reference"
        " | bound",
    ),
    (
        "tests/test_stats.py::test_empirical_tv_of_known_samples",
        "tests/test_stats_skewed.py::test_tv_threshold_of_a_skewed_null_is_its_mean_plus_the_margin",
    ),
    "the kit's TV of the samples (against known samples) and its threshold (mean of a skewed null "
    "plus sqrt(ln(1/alpha)/(2n)), hand-worked)",
)
_add(
    (f"{MS}{GEN_T}::test_greedy_speculative_text_equals_greedy_plain_text | drafts",),
    f"{SPEC_T}::test_drafts_are_the_bigram_and_the_8bit_and_4bit_reference",
    "the drafts the suite builds: the test rebuilds each of them by hand",
)
_add(
    (
        f"{MS}{'tests/quant/test_primitives.py'}::"
        "test_fake_quantize_equals_pytorch_on_reference_weights_but_for_exact_ties | apart",
        f"{MS}{'tests/quant/test_primitives.py'}::"
        "test_fake_quantize_equals_pytorch_on_reference_weights_but_for_exact_ties | total",
    ),
    "tests/quant/test_primitives.py::test_fake_quantize_equals_pytorch_on_reference_weights_but_for_exact_ties",
    "elements where ours differs from torch.fake_quantize_per_{tensor,channel}_affine, counted element "
    "by element; the total is the hand count 631,808 x 7 widths x 2 granularities",
)
# the kit's reports: "N checks, M failures"
_add(
    (
        f"{MS}{'tests/speculative/test_rule.py'}::test_each_emitted_character_follows_p_on_the_kits_battery"
        " | failures",
        f"{MS}{PEER_T}::* | failures",
        f"{MS}{KIT_T}::test_kit_catches_every_zoo_variant_at_the_default_settings | failures",
    ),
    ("tests/checks/test_rule_battery.py::test_a_failed_row_is_a_failure_with_or_without_a_detail",),
    "one failure line per failed row (a hand-made report); the tests assert passed (no failure) "
    "or not passed beside the figure",
)
_add(
    (
        f"{MS}{'tests/speculative/test_rule.py'}::test_each_emitted_character_follows_p_on_the_kits_battery"
        " | checks",
        f"{MS}{PEER_T}::* | checks",
        f"{MS}{KIT_T}::test_kit_catches_every_zoo_variant_at_the_default_settings | checks",
    ),
    (
        f"{KIT_T}::test_default_battery_splits_alpha_over_its_tests",
        "tests/checks/test_rule_battery.py::test_the_default_battery_runs_each_test_at_alpha_over_83",
    ),
    "the rows' count against the battery's structure: an outputs row per case, an acceptance "
    "row per drafted position, support, chi-square and TV per position reached; 83 statistical "
    "tests by hand count",
)
# timings: the pairs behind a paired timing, the decision's settings
_add(
    (
        "measured:benchmarks/test_*.py::* | pairs",
        *(
            f"measured:benchmarks/test_sparse_two_four_cuda.py::* | {f}"
            for f in ("median", "ci_low", "ci_high")
        ),
    ),
    PAIRED,
    PAIRED_HOW + "; the number of pairs is the ratios' count on the fake clock",
)
_add(
    "measured:benchmarks/test_quant_fake_speed.py::* | alpha",
    "tests/timing/test_sequential.py::test_each_interval_is_at_alpha_over_looks_times_ratios",
    "the decision's family alpha, split over looks and ratios as the test works out",
)
_add(
    (
        f"{MS}{BENCH_SPEC}::test_bigram_draft_is_faster_than_plain_decoding | looks",
        f"{MS}{BENCH_SPEC}::_picked | looks",
    ),
    (
        "tests/timing/test_sequential.py::test_look_schedule_doubles",
        "tests/timing/test_sequential.py::test_a_judgement_keeps_its_first_verdict_while_another_needs_more_looks",
    ),
    "the looks taken: the schedule and the stop worked out on fake clocks",
)
_add(
    (
        f"{MS}{BENCH_SPEC}::test_speedup_formula_never_underrates_the_measured_speedup | share",
        "report.table:Speedup over plain cached decoding (ours: median of alternating pairs "
        "[confidence interval of the median]; undecided: the interval contains 1) | "
        "ours: share (measured / (v_k+kc))",
    ),
    f"{UF}::test_share_is_the_speedup_over_the_prediction_with_v_k",
    "SpeedupRow.share: the measured speedup over cpp / (v_k + k c) of checked figures, written out",
)
_add(
    tuple(
        f"{MS}{BENCH_SPEC}::_targets | {f}{end}"
        for f in ("share", "speedup")
        for end in ("", "_low", "_high")
    ),
    f"{UF}::test_target_figures_invert_each_ratio_and_name_the_verdict",
    "target_figure: one over the named ratio's median, its range one over the interval's high "
    "end to one over its low end, on hand-made timings of two different ratios; the share's "
    "ratio is the loop over its charge, whose calls tests/experiments/test_speedup_decodings.py "
    "counts",
)
_add(
    (f"{MS}{BENCH_SPEC}::_targets | share_pairs", f"{MS}{BENCH_SPEC}::_targets | speedup_pairs"),
    PAIRED,
    PAIRED_HOW + "; the number of pairs is the ratios' count on the fake clock",
)
_add(
    (
        f"{MS}{BENCH_SPEC}::test_speedup_formula_matches_quantized_drafts_within_0p05 | gap",
        f"{MS}{BENCH_SPEC}::test_charging_verification_its_cost_fits_the_speedups_better | err_article",
        f"{MS}{BENCH_SPEC}::test_charging_verification_its_cost_fits_the_speedups_better | err_vk",
    ),
    f"{UF}::test_speedup_rows_invert_the_ratio_and_apply_both_formulas",
    "|prediction - speedup| of checked row:SpeedupRow figures, its mean over rows written in the test",
)
_add(
    (
        f"{MS}{BENCH_SPEC}::test_charging_verification_its_cost_fits_the_speedups_better | low",
        f"{MS}{BENCH_SPEC}::test_charging_verification_its_cost_fits_the_speedups_better | high",
    ),
    (
        "tests/experiments/test_speedup_rules.py::test_fit_gain_sum_of_point_cells_is_the_hand_worked_error_difference",
        "tests/experiments/test_speedup_rules.py::test_fit_gain_range_bounds_the_gain_over_its_box",
    ),
    "the summed gain bounds: exact on hand-worked point cells (0.5); each cell's range against "
    "400 points and the corners of its box",
)

RA_T = "tests/experiments/test_round_account.py"
_add(
    tuple(
        f"{MS}{BENCH_SPEC}::_accounts | {f}"
        for f in (
            "accounted",
            "low",
            "high",
            "draft_share",
            "verify_share",
            "rule_share",
            "rest_share",
            "pairs",
        )
    ),
    f"{RA_T}::test_an_account_of_the_loops_whole_time_is_explained_and_sums_the_medians",
    "account_row on a fake clock: each share the median of its recorded ratios, the account "
    "their sum and its interval the sums of the ends, computed in the test; the pairs the "
    "ratios' count; what the parts replay is the loop's own work (the same test file)",
)
_add(
    tuple(
        f"{MS}{BENCH_SPEC}::_accounts | {f}"
        for f in ("verification", "drafting", "charged", "bookkeeping", "unaccounted")
    ),
    f"{RA_T}::test_round_costs_put_each_part_per_target_pass_in_plain_steps",
    "round_costs on a hand-worked cell: shares times cpp / speedup, k c from the row's c",
)
_label(
    f"{MS}{BENCH_SPEC}::_accounts | k",
    "the k the speedup decision's medians picked, a value of its grid (SPEEDUP_KS)",
)
_label(f"{MS}{GEN_T}::* | k", "the parametrized k, a value of the test's grid")
_label(
    (f"{MS}{BENCH_SPEC}::_picked | best_k", f"{MS}{BENCH_SPEC}::_picked | ngram_k"),
    "the k the speedup decision's medians picked, a value of its grid (SPEEDUP_KS)",
)
_label(
    "measured:benchmarks/test_quant_int8_linear.py::* | key",
    "the number of rows of each ratio, a value of the benchmark's grid ROWS",
)
_label(
    f"{MS}{PEER_T}::test_hf_rule_passes_the_statistical_battery_at_the_default_power | cpu",
    "the test's own CPU seconds (time.process_time), how long the battery took; not a figure "
    "of a model or a claim",
)
_add(
    (
        f"{MS}{PEER_T}::test_float32_logits_equal_up_to_rounding_often_give_p_below_q_everywhere | pairs",
        f"{MS}{PEER_T}::test_float32_logits_equal_up_to_rounding_often_give_p_below_q_everywhere | worst",
    ),
    f"{PEER_T}::test_float32_logits_equal_up_to_rounding_often_give_p_below_q_everywhere",
    "a property of torch's float32 softmax computed in the test itself (no project code in it): "
    "the pairs with p <= q everywhere and the largest sum(q - p)",
)
_label(
    f"{MS}{'tests/claims_on_model/test_teeth.py'}::test_joint_law_check_catches_a_draft_scored_at_another_temperature"
    " | 'q at temperature 1 for drafts sampled at 0.3: caught by joint law'",
    "the broken variant's settings (temperatures 1 and 0.3), written in the test; no measurement",
)
