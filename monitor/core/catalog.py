"""Every measure a run stores and every rule that flags, declared once.

A :class:`Measure` names one number of a run in one scope (``worker``, ``item``, ``pair``,
``campaign``, ``annotation``): which kinds of campaign have it, its title and meaning for the
report, what its value, interval, count and detail hold (``docs/store-values.md`` is generated
from these), whether an incremental run gives it only to within a tolerance (``approximate``),
whether the next run starts from it (``warm``), whether the report draws its trend, whether it
is a worker's history on the platform, and under which key the JSON document shows it.

A :class:`Rule` names one flag: its scope, the kinds it applies to, its title for the report,
the measures it reads and the thresholds (settings) it reads, and whether the automatic policy
acts on it.

Every list the code used to keep in step by hand (what a warm start reads, which item columns
may be stored approximately, which flags the policy acts on, which campaign flags are warnings,
the report's titles and meanings, the trends, the history) is derived here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """The kind of judgment a campaign collects (CONTRACT.md section 1)."""

    RATING = "rating"
    LABEL = "label"
    MULTILABEL = "multilabel"
    PAIRWISE = "pairwise"


class Scope(StrEnum):
    """What a value or a flag is about."""

    CAMPAIGN = "campaign"
    WORKER = "worker"
    ITEM = "item"
    PAIR = "pair"
    ANNOTATION = "annotation"


ALL = frozenset(Kind)
ABSOLUTE = frozenset({Kind.RATING, Kind.LABEL, Kind.MULTILABEL})
"""The kinds whose units are items (not pairs)."""
SCALAR = frozenset({Kind.RATING, Kind.LABEL})
"""The kinds with one answer per judgment."""
MODELLED = ALL
"""The kinds with a reliability model (every kind)."""
GOLD = frozenset({Kind.RATING, Kind.LABEL, Kind.PAIRWISE})
"""The kinds whose items' gold values give workers a gold accuracy."""
RATING = frozenset({Kind.RATING})
LABEL = frozenset({Kind.LABEL})
PAIRWISE = frozenset({Kind.PAIRWISE})


@dataclass(frozen=True)
class Measure:
    """One stored number of a run (``docs/store-values.md``)."""

    name: str
    scope: Scope
    kinds: frozenset[Kind]
    value: str
    """What the value is (``None`` = undefined, with ``detail.reason``)."""
    interval: str = ""
    """What ``low``/``high`` hold, where they exist."""
    n: str = ""
    """What ``n`` counts."""
    detail: str = ""
    """The keys of ``detail``."""
    title: str = ""
    """Its name for a reader (the report's tables)."""
    meaning: str = ""
    """One sentence for a reader: what it says (the report's "what it means")."""
    approximate: bool = False
    """An iteration, a quadrature or a local update gives it to within a tolerance anyway: an
    incremental run may store it as float32 changes (``monitor.store.column_deltas``)."""
    warm: bool = False
    """The next run starts its iteration from this run's value."""
    trend: bool = False
    """The report draws it over runs."""
    history: bool = False
    """A worker's value in the platform's other campaigns is read as their history."""
    converges: bool = False
    """An iteration count whose detail says whether it converged (the report warns when it
    did not)."""
    key: str | None = None
    """Its key in the JSON document's rows of its scope (workers, items, pairs); None where
    the rows do not show it (or show it in a shape of their own)."""
    shows_interval: bool = False
    """The rows also show ``[low, high]`` as ``<key>_interval``."""


@dataclass(frozen=True)
class Rule:
    """One flag a run can raise (``monitor.rules``)."""

    name: str
    scope: Scope
    kinds: frozenset[Kind]
    title: str
    """What it says of the subject, in a few words (the report's flag titles)."""
    reads: tuple[str, ...]
    """The measures (of its scope, or of the campaign) it reads."""
    thresholds: tuple[str, ...]
    """The settings it reads (``monitor.rules.Thresholds``)."""
    acts: bool = False
    """The automatic policy acts on it (worker rules only)."""


_C, _W, _I, _P, _A = Scope.CAMPAIGN, Scope.WORKER, Scope.ITEM, Scope.PAIR, Scope.ANNOTATION
_LEVEL = "`level`, `D_o`, `D_e`"

# fmt: off
MEASURES: tuple[Measure, ...] = (
    # --- campaign -------------------------------------------------------------------------
    Measure("n_workers", _C, ALL, "workers with at least one judgment"),
    Measure("n_items", _C, ALL, "items with at least one judgment"),
    Measure("n_judgments", _C, ALL, "judgments counted"),
    Measure("percent_agreement", _C, ALL, "mean over items (pairs) with >= 2 judgments",
            n="items", detail="`pooled`, `n_pairs`; `unit` (pairwise)", trend=True,
            title="Percent agreement",
            meaning="Share of agreeing pairs of judgments per item, averaged; not corrected "
            "for chance."),
    Measure("krippendorff_alpha", _C, ALL,
            "at the campaign's level (nominal on pair outcomes; multi-label: over the sets at "
            "the `set_distance`, MASI or Jaccard)",
            interval="bootstrap 95%", n="pairable values",
            detail=_LEVEL + " (`masi` or `jaccard` over sets, with `sets`: distinct sets)",
            trend=True,
            title="Krippendorff's alpha",
            meaning="Agreement beyond chance at the campaign's level: 1 perfect, 0 chance; "
            ">= 0.8 reliable, >= 0.667 tentative."),
    Measure("krippendorff_alpha_nominal", _C, frozenset({Kind.RATING, Kind.LABEL, Kind.PAIRWISE}),
            "alpha at the nominal level", n="pairable values", detail=_LEVEL),
    Measure("krippendorff_alpha_ordinal", _C, SCALAR,
            "alpha at the ordinal level (ratings; ordinal labels)", n="pairable values",
            detail=_LEVEL),
    Measure("krippendorff_alpha_interval", _C, RATING, "alpha at the interval level",
            n="pairable values", detail=_LEVEL),
    Measure("krippendorff_alpha_ratio", _C, RATING,
            "alpha at the ratio level (scales from 0 with few values)", n="pairable values",
            detail=_LEVEL),
    Measure("fleiss_kappa", _C, ALL, "Fleiss' kappa (the same number of raters per item)",
            interval="bootstrap 95%", n="items",
            detail="`P_bar`, `P_e`, `raters_per_item` or `reason`", trend=True,
            title="Fleiss' kappa",
            meaning="Chance-corrected agreement of many raters on categories (same number per "
            "item)."),
    Measure("cohen_kappa", _C, ALL, "two-worker campaigns", interval="bootstrap 95%",
            n="items", detail="`p_o`, `p_e` or `reason`", title="Cohen's kappa",
            meaning="Chance-corrected agreement of the two workers, each with their own answer "
            "shares."),
    Measure("cohen_kappa_linear", _C, SCALAR, "two-worker campaigns, linear weights",
            n="items", detail="`p_o`, `p_e`"),
    Measure("cohen_kappa_quadratic", _C, SCALAR, "two-worker campaigns, quadratic weights",
            n="items", detail="`p_o`, `p_e`"),
    Measure("scott_pi", _C, ALL, "two-worker campaigns", interval="bootstrap 95%", n="items",
            detail="`p_o`, `p_e` or `reason`", title="Scott's pi",
            meaning="Like Cohen's kappa, with the two workers' answer shares pooled."),
    Measure("phi", _C, RATING, "posterior mean (MAP with `phi = map`)", interval="95% HPD",
            n="items", trend=True,
            detail="`map`, `median`, `method`, `reading`, `rhat`, `ess`, `divergences`, "
            "`prior`, `mapping`",
            title="Phi (Checco et al.)",
            meaning="Bayesian agreement of ratings under a Beta model: 1 perfect, 0 as random, "
            "< 0 systematic disagreement."),
    Measure("crowdtruth_iterations", _C, ALL,
            "iterations (of the items with new judgments, in a local update)",
            detail="`converged`, `warm_start`; a local update adds `local_units` (the items it "
            "updated) and `drift` (the workers' WQS moves summed since the last run over every "
            "item)",
            title="CrowdTruth", converges=True),
    Measure("codetermination_iterations", _C, SCALAR, "co-determination rounds",
            detail="`converged`, `max_change` (of the last round)",
            title="Co-determination of truths and worker weights", converges=True),
    Measure("transitivity_kappa", _C, PAIRWISE, "pooled over annotators", n="triplets",
            detail="`p_e`, `p_a`", title="Transitivity kappa",
            meaning="Self-consistency of the annotators' preferences: 1 no cycles, 0 as random "
            "answers."),
    Measure("preference_design", _C, PAIRWISE,
            "annotators who closed a triangle (transitivity measurable)", n="annotators",
            detail="`annotators_with_triplets`, `annotators`, `pairs`, `pairs_judged_again`, "
            "`transitivity`, `pair_agreement`, `message` (which signals the design supports)"),
    Measure("model_iterations", _C, MODELLED,
            "iterations of the reliability model (EM; L-BFGS for preferences)",
            detail="`model` (`dawid_skene`, `rating_model`, `multilabel_model`, "
            "`preference_model`), `converged`, `warm_start`, `log_likelihood`; preferences: "
            "`crowd_accuracy`, `crowd_bias_sd`, `crowd_tie_propensity`"),
    Measure("model_chance", _C, MODELLED,
            "what a random or constant answerer reaches: accuracy (labels: max class prior; "
            "multi-label: 0.5; preferences: 0.5, or with ties the median annotator's floor) or "
            "noise sd (ratings)",
            detail="`measure` (`accuracy` or `noise_sd`), `classes`, `floor`"),
    Measure("export_quality", _C, MODELLED,
            "how good `monitor export labels` is expected to be: labels and multi-label sets, "
            "the expected share of items whose exported answer is right (`accuracy`); "
            "preferences, of pairs of ranked items the ranking orders right (`pair_accuracy`); "
            "ratings, the expected mean absolute error of the exported values (`mae`)",
            interval="95% interval: the model's uncertainty (labels: the workers' accuracies "
            "drawn from their posteriors) and the items' sampling",
            n="items scored",
            detail="`measure`, `model_sd`, `items_sd`, `of`",
            title="Expected export quality",
            meaning="How good the exported answers are expected to be, from the reliability "
            "model."),
    Measure("export_gold", _C, SCALAR,
            "how good `monitor export labels` is on the campaign's gold, each gold item answered "
            "by the model refitted with that item's gold withheld (5 folds): labels, the share "
            "right (`accuracy`); ratings, the mean absolute error (`mae`); undefined, saying "
            "why, where gold is on fewer judged items than `export_gold_min_items`",
            interval="95% interval: Wilson's (labels) or a bootstrap over the gold items "
            "(ratings)",
            n="gold items scored",
            detail="`measure`, `basis` (`gold`), `min_items`, `folds`",
            title="Export quality on gold",
            meaning="How often the exported answer is right on gold it did not learn from."),
    Measure("stop_savings", _C, ABSOLUTE,
            "the judgments the stops save in all: the sum of the workers' `stop_saved`",
            n="workers stopped", detail="`remaining` (the judgments the items still want: "
            "the sum of `need`)"),
    Measure("stop_recollect", _C, ABSOLUTE,
            "the items that want judgments again because the stopped workers' answers no "
            "longer count (their `need` is 0 with them, above 0 without)",
            n="the judgments those items want", detail="`judgments`"),
    Measure("stop_line", _C, ALL,
            "the accuracy below which a worker is stopped: where an answer carries `stop_share` "
            "of the information of the typical worker's, and at least `stop_margin` below it "
            "(multi-label sets: the model's accuracy over the options; ratings: the mean "
            "squared error bias^2 + noise^2 above which a rater is stopped, the typical "
            "rater's / `stop_share`, and at least (1 + `stop_margin`)^2 times it)",
            detail="`typical` (the median accuracy, or mean squared error, of the workers with "
            "`model_min_judgments`), `alpha`, `share`, `margin`, `classes` (ratings: `measure` "
            "`mse`)"),
    Measure("model_fallback", _C, RATING,
            "1 where the rating model does not predict held-out judgments better than the "
            "plain mean by more than 1.645 standard errors of the difference (5-fold over "
            "judgments): the exports then give the plain mean; else 0",
            detail="`model_mse`, `plain_mse` (mean squared error of the held-out judgments "
            "against each), `diff_se` (standard error of their difference, clustered by "
            "item), `n` (held-out judgments), `folds`, `message`"),
    Measure("model_scale_width", _C, RATING,
            "max - min of the rating scale (for the `biased` rule)"),
    Measure("distinct_answers", _C, frozenset({Kind.RATING, Kind.LABEL, Kind.PAIRWISE}),
            "different answers in the campaign (preferences: the order of the pair, or a tie); "
            "1: everyone gave the same answer and no worker can be told from another",
            n="answers"),
    Measure("gold_chance", _C, GOLD,
            "what a constant answerer reaches on the gold items: max(1/K, top gold share) or "
            "the credit of always answering the gold median",
            n="gold items judged", detail="`level`, `gold_judgments`"),
    # --- worker ---------------------------------------------------------------------------
    Measure("n_judgments", _W, ALL, "judgments", history=True,
            title="Judgments", key="n_judgments"),
    Measure("wqs", _W, ALL, "CrowdTruth 2.0 worker quality", n="units", warm=True,
            title="WQS", key="wqs"),
    Measure("wwa", _W, ALL, "CrowdTruth 2.0 worker-worker agreement", n="units",
            title="WWA", key="wwa"),
    Measure("wua", _W, ALL, "CrowdTruth 2.0 worker-unit agreement", n="units",
            title="WUA", key="wua"),
    Measure("agreement_loo", _W, ALL, "agreement with the others' aggregate (leave one out)",
            n="items", title="Agreement (LOO)", key="agreement_loo"),
    Measure("weight", _W, SCALAR, "co-determination weight",
            title="Co-determination weight", key="quality_weight"),
    Measure("transitivity_kappa", _W, PAIRWISE, "intraobserver kappa",
            interval="Wilson 95% on the effective triplets", n="triplets",
            detail="`effective_triplets`, `p_a`, `p_e`, `triplets`, `transitive`, `pairs`, "
            "`kappa_weak`, "
            "`kappa_strict`, `has_ties`, `repeated_pairs`, `retest`, `implied_pairs`, "
            "`n_cycles`, `cycles` (first 50), `reason`"),
    Measure("tie_rate", _W, PAIRWISE, "share of ties", n="judgments",
            title="Tie rate", key="tie_rate"),
    Measure("position_bias", _W, PAIRWISE, "share of \"left\" among strict answers",
            n="strict answers", detail="`p_value`, `n_left`",
            title="Share \"left\"", key="position_bias"),
    Measure("constant_answer", _W, frozenset({Kind.RATING, Kind.LABEL, Kind.PAIRWISE}),
            "share of the worker's answers that are their commonest one (label, rating, side "
            "or tie)", n="answers",
            detail="`answer`, `count`, `expected` (what the others' answers on the same "
            "questions give), `p_value` (exact Poisson-binomial upper tail)"),
    Measure("side_test", _W, PAIRWISE,
            "share of \"left\" among strict answers, tested against the other annotators' "
            "choices on the same pairs in the same order", n="strict answers",
            detail="`n_left`, `expected_left`, `p_value` (exact two-sided Poisson-binomial)"),
    Measure("decision", _W, ALL,
            "what to do with the worker (`monitor.rules.decision`): the weight it gives (block "
            "0, down_weight its weight, else 1)", n="judgments",
            detail="`decision` (block, down_weight, watch, cannot_tell, ok), `reason` (one "
            "line for the worker), `evidence`"),
    Measure("mean_duration_s", _W, ALL, "mean seconds per judgment",
            n="judgments with a duration", title="Seconds per judgment", key="mean_duration_s"),
    Measure("model_accuracy", _W, MODELLED,
            "expected accuracy under the reliability model (multi-label: mean balanced "
            "accuracy over options; preferences: the expected share of answers along the "
            "true order of the pair, a tie wrong, judged through the leave-one-out consensus "
            "and its chance of being right)",
            interval="95%", n="judgments", history=True,
            title="Model accuracy", key="model_accuracy",
            shows_interval=True),
    Measure("model_noise_sd", _W, RATING, "the rater's noise sd s_j",
            interval="chi-square 95%", n="judgments", history=True,
            title="Noise sd", key="model_noise_sd",
            shows_interval=True),
    Measure("model_bias", _W, RATING, "the rater's bias b_j (mean 0 over raters)",
            interval="+- 1.96 s_j / sqrt(n + 1)", n="judgments", title="Bias", key="model_bias"),
    Measure("model_chance_sd", _W, RATING, "noise sd of the same answers shuffled across items"),
    Measure("model_floor_sd", _W, RATING, "(1 - quality_margin) x `model_chance_sd`"),
    Measure("model_weight", _W, MODELLED, "weight in [0, 1] above chance (docs/exports.md)",
            title="Model weight", key="model_weight"),
    Measure("model_worker_chance", _W, frozenset({Kind.LABEL, Kind.PAIRWISE}),
            "the accuracy of the worker's answers shuffled across items (their own chance; "
            "preferences: what they reach answering at random with their own tie rate)"),
    Measure("stop_evidence", _W, ALL,
            "the evidence that the worker is right less often than the campaign's `stop_line` "
            "(ratings: misses by more): an e-value, the largest wealth of a bettor against \"at "
            "or above the line\" over their judgments, each scored once as it arrived against "
            "the answers before it or its gold (labels, ratings, multi-label sets: the live "
            "path's frozen scores), or against the others' answers (preferences: the larger of "
            "its and the side's test's, over 2) (1 = none, at most 10^12; docs/live.md)",
            n="judgments scored"),
    Measure("stop_saved", _W, ABSOLUTE,
            "the judgments stopping the worker saves: their share of the campaign's judgments "
            "up to their stop (their pace) times the judgments the items still want (the sum "
            "of `need`)",
            n="judgments scored when stopped"),
    Measure("stop_after", _W, ALL,
            "the judgments scored when `stop_evidence` first reached 1 / `stop_alpha`: the worker "
            "is right less often than the stop line (ratings: misses by more), wrongly said with "
            "probability at most `stop_alpha` (only for such workers)",
            n="judgments scored"),
    Measure("stop_side", _W, PAIRWISE,
            "the share of the left item among the annotator's strict answers up to their stop, "
            "where the test of a side picked whatever the items stopped them (docs/live.md)",
            n="strict answers"),
    Measure("model_position_bias", _W, PAIRWISE,
            "the annotator's pull toward the left slot, log-odds (0: none)", interval="95%",
            n="strict answers", title="Position bias (model)", key="model_position_bias",
            shows_interval=True),
    Measure("model_tie_propensity", _W, PAIRWISE,
            "the probability the annotator calls two equal items a tie", interval="95%",
            n="judgments", title="Tie propensity", key="model_tie_propensity",
            shows_interval=True),
    Measure("gold_accuracy", _W, GOLD,
            "share correct on gold (nominal) or mean distance credit 1 - |x - g| / width",
            interval="Wilson 95%", n="gold judgments", history=True,
            title="Gold accuracy", key="gold_accuracy",
            shows_interval=True),
    Measure("gold_mae", _W, RATING, "mean absolute error on gold", n="gold judgments",
            title="Gold MAE", key="gold_mae"),
    # --- item -----------------------------------------------------------------------------
    Measure("n_judgments", _I, ALL, "judgments", detail="`answers` {value: count}",
            title="Judgments", key="n_judgments"),
    Measure("uqs", _I, ABSOLUTE, "CrowdTruth unit quality", approximate=True, warm=True,
            title="UQS", key="uqs"),
    Measure("uas", _I, ABSOLUTE, "NULL", detail="{annotation: score} in `scores`",
            approximate=True, warm=True),
    Measure("percent_agreement", _I, SCALAR, "per-item agreement",
            title="Agreement", key="percent_agreement"),
    Measure("phi_mu", _I, RATING, "posterior mean of the item on the rating scale",
            interval="95% interval", approximate=True,
            title="Phi μ", key="phi_mu", shows_interval=True),
    Measure("score", _I, PAIRWISE,
            "log-strength under the reliability model (Crowd-BT with Davidson's ties)",
            interval="95% (Laplace)", n="comparisons", detail="`se`", warm=True,
            title="Score", key="score",
            shows_interval=True),
    Measure("model_label", _I, frozenset({Kind.LABEL, Kind.MULTILABEL}),
            "labels: posterior of the posterior label; multi-label: the smallest "
            "max(p, 1 - p) over options",
            n="judgments", detail="`posterior` {category or option: probability}",
            approximate=True),
    Measure("need", _I, ABSOLUTE,
            "how many more judgments the item wants: 0 once the posterior of its exported "
            "answer, without the stopped workers' answers, reaches `overlap_confidence` with "
            "`min_overlap` judgments (multi-label: of each option's present or absent; "
            "ratings: that the truth lies within `overlap_tolerance` of the exported value, "
            "each rating worth the typical rater's bias^2 + noise^2, or the item's own spread "
            "where wider); else what lifts it there at the typical worker's accuracy (error), "
            "at least up to `min_overlap`, never past `max_overlap` in all (gold items: up to "
            "`min_overlap`)",
            n="judgments that count (the stopped workers' left out)"),
    Measure("majority_disputed", _I, LABEL,
            "1 where the plain vote is tied at the top or picks another label than the model, "
            "else 0",
            n="judgments"),
    Measure("model_mean", _I, RATING, "posterior mean", interval="+- 1.96 sd", n="judgments",
            approximate=True, warm=True, title="Model mean", key="model_mean", shows_interval=True),
    Measure("model_sd", _I, RATING, "its posterior sd", approximate=True,
            title="Model sd", key="sd"),
    Measure("model_spread", _I, RATING, "sd of the bias-corrected judgments", n="judgments",
            approximate=True, title="Spread", key="spread"),
    Measure("model_expected_spread", _I, RATING, "the spread the judges' noise explains",
            approximate=True, title="Spread from noise", key="expected_spread"),
    Measure("model_spread_p", _I, RATING, "chi-square p of the spread against the noise",
            approximate=True, title="Spread p", key="spread_p"),
    # --- pair -----------------------------------------------------------------------------
    Measure("n_judgments", _P, PAIRWISE, "judgments of the pair (latest per annotator)",
            detail="`answers` {outcome: count}, `left`, `right`",
            title="Judgments", key="n_judgments"),
    Measure("uqs", _P, PAIRWISE, "CrowdTruth unit quality of the pair", warm=True,
            title="UQS", key="uqs"),
    Measure("uas", _P, PAIRWISE, "NULL", detail="{outcome: score} in `scores`"),
    Measure("model_split_p", _P, PAIRWISE,
            "p-value: neither order explains the split of the pair's strict answers, given "
            "each annotator's reliability (exact Poisson-binomial test)",
            n="strict answers",
            detail="`q_value` (Benjamini-Hochberg), `against`, `expected_against`, `ties`, "
            "`gold`, `left`, `right`, `first_interval` (95% Wilson interval of the share "
            "preferring `left`)"),
    Measure("need", _P, PAIRWISE,
            "how many more judgments the pair wants: 0 once the posterior of its exported "
            "order (the scores'), its strict answers each counted as from an annotator right "
            "as often as the crowd's median on strict answers and the stopped annotators' left "
            "out, reaches `overlap_confidence` with `min_overlap` judgments; else what lifts "
            "it there, at least up to `min_overlap`, never past `max_overlap` in all (ties are "
            "judgments, not evidence; gold pairs: up to `min_overlap`)",
            n="judgments that count (the latest of each annotator, the stopped annotators' "
            "left out)"),
    # --- annotation -----------------------------------------------------------------------
    Measure("aqs", _A, ALL, "CrowdTruth annotation quality (closed tasks)", warm=True,
            title="AQS", key="aqs"),
)

_MODEL = ("min_judgments", "quality_margin", "skewed_prior")

RULES: tuple[Rule, ...] = (
    Rule("low_quality", _W, ALL,
         "No better than a random or constant answerer (reliability model)",
         reads=("model_accuracy", "model_worker_chance", "model_noise_sd", "model_chance_sd",
                "model_chance", "model_iterations"),
         thresholds=_MODEL, acts=True),
    Rule("gold_accuracy", _W, GOLD, "Answers the gold questions no better than chance",
         reads=("gold_accuracy", "gold_chance"),
         thresholds=("gold_floor", "quality_margin", "min_gold_judgments"), acts=True),
    Rule("biased", _W, RATING, "Reads the rating scale shifted from the other raters",
         reads=("model_bias", "model_scale_width", "model_chance", "model_iterations"),
         thresholds=("max_bias", "min_judgments")),
    Rule("low_agreement", _W, ALL, "Disagrees with the aggregate of the other workers",
         reads=("agreement_loo", "n_judgments"),
         thresholds=("low_agreement_ratio", "min_judgments"), acts=True),
    Rule("speeder", _W, ALL, "Answers faster than plausible",
         reads=("mean_duration_s", "n_judgments"), thresholds=("speeder_ratio", "min_judgments"),
         acts=True),
    Rule("intransitive", _W, PAIRWISE, "Preferences contradict themselves (cycles)",
         reads=("transitivity_kappa",), thresholds=("min_triplets", "low_transitivity_kappa"),
         acts=True),
    Rule("position_bias", _W, PAIRWISE, "Prefers one side of the screen regardless of content",
         reads=("side_test", "model_position_bias", "model_iterations"),
         thresholds=("position_bias_p", "position_bias_share", "min_judgments"), acts=True),
    Rule("constant", _W, frozenset({Kind.RATING, Kind.LABEL, Kind.PAIRWISE}),
         "Gives the same answer whatever the question",
         reads=("constant_answer", "n_judgments"),
         thresholds=("constant_share", "position_bias_p", "min_judgments"), acts=True),
    Rule("ambiguous", _I, ABSOLUTE, "Reliable workers disagree on this item beyond their noise",
         reads=("model_label", "majority_disputed", "model_spread", "model_spread_p",
                "model_expected_spread", "model_chance", "model_iterations"),
         thresholds=("ambiguous_posterior", "ambiguous_p", "min_item_judgments")),
    Rule("ambiguous", _P, PAIRWISE,
         "Reliable annotators split on this pair beyond what their reliability explains",
         reads=("model_split_p", "model_iterations"),
         thresholds=("ambiguous_p", "min_item_judgments")),
    Rule("kappa_paradox", _C, ALL, "High raw agreement but low chance-corrected agreement",
         reads=("percent_agreement", "krippendorff_alpha"),
         thresholds=("paradox_agreement", "paradox_alpha")),
    Rule("phi_alpha_disagree", _C, RATING, "Phi and alpha tell different stories",
         reads=("phi", "krippendorff_alpha"), thresholds=("phi_alpha_gap",)),
    Rule("model_fallback", _C, RATING,
         "The rating model is no better than the plain mean on held-out judgments: exports "
         "give the plain mean", reads=("model_fallback",), thresholds=()),
    Rule("model_not_converged", _C, MODELLED,
         "The reliability model did not converge: its flags are withheld",
         reads=("model_iterations",), thresholds=("model_max_iter",)),
)
# fmt: on


def measure(scope: str, name: str) -> Measure:
    """The declaration of ``name`` in ``scope`` (KeyError if there is none)."""
    return _BY_KEY[(Scope(scope), name)]


def measures(
    scope: str | None = None, kind: str | None = None, **flags: bool
) -> tuple[Measure, ...]:
    """The measures of ``scope`` (all scopes by default) that apply to ``kind`` (all kinds)
    and have every attribute of ``flags`` set as given (``warm=True``, say)."""
    return tuple(
        m
        for m in MEASURES
        if (scope is None or m.scope == scope)
        and (kind is None or kind in m.kinds)
        and all(getattr(m, k) == v for k, v in flags.items())
    )


def names(scope: str | None = None, kind: str | None = None, **flags: bool) -> tuple[str, ...]:
    """The distinct names of :func:`measures` in declaration order."""
    return tuple(dict.fromkeys(m.name for m in measures(scope, kind, **flags)))


def rules(scope: str | None = None, kind: str | None = None, **flags: bool) -> tuple[Rule, ...]:
    """The rules of ``scope`` that apply to ``kind``, as :func:`measures` selects."""
    return tuple(
        r
        for r in RULES
        if (scope is None or r.scope == scope)
        and (kind is None or kind in r.kinds)
        and all(getattr(r, k) == v for k, v in flags.items())
    )


def rule_title(name: str) -> str | None:
    """What a flag says, in a few words (None for a name that is no rule)."""
    return next((r.title for r in RULES if r.name == name), None)


_BY_KEY = {(m.scope, m.name): m for m in MEASURES}
if len(_BY_KEY) != len(MEASURES):  # pragma: no cover - a declaration written twice
    raise RuntimeError("a measure is declared twice in the catalog")

WARM = names(warm=True)
"""The measures the next run starts from."""
APPROXIMATE = names(Scope.ITEM, approximate=True)
"""The item measures an incremental run may store to within the value tolerance."""
TREND = names(Scope.CAMPAIGN, trend=True)
"""The campaign measures the report draws over runs."""
HISTORY = names(Scope.WORKER, history=True)
"""The worker measures read as a worker's history on the platform."""
DECISIONS = ("block", "stop", "down_weight", "watch", "cannot_tell", "ok")
"""A worker's decisions (``monitor.rules.decision``), the most severe first."""
POLICY_RULES = tuple(r.name for r in rules(Scope.WORKER, acts=True))
"""The worker flags the automatic policy acts on."""
WARNINGS = tuple(r.name for r in rules(Scope.CAMPAIGN))
"""The campaign flags: warnings about the campaign as a whole."""


def _markdown(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """A Markdown table, ``|`` in a cell escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _kinds(kinds: frozenset[Kind]) -> str:
    return "all" if kinds == ALL else ", ".join(k.value for k in Kind if k in kinds)


def measures_table() -> str:
    """The stored measures as a Markdown table (``docs/store-values.md`` holds it)."""
    return _markdown(
        ("scope", "metric", "kinds", "value", "low/high", "n", "detail"),
        [
            (m.scope.value, f"`{m.name}`", _kinds(m.kinds), m.value, m.interval, m.n, m.detail)
            for m in MEASURES
        ],
    )


def rules_table() -> str:
    """The rules as a Markdown table (``docs/store-values.md`` holds it)."""
    return _markdown(
        ("scope", "rule", "kinds", "says", "reads", "thresholds", "policy"),
        [
            (
                r.scope.value,
                f"`{r.name}`",
                _kinds(r.kinds),
                r.title,
                ", ".join(f"`{x}`" for x in r.reads),
                ", ".join(f"`{x}`" for x in r.thresholds),
                "acts" if r.acts else "",
            )
            for r in RULES
        ],
    )


def write_docs(path: str) -> bool:
    """Put the current tables between the markers of ``path`` (``docs/store-values.md``);
    whether the file changed."""
    from pathlib import Path

    file = Path(path)
    text = old = file.read_text(encoding="utf-8")
    for name, table in (("measures", measures_table()), ("rules", rules_table())):
        start, end = f"<!-- catalog:{name} -->\n", f"<!-- /catalog:{name} -->"
        head, _, rest = text.partition(start)
        _, _, tail = rest.partition(end)
        text = head + start + table + end + tail
    if text != old:
        file.write_text(text, encoding="utf-8")
    return text != old


if __name__ == "__main__":
    import sys

    print("updated" if write_docs(sys.argv[1]) else "up to date")
