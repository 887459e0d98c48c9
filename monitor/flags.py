"""Pure rules that turn a run's values into flags, each with its evidence.

Ratings, labels and multi-label sets: ``low_quality``, ``gold_accuracy`` and ``ambiguous`` are
statistical (:mod:`monitor.model_rules`): a worker's interval on the reliability model's accuracy
(or gold accuracy) lies below what a random or constant answerer reaches, an item's
disagreement is beyond what its workers' noise explains. Pairwise campaigns (no model) keep the
ratio rules: ``low_quality`` compares a worker's WQS with the campaign (the median of the
workers who have enough judgments to be judged), ``ambiguous`` a pair's UQS with a threshold.
``low_agreement`` and ``speeder`` compare a worker with the campaign median in every kind.
Every threshold is a setting (``monitor/settings.py``); the defaults were chosen on the synthetic
golden campaigns, whose planted spammers and ambiguous items are known (``bench/flags.py``
prints the precision and recall they reach).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from monitor import model_rules
from monitor.results import Column, FlagRecord, Value
from monitor.settings import Settings


def _index(values: Iterable[Value]) -> dict[tuple[str, str], dict[str, Value]]:
    by: dict[tuple[str, str], dict[str, Value]] = defaultdict(dict)
    for v in values:
        by[(v.scope, v.subject)][v.metric] = v
    return by


def _num(v: Value | None) -> float | None:
    return None if v is None or v.value is None or not np.isfinite(v.value) else float(v.value)


def _relative_rule(
    by: dict[tuple[str, str], dict[str, Value]],
    *,
    metric: str,
    rule: str,
    ratio: float,
    min_n: int,
    label: str,
) -> list[FlagRecord]:
    """Flag workers whose ``metric`` is below ``ratio`` x the median of the judged workers."""
    judged = {
        subject: (_num(m.get(metric)), int(_num(m.get("n_judgments")) or 0))
        for (scope, subject), m in by.items()
        if scope == "worker"
    }
    scores = [s for s, n in judged.values() if s is not None and n >= min_n]
    if len(scores) < 3:
        return []  # too few peers to say what is normal here
    median = float(np.median(scores))
    if median <= 0:
        return []
    threshold = ratio * median
    flags = []
    for subject, (score, n) in sorted(judged.items()):
        if score is None or n < min_n or score >= threshold:
            continue
        v = by[("worker", subject)][metric]
        flags.append(
            FlagRecord(
                "worker",
                subject,
                rule,
                score,
                threshold,
                {
                    "message": f"{label} {score:.2f} is below {ratio:g} x the campaign median "
                    f"{median:.2f}, over {n} judgments",
                    "n": n,
                    "campaign_median": median,
                    "interval": [v.low, v.high] if v.low is not None else None,
                    "metric": metric,
                },
            )
        )
    return flags


def evaluate(
    values: Sequence[Value],
    settings: Settings,
    *,
    kind: str,
    strict: bool = False,
    columns: Sequence[Column] = (),
) -> list[FlagRecord]:
    """All the flags of a run (its single values and its columns), sorted by scope, rule and
    subject."""
    by = _index(values)
    flags: list[FlagRecord] = []
    if kind == "pairwise":  # no reliability model: CrowdTruth's WQS against the campaign
        flags += _relative_rule(
            by,
            metric="wqs",
            rule="low_quality",
            ratio=settings.low_wqs_ratio,
            min_n=settings.min_judgments,
            label="CrowdTruth worker quality (WQS)",
        )
    else:
        flags += model_rules.worker_rules(by, settings)
    flags += _relative_rule(
        by,
        metric="agreement_loo",
        rule="low_agreement",
        ratio=settings.low_agreement_ratio,
        min_n=settings.min_judgments,
        label="agreement with the other workers",
    )
    flags += _speeders(by, settings)
    if kind == "pairwise":
        flags += _preference_rules(by, settings)
    if kind == "pairwise":
        flags += _ambiguous(by, settings, "pair")
        flags += _ambiguous_columns(columns, settings, "pair")
    else:
        flags += model_rules.ambiguous_items(by, columns, settings)
    flags += _campaign_warnings(by, settings)
    flags += model_rules.campaign_warnings(by, settings)
    return sorted(flags, key=lambda f: (f.scope, f.rule, f.subject))


def _speeders(by: dict[tuple[str, str], dict[str, Value]], settings: Settings) -> list[FlagRecord]:
    durations = {
        s: (_num(m.get("mean_duration_s")), int(_num(m.get("n_judgments")) or 0))
        for (scope, s), m in by.items()
        if scope == "worker"
    }
    known = [d for d, n in durations.values() if d is not None and n >= settings.min_judgments]
    if len(known) < 3:
        return []
    median = float(np.median(known))
    threshold = settings.speeder_ratio * median
    return [
        FlagRecord(
            "worker",
            s,
            "speeder",
            d,
            threshold,
            {
                "message": f"{d:.1f} s per judgment against a campaign median of {median:.1f} s",
                "n": n,
                "campaign_median": median,
            },
        )
        for s, (d, n) in sorted(durations.items())
        if d is not None and n >= settings.min_judgments and d < threshold
    ]


def _preference_rules(
    by: dict[tuple[str, str], dict[str, Value]], settings: Settings
) -> list[FlagRecord]:
    flags = []
    for (scope, subject), m in sorted(by.items()):
        if scope != "worker":
            continue
        kappa = m.get("transitivity_kappa")
        triplets = kappa.n if kappa is not None else 0
        k = _num(kappa)
        if (
            k is not None
            and (triplets or 0) >= settings.min_triplets
            and k < settings.low_transitivity_kappa
        ):
            detail = kappa.detail or {}
            flags.append(
                FlagRecord(
                    "worker",
                    subject,
                    "intransitive",
                    k,
                    settings.low_transitivity_kappa,
                    {
                        "message": f"intraobserver kappa {k:.2f}: {detail.get('transitive')} of "
                        f"{triplets} fully judged triplets are transitive",
                        "n": triplets,
                        "p_a": detail.get("p_a"),
                        "p_e": detail.get("p_e"),
                        "cycles": (detail.get("cycles") or [])[:10],
                    },
                )
            )
        bias = m.get("position_bias")
        share = _num(bias)
        if share is not None and bias is not None:
            p = (bias.detail or {}).get("p_value")
            extreme = max(share, 1 - share) >= settings.position_bias_share
            if p is not None and p < settings.position_bias_p and extreme:
                flags.append(
                    FlagRecord(
                        "worker",
                        subject,
                        "position_bias",
                        share,
                        settings.position_bias_share,
                        {
                            "message": f"chose 'left' in {share:.0%} of {bias.n} strict answers "
                            f"(binomial test p = {p:.2g})",
                            "n": bias.n,
                            "p_value": p,
                        },
                    )
                )
    return flags


def _ambiguous(
    by: dict[tuple[str, str], dict[str, Value]], settings: Settings, scope: str
) -> list[FlagRecord]:
    flags = []
    for (sc, subject), m in sorted(by.items()):
        if sc != scope:
            continue
        uqs = _num(m.get("uqs"))
        n = int(_num(m.get("n_judgments")) or 0)
        if uqs is None or n < settings.min_item_judgments or uqs >= settings.ambiguous_uqs:
            continue
        answers = (m["n_judgments"].detail or {}).get("answers") if "n_judgments" in m else None
        flags.append(_ambiguous_flag(scope, subject, uqs, n, answers, settings))
    return flags


def _ambiguous_flag(
    scope: str, subject: str, uqs: float, n: int, answers: dict | None, settings: Settings
) -> FlagRecord:
    return FlagRecord(
        scope,
        subject,
        "ambiguous",
        uqs,
        settings.ambiguous_uqs,
        {
            "message": f"unit quality (UQS) {uqs:.2f} over {n} judgments: the workers "
            "disagree about it",
            "n": n,
            "answers": answers,
        },
    )


def _ambiguous_columns(
    columns: Sequence[Column], settings: Settings, scope: str
) -> list[FlagRecord]:
    """:func:`_ambiguous` on values stored as columns, vectorised over the subjects."""
    by = {c.metric: c for c in columns if c.scope == scope}
    uqs, counts = by.get("uqs"), by.get("n_judgments")
    if uqs is None:
        return []
    n = np.zeros(len(uqs), dtype=np.int64)
    row = np.full(len(uqs), -1, dtype=np.int64)
    if counts is not None:
        position = {s: i for i, s in enumerate(counts.subjects)}
        row = np.array([position.get(s, -1) for s in uqs.subjects], dtype=np.int64)
        found = row >= 0
        n[found] = counts.values[row[found]].astype(np.int64)
    with np.errstate(invalid="ignore"):
        hit = (
            np.isfinite(uqs.values)
            & (n >= settings.min_item_judgments)
            & (uqs.values < settings.ambiguous_uqs)
        )
    hits = np.flatnonzero(hit)
    answers: list[dict | None] = [None] * hits.size
    if counts is not None:
        answers = [d["answers"] if d else None for d in counts.take(row[hits]).details()]
    return [
        _ambiguous_flag(scope, uqs.subjects[i], v, k, a, settings)
        for i, v, k, a in zip(
            hits.tolist(), uqs.values[hits].tolist(), n[hits].tolist(), answers, strict=True
        )
    ]


def _campaign_warnings(
    by: dict[tuple[str, str], dict[str, Value]], settings: Settings
) -> list[FlagRecord]:
    campaign = next(((s, m) for (sc, s), m in by.items() if sc == "campaign"), None)
    if campaign is None:
        return []
    subject, m = campaign
    flags = []
    pa, alpha = _num(m.get("percent_agreement")), _num(m.get("krippendorff_alpha"))
    if (
        pa is not None
        and alpha is not None
        and pa >= settings.paradox_agreement
        and alpha < settings.paradox_alpha
    ):
        flags.append(
            FlagRecord(
                "campaign",
                subject,
                "kappa_paradox",
                alpha,
                settings.paradox_alpha,
                {
                    "message": f"percent agreement is high ({pa:.2f}) but alpha is low "
                    f"({alpha:.2f}): the answers are concentrated on one value, so agreement by "
                    "chance is high; look at Phi and at the answer distribution",
                    "percent_agreement": pa,
                    "krippendorff_alpha": alpha,
                },
            )
        )
    phi = m.get("phi")
    phi_mean = _num(phi)
    if (
        phi_mean is not None
        and alpha is not None
        and abs(phi_mean - alpha) >= settings.phi_alpha_gap
    ):
        flags.append(
            FlagRecord(
                "campaign",
                subject,
                "phi_alpha_disagree",
                phi_mean - alpha,
                settings.phi_alpha_gap,
                {
                    "message": f"Phi ({phi_mean:.2f}{_hpd(phi)}) and alpha ({alpha:.2f}) disagree: alpha depends on how the answers are spread "
                    "over the scale, Phi does not",
                    "phi": phi_mean,
                    "krippendorff_alpha": alpha,
                },
            )
        )
    return flags


def _hpd(v: Value) -> str:
    return f", HPD {v.low:.2f} to {v.high:.2f}" if v.low is not None and v.high is not None else ""
