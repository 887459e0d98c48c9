"""The JSON document's shape (CONTRACT.md section 4, and the keys monitor adds): one
``TypedDict`` per object, the return types of the builders in :mod:`monitor.report.document`,
:mod:`monitor.report.verdict`, :mod:`monitor.report.workerrows` and :mod:`monitor.report.today`.
``docs/report.schema.json`` is generated from them (:mod:`monitor.report.schema`).

The per-worker and per-item measures a row shows besides the keys below are the catalog's
(:data:`monitor.report.workerrows.WORKER_KEYS`, :data:`monitor.report.items.ROW_MEASURES`): the
schema adds them from the catalog, so a new measure needs no line here. ``Interval`` is a
``[low, high]`` pair; a number that may be undefined is ``float | None`` (null, never NaN).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict


class Pair:
    """Marks a list of exactly two numbers in the schema (``minItems``/``maxItems`` 2)."""


Interval = Annotated[list[float], Pair]
"""``[low, high]``."""
Evidence = dict[str, Any]
"""A flag's evidence: the numbers it was decided on (its keys depend on the rule)."""

Kind = Literal["rating", "label", "multilabel", "pairwise"]
Scope = Literal["worker", "item", "pair", "campaign"]
Status = Literal["ok", "flagged", "down_weighted", "blocked"]
DecisionName = Literal["block", "stop", "down_weight", "watch", "cannot_tell", "ok"]
Level = Literal["reliable", "tentative", "unreliable", "undetermined"]
State = Literal["reliable", "usable_with_care", "unreliable", "cannot_tell"]
WorkerAction = Literal["block", "stop", "down_weight", "review"]


class CampaignInfo(TypedDict):
    """``campaign``: what was judged and how much."""

    name: str
    kind: Kind
    level: str | None
    n_workers: int | None
    n_items: int | None
    n_judgments: int | None
    open: bool
    strict: bool
    scale_min: float | None
    scale_max: float | None
    categories: list[str] | None
    platform: str | None


class ModelCheck(TypedDict):
    """The held-out check behind a rating model's ``fallback``."""

    model_mse: float | None
    plain_mse: float | None
    diff_se: float | None
    n: int | None
    folds: int | None


class Model(TypedDict):
    """``model``: the campaign's reliability model."""

    name: str | None
    converged: bool | None
    iterations: int | None
    chance: float | None
    measure: str | None
    floor: float | None
    gold_chance: float | None
    gold_items: int | None
    fallback: bool
    check: ModelCheck | None


class Phi(TypedDict):
    """``agreement.phi`` (ratings)."""

    map: float | None
    mean: float | None
    hpd: Interval | None
    method: str | None


class Agreement(TypedDict):
    """``agreement``: the campaign's agreement measures; ``measures`` every campaign-level
    number of the run with its ``value``, ``interval``, ``n`` and detail."""

    percent_agreement: float | None
    krippendorff_alpha: float | None
    krippendorff_alpha_ci: Interval | None
    fleiss_kappa: float | None
    cohen_kappa: float | None
    scott_pi: float | None
    phi: Phi | None
    level: str | None
    fleiss_kappa_ci: Interval | None
    cohen_kappa_ci: Interval | None
    scott_pi_ci: Interval | None
    transitivity_kappa: NotRequired[float | None]
    measures: dict[str, dict[str, Any]]


class Transitivity(TypedDict):
    """A worker's ``transitivity`` (pairwise campaigns)."""

    kappa: float | None
    p_a: float | None
    p_e: float | None
    triplets: int
    transitive: int


class Measured(TypedDict):
    """A measure of a worker's history: its value, interval and count."""

    value: float | None
    interval: Interval | None
    n: int | None


class WorkerHistory(TypedDict):
    """A worker's numbers in another campaign of the platform."""

    campaign: str
    kind: str
    run: int
    model_accuracy: Measured | None
    model_noise_sd: Measured | None
    gold_accuracy: Measured | None
    n_judgments: float | None


class Why(TypedDict):
    """A worker flag in words."""

    rule: str
    message: str


class DecisionFields(TypedDict):
    """A worker's decision in its row (:mod:`monitor.rules.decision`)."""

    decision: DecisionName
    decision_reason: str
    decision_weight: float | None
    decision_evidence: Evidence | None


class WorkerRow(DecisionFields):
    """One row of ``workers`` (and one line of ``monitor workers --json``); the catalog's
    worker measures besides (``model_accuracy`` or ``model_noise_sd`` with its interval...)."""

    worker: str
    n_judgments: int | None
    wqs: float | None
    wwa: float | None
    wua: float | None
    transitivity: Transitivity | None
    flags: list[str]
    status: Status
    weight: float
    position_bias_p: float | None
    gold_n: int | None
    history: list[WorkerHistory]
    evidence: list[Why]
    cycles: NotRequired[list[Any]]


class ItemRow(TypedDict):
    """One row of ``items``: the measures every kind shows, then the catalog's measures of the
    campaign's kind, the answers and the model's answer where there is one."""

    item: str
    n_judgments: int | None
    uqs: float | None
    percent_agreement: float | None
    phi_mu: float | None
    phi_mu_interval: Interval | None
    score: float | None
    score_interval: Interval | None
    uas: dict[str, float | None] | None
    answers: dict[str, int] | None
    flags: list[str]
    text: str | None
    gold: Any
    count_score: float | None
    model_label: NotRequired[Any]
    posterior: NotRequired[float | None]
    posteriors: NotRequired[dict[str, float | None]]


class Annotation(TypedDict):
    """One row of ``annotations`` (no ``aqs`` in open tasks)."""

    annotation: str
    aqs: NotRequired[float | None]


class PairRow(TypedDict):
    """One row of ``pairs`` (pairwise campaigns)."""

    left: str
    right: str
    n_judgments: int | None
    uqs: float | None
    uas: dict[str, float | None] | None
    left_wins: int
    right_wins: int
    ties: int
    flags: list[str]


class Reliability(TypedDict):
    """What alpha says (:func:`monitor.report.verdict.verdict`)."""

    level: Level
    alpha: float | None
    ci: Interval | None
    text: str
    reason: NotRequired[str | None]


class CampaignState(TypedDict):
    """The campaign's state for the workers' word (:func:`monitor.report.verdict.state`)."""

    state: State
    state_text: str
    to_tell: NotRequired[list[str]]


class ExportCrowd(TypedDict):
    """``verdict.export.crowd``: where the figure is measured on gold, the crowd-only
    expectation beside it (what an unlimited crowd of these workers would answer)."""

    value: float | None
    interval: Interval | None
    n: int | None


class ExportQuality(TypedDict):
    """``verdict.export``: how good ``monitor export labels`` is
    (:func:`monitor.report.verdict.export_verdict`): ``accuracy`` (labels, multi-label sets:
    the share of items whose exported answer is right), ``pair_accuracy`` (preferences: of
    pairs of ranked items ordered right) or ``mae`` (ratings: the mean absolute error of the
    exported values), with its 95% interval and the items it counts. ``basis``: ``gold``
    where it is measured on the campaign's gold (each gold item answered with its gold
    withheld; ``crowd`` then holds the crowd-only expectation), else ``crowd``, the expectation
    of the reliability model against what an unlimited crowd of these workers would answer (an
    upper bound on accuracy; ``basis_reason`` says why gold did not serve where the campaign
    has some). ``method``: what the export gives, ``model`` (the reliability model's answers)
    or ``mean`` (ratings whose model did not beat the plain mean on held-out judgments beyond
    its uncertainty), ``method_reason`` why."""

    measure: Literal["accuracy", "pair_accuracy", "mae"]
    value: float | None
    interval: Interval | None
    n: int | None
    exports: str
    text: str
    basis: Literal["gold", "crowd"]
    method: Literal["model", "mean"]
    method_reason: NotRequired[str]
    basis_reason: NotRequired[str]
    crowd: NotRequired[ExportCrowd]


class ExportVerdict(TypedDict):
    """The verdict about the deliverable (None without a run's ``export_quality``)."""

    export: ExportQuality | None


class Verdict(Reliability, CampaignState, ExportVerdict):
    """``verdict``."""


class WarningRow(TypedDict):
    """One of ``warnings``: no run, a stale run, a model that did not converge, a campaign
    flag."""

    rule: str
    message: str
    value: NotRequired[float | None]
    threshold: NotRequired[float | None]
    evidence: NotRequired[Evidence]


class Flag(TypedDict):
    """One of ``flags``; a pair's ``subject`` is ``left<TAB>right``."""

    scope: Scope
    subject: str
    rule: str
    value: float | None
    threshold: float | None
    evidence: Evidence


class Run(TypedDict):
    """``run``: the latest metric run."""

    id: int
    number: int
    finished_at: str | None
    watermark: int
    full: bool
    n_judgments: int
    n_new: int
    seconds: float | None
    code_version: str | None
    parameters: dict[str, Any]
    stale: bool


class HistoryRow(TypedDict):
    """One run of ``history``; each trend measure as ``NAME`` and ``NAME_ci`` besides."""

    run: int
    number: int
    at: str


class Decision(TypedDict):
    """One of ``decisions``: a decision recorded on a worker."""

    worker: str
    action: str
    weight: float | None
    reason: str | None
    automatic: bool
    actor: str | None
    run_id: int | None
    run_number: int | None
    evidence: Evidence | None
    at: str


class WorkerTodo(TypedDict):
    """A worker to act on (``todo``)."""

    action: WorkerAction
    worker: str
    reason: str
    rules: list[str]


class ItemTodo(TypedDict):
    """An item to send back for more judgments (``todo``)."""

    action: Literal["send_back"]
    item: str
    reason: str
    answers: dict[str, int] | None


class PairTodo(TypedDict):
    """A pair to send back for more judgments (``todo``)."""

    action: Literal["send_back"]
    pair: list[str]
    reason: str
    left_wins: int | None
    right_wins: int | None
    ties: int | None


Todo = WorkerTodo | ItemTodo | PairTodo


class Live(TypedDict):
    """What the stops of the latest run save and cost (label campaigns, ``docs/live.md``):
    ``saved`` judgments at the stopped workers' pace, of the ``remaining`` the items still want,
    and the items that want judgments again without the stopped workers' answers."""

    stopped: int
    saved: float | None
    remaining: int | None
    reopened_items: int | None
    reopened_judgments: int | None


class Document(TypedDict):
    """The JSON document of ``monitor report --format json`` and ``monitor analyze --json``."""

    campaign: CampaignInfo
    model: Model | None
    agreement: Agreement
    workers: list[WorkerRow]
    items: list[ItemRow]
    annotations: list[Annotation]
    verdict: Verdict
    warnings: list[WarningRow]
    flags: list[Flag]
    run: Run | None
    history: list[HistoryRow]
    decisions: list[Decision]
    pairs: NotRequired[list[PairRow]]
    todo: list[Todo]
    live: NotRequired[Live]


OPEN = frozenset({"HistoryRow"})
"""The objects whose keys are not all named here (trend measures by name)."""

__all__ = [
    "OPEN",
    "Agreement",
    "Annotation",
    "CampaignInfo",
    "CampaignState",
    "Decision",
    "Document",
    "ExportCrowd",
    "ExportQuality",
    "ExportVerdict",
    "Flag",
    "HistoryRow",
    "Interval",
    "ItemRow",
    "ItemTodo",
    "Live",
    "Model",
    "PairRow",
    "PairTodo",
    "Reliability",
    "Run",
    "Todo",
    "Verdict",
    "WarningRow",
    "WorkerAction",
    "WorkerRow",
    "WorkerTodo",
]
