"""The agreement family of rating and label campaigns, on the latest judgment of each worker
and item: percent agreement, Krippendorff's alpha, Fleiss', Cohen's and Scott's coefficients,
leave-one-out agreement, and the co-determination of truths and worker weights."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind
from monitor.incremental.bootstrap import Request, Resampler
from monitor.metrics.agreement import aggregate, bootstrap, kappa, krippendorff, poisson
from monitor.metrics.agreement.kappa import Weights
from monitor.metrics.agreement.krippendorff import MAX_RATIO_VALUES, AlphaResult, Level
from monitor.pipeline.collect import Values, bootstrap_interval, num
from monitor.pipeline.params import Coded, Params
from monitor.store.arrays import latest_per_pair


@dataclass(frozen=True)
class Latest:
    """The latest judgment of each worker and item (what agreement and the models count):
    its item, worker, value code and answer (the code for labels, the rating for ratings),
    and the numbers behind the codes (``domain``)."""

    items: NDArray[np.int64]
    workers: NDArray[np.int64]
    codes: NDArray[np.int64]
    answers: NDArray[Any]
    domain: NDArray[np.float64]


def agreement(coded: Coded, params: Params, latest: Latest, codes: NDArray[np.int64]) -> Values:
    """Percent agreement, alpha at every level that applies, Fleiss' kappa (with bootstrap
    intervals that follow the campaign as it grows), Cohen's kappa and Scott's pi for two
    workers, and each worker's agreement with the others' aggregate (``codes``: the value
    code of every judgment, which the bootstrap's update reads)."""
    info, arrays = coded.info, coded.arrays
    out = params.values(info.name)
    boot = Resampler(arrays, params.bootstrap, params.warm, out.states, codes, latest.domain,
                     latest_per_pair)  # fmt: skip
    out.parameters["bootstrap"] = (
        "Poisson bootstrap of the items for alpha (nominal, interval, ratio) and Fleiss' kappa, "
        "updated with the items that changed; multinomial resampling otherwise"
    )
    items, workers, codes, domain = latest.items, latest.workers, latest.codes, latest.domain
    if arrays.kind == Kind.RATING:  # what the report reads to show only what the scale supports
        out.parameters["scale_points"] = int(domain.size)
        out.parameters["max_nominal_points"] = params.agreement.max_nominal_points
    N, W = len(arrays.item_ids), len(arrays.worker_ids)
    kind: Literal["label", "rating"] = "label" if arrays.kind == Kind.LABEL else "rating"
    vc = krippendorff.ValueCounts.from_judgments(items, codes, n_items=N, value_domain=domain)
    pa = kappa.percent_agreement(vc)
    out.campaign_value(
        "percent_agreement",
        pa.mean,
        n=pa.n_items_pairable,
        detail={"pooled": num(pa.pooled), "n_pairs": pa.n_pairs},
        reason=pa.reason,
    )
    out.per_subject("item", "percent_agreement", arrays.item_ids, pa.per_item, mask=pa.pairable)
    levels: list[Level] = (
        ["nominal"] if arrays.kind == Kind.LABEL else ["nominal", "ordinal", "interval"]
    )
    if arrays.kind == Kind.LABEL and info.level == "ordinal":
        levels.append("ordinal")
    if arrays.kind == Kind.RATING and domain[0] >= 0 and domain.size <= MAX_RATIO_VALUES:
        levels.append("ratio")
    at_level: tuple[Level, AlphaResult, dict[str, Any]] | None = None
    for level, res in krippendorff.krippendorff_alphas(vc, levels).items():
        detail = {
            "level": level,
            "D_o": num(res.observed_disagreement),
            "D_e": num(res.expected_disagreement),
        }
        out.campaign_value(
            f"krippendorff_alpha_{level}", res.alpha, n=res.n_pairable, detail=detail,
            reason=res.reason,
        )  # fmt: skip
        if level == info.level:
            at_level = (level, res, detail)
    fk = kappa.fleiss_kappa(vc)
    m = fk.raters_per_item
    requests = [
        # The sums do not depend on the raters per item, only the replicates do.
        Request("fleiss_kappa", fk.kappa, vc, poisson.fleiss_features,
                lambda sums: poisson.fleiss_replicates(sums, m or 0)),
    ]  # fmt: skip
    if at_level is not None and at_level[0] in poisson.LEVELS:
        resampled = cast(poisson.PoissonLevel, at_level[0])
        requests.append(
            Request("krippendorff_alpha", at_level[1].alpha, vc,
                    lambda v: poisson.alpha_features(v, resampled),
                    lambda sums: poisson.alpha_replicates(sums, resampled, domain),
                    {"level": resampled})
        )  # fmt: skip
    cis = boot.intervals(requests)
    if at_level is not None:
        level, res, detail = at_level
        ci = cis.get("krippendorff_alpha")
        if level not in poisson.LEVELS:  # ordinal: the ranks move with each replicate
            ci = bootstrap_interval(
                params.bootstrap, res.alpha,
                lambda b, s: bootstrap.bootstrap_alpha(vc, level, n_boot=b, seed=s),
            )  # fmt: skip
        out.campaign_value("krippendorff_alpha", res.alpha, ci, res.n_pairable, detail, res.reason)
    ci = cis["fleiss_kappa"]
    fleiss_detail = {
        "P_bar": num(fk.p_bar),
        "P_e": num(fk.p_e),
        "raters_per_item": fk.raters_per_item,
    }
    out.campaign_value("fleiss_kappa", fk.kappa, ci, fk.n_items, fleiss_detail, fk.reason)
    judged = np.bincount(workers, minlength=W) > 0
    active = np.flatnonzero(judged)
    if active.size == 2:
        _, a, b = kappa.align_pair(items, workers, codes, int(active[0]), int(active[1]))
        variants: tuple[tuple[str, Any, Weights], ...] = (
            ("cohen_kappa", kappa.cohen_kappa, None),
            ("cohen_kappa_linear", kappa.cohen_kappa, "linear"),
            ("cohen_kappa_quadratic", kappa.cohen_kappa, "quadratic"),
            ("scott_pi", kappa.scott_pi, None),
        )
        for metric, fn, weights in variants:
            r = fn(a, b, domain.size, weights=weights)
            ci = None
            if metric in ("cohen_kappa", "scott_pi"):
                pooled = metric == "scott_pi"

                def draw(n: int, s: int, p: bool = pooled) -> bootstrap.BootstrapCI:
                    return bootstrap.bootstrap_kappa(a, b, domain.size, pooled=p, n_boot=n, seed=s)

                ci = bootstrap_interval(params.bootstrap, r.kappa, draw)
            detail = {"p_o": num(r.p_o), "p_e": num(r.p_e)}
            out.campaign_value(metric, r.kappa, ci, r.n_items, detail, r.reason)
    else:
        for metric in ("cohen_kappa", "scott_pi"):
            out.campaign_value(
                metric,
                None,
                reason=f"defined for exactly two workers, the campaign has {active.size}",
            )
    loo = aggregate.worker_vs_aggregate(
        items, workers, codes, kind=kind, value_domain=domain, n_workers=W, value_counts=vc
    )
    out.per_subject(
        "worker",
        "agreement_loo",
        arrays.worker_ids,
        loo.agreement,
        n=loo.n_items,
        mask=judged,
    )
    return out


def codetermination(coded: Coded, params: Params, latest: Latest) -> Values:
    """Truths and worker weights determined together (the lecture notes' iteration), always
    from equal weights: the map can have several fixed points, and an incremental run must
    reach the one a full run reaches (docs/measures.md)."""
    arrays = coded.arrays
    out = params.values(coded.info.name)
    kind: Literal["label", "rating"] = "label" if arrays.kind == Kind.LABEL else "rating"
    co = aggregate.codetermination(
        latest.items, latest.workers, latest.codes, kind=kind, value_domain=latest.domain,
        n_workers=len(arrays.worker_ids), n_items=len(arrays.item_ids),
    )  # fmt: skip
    out.campaign_value(
        "codetermination_iterations",
        co.iterations,
        detail={"converged": bool(co.converged), "max_change": num(co.max_change)},
    )
    judged = np.bincount(latest.workers, minlength=len(arrays.worker_ids)) > 0
    out.per_subject("worker", "weight", arrays.worker_ids, co.weights, mask=judged)
    return out
