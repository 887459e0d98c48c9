"""Ratings, labels and multi-label sets: the agreement family, CrowdTruth, Phi, gold accuracy
and the reliability model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.metrics import agreement as ag
from monitor.metrics import poisson
from monitor.metrics.crowdtruth import label_counts, multilabel_counts
from monitor.metrics.krippendorff import MAX_RATIO_VALUES
from monitor.pipeline import quality
from monitor.pipeline.collect import (
    Collector,
    WarmStart,
    answers_detail,
    bootstrap_interval,
    num,
    scale_codes,
)
from monitor.pipeline.crowdtruth import run_crowdtruth
from monitor.pipeline.intervals import Request, Resampler
from monitor.results import State
from monitor.settings import Settings
from monitor.store.arrays import CampaignArrays, latest_per_pair
from monitor.store.campaigns import CampaignInfo
from monitor.store.history import HistoryEntry


def compute(
    info: CampaignInfo,
    arrays: CampaignArrays,
    settings: Settings,
    out: Collector,
    warm: WarmStart | None,
    parameters: dict[str, Any],
    history: Mapping[str, Sequence[HistoryEntry]] | None = None,
) -> None:
    """Every measure of a ratings, labels or multi-label campaign; ``history``: each worker's
    entries in the platform's other campaigns (the model's starting point)."""
    if arrays.kind == "multilabel":
        _multilabel(info, arrays, settings, out, warm, parameters)
        quality.multilabel(info, arrays, settings, out, parameters)
        return
    codes, domain, names = scale_codes(info, arrays)
    N, W = len(arrays.item_ids), len(arrays.worker_ids)
    answers_detail(out, "item", arrays.item_ids, arrays.items, codes, names)
    keep = arrays.latest
    if keep.size == arrays.n:  # no repeated judgment: the arrays themselves, not copies
        keep = slice(None)  # type: ignore[assignment]
    items, workers, codes_k = arrays.items[keep], arrays.workers[keep], codes[keep]
    parameters["repeated_judgments"] = "latest per worker and item counts for agreement"
    boot = Resampler(arrays, settings, warm, out, codes, domain, latest_per_pair)
    parameters["bootstrap"] = (
        "Poisson bootstrap of the items for alpha (nominal, interval, ratio) and Fleiss' kappa, "
        "updated with the items that changed; multinomial resampling otherwise"
    )
    kind = "label" if arrays.kind == "label" else "rating"
    answers = codes_k if arrays.kind == "label" else arrays.values[keep]
    # In an incremental run a second thread takes co-determination and the reliability model's
    # update while this one takes the other measures (their NumPy and SciPy passes release the
    # GIL); a full run takes them in turn, its peak memory that of its largest measure.
    # Co-determination always starts from equal weights, never warm-started: the map can have
    # several fixed points, and an incremental run must reach the one a full run reaches
    # (docs/measures.md). The model fills a collector and parameters of its own, added after
    # Phi's as in turn.
    model_out, model_parameters = out.part(), {}
    run_model = partial(
        quality.compute, info, arrays, settings, model_out, warm, model_parameters,
        items=items, workers=workers, answers=answers, history=history,
    )  # fmt: skip
    run_codetermination = partial(
        ag.codetermination, items, workers, codes_k, kind=kind, value_domain=domain,
        n_workers=W, n_items=N,
    )  # fmt: skip
    pool = ThreadPoolExecutor(1, thread_name_prefix="monitor-measures")

    def later(fn: Callable[[], Any]) -> Callable[[], Any]:
        return pool.submit(fn).result if warm is not None else fn

    try:
        codetermination, model = later(run_codetermination), later(run_model)
        _agreement(info, arrays, settings, out, items, workers, codes_k, domain, N, W, boot,
                   kind)  # fmt: skip
        run_crowdtruth(
            out,
            workers=arrays.workers,
            units=arrays.items,
            annotations=label_counts(codes, len(domain)),
            worker_ids=arrays.worker_ids,
            unit_ids=arrays.item_ids,
            unit_scope="item",
            annotation_names=names,
            closed=True,
            settings=settings,
            warm=warm,
            parameters=parameters,
            arrays=arrays,
        )
        if arrays.kind == "rating" and settings.phi != "off":
            _phi(info, arrays, settings, out, warm, items, arrays.values[keep], parameters)
        model()
        out.add(model_out)
        parameters.update(model_parameters)
        _codetermination(out, arrays, workers, codetermination())
    finally:  # after an error, the part not started yet never starts
        pool.shutdown(cancel_futures=True)


def _agreement(
    info, arrays, settings, out, items, workers, codes, domain, N, W, boot, kind
) -> None:  # noqa: ANN001, PLR0913
    vc = ag.ValueCounts.from_judgments(items, codes, n_items=N, value_domain=domain)
    pa = ag.percent_agreement(vc)
    out.campaign_value(
        "percent_agreement",
        pa.mean,
        n=pa.n_items_pairable,
        detail={"pooled": num(pa.pooled), "n_pairs": pa.n_pairs},
        reason=pa.reason,
    )
    out.per_subject("item", "percent_agreement", arrays.item_ids, pa.per_item, mask=pa.pairable)
    levels = ["nominal"] if arrays.kind == "label" else ["nominal", "ordinal", "interval"]
    if arrays.kind == "label" and info.level == "ordinal":
        levels.append("ordinal")
    if arrays.kind == "rating" and domain[0] >= 0 and domain.size <= MAX_RATIO_VALUES:
        levels.append("ratio")
    at_level = None
    for level, res in ag.krippendorff_alphas(vc, levels).items():
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
    fk = ag.fleiss_kappa(vc)
    m = fk.raters_per_item
    requests = [
        # The sums do not depend on the raters per item, only the replicates do.
        Request("fleiss_kappa", fk.kappa, vc, poisson.fleiss_features,
                lambda sums: poisson.fleiss_replicates(sums, m or 0)),
    ]  # fmt: skip
    level = at_level[0] if at_level is not None else None
    if level in poisson.LEVELS:
        requests.append(
            Request("krippendorff_alpha", at_level[1].alpha, vc,
                    lambda v: poisson.alpha_features(v, level),
                    lambda sums: poisson.alpha_replicates(sums, level, domain),
                    {"level": level})
        )  # fmt: skip
    cis = boot.intervals(requests)
    if at_level is not None:
        level, res, detail = at_level
        ci = cis.get("krippendorff_alpha")
        if level not in poisson.LEVELS:  # ordinal: the ranks move with each replicate
            ci = bootstrap_interval(
                settings, res.alpha, lambda b, s: ag.bootstrap_alpha(vc, level, n_boot=b, seed=s)
            )
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
        _, a, b = ag.align_pair(items, workers, codes, int(active[0]), int(active[1]))
        for metric, fn, weights in (
            ("cohen_kappa", ag.cohen_kappa, None),
            ("cohen_kappa_linear", ag.cohen_kappa, "linear"),
            ("cohen_kappa_quadratic", ag.cohen_kappa, "quadratic"),
            ("scott_pi", ag.scott_pi, None),
        ):
            r = fn(a, b, domain.size, weights=weights)
            ci = None
            if metric in ("cohen_kappa", "scott_pi"):
                pooled = metric == "scott_pi"
                ci = bootstrap_interval(
                    settings, r.kappa,
                    lambda n, s, p=pooled: ag.bootstrap_kappa(a, b, domain.size, pooled=p, n_boot=n, seed=s),
                )  # fmt: skip
            detail = {"p_o": num(r.p_o), "p_e": num(r.p_e)}
            out.campaign_value(metric, r.kappa, ci, r.n_items, detail, r.reason)
    else:
        for metric in ("cohen_kappa", "scott_pi"):
            out.campaign_value(
                metric,
                None,
                reason=f"defined for exactly two workers, the campaign has {active.size}",
            )
    loo = ag.worker_vs_aggregate(
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


def _codetermination(
    out: Collector, arrays: CampaignArrays, workers: NDArray[np.int64], co: ag.Codetermination
) -> None:
    """The co-determination's iterations and each worker's weight."""
    out.campaign_value(
        "codetermination_iterations",
        co.iterations,
        detail={"converged": bool(co.converged), "max_change": num(co.max_change)},
    )
    judged = np.bincount(workers, minlength=len(arrays.worker_ids)) > 0
    out.per_subject("worker", "weight", arrays.worker_ids, co.weights, mask=judged)


PHI_STATE = "phi_grid"


def _phi(info, arrays, settings, out, warm, items, values, parameters) -> None:  # noqa: ANN001
    from monitor.metrics.phi import PhiGrid, phi

    gold = quality.gold_values(info, arrays)
    engine = {"map": "map", "full": "exact", "nuts": "nuts"}[settings.phi]
    # the previous run's grid on log p, while it was made for the same model
    meta = {
        "scale": [info.scale_min, info.scale_max],
        "mapping": settings.phi_mapping,
        "prior": settings.phi_prior,
    }
    kept = warm.states.get(PHI_STATE) if warm is not None else None
    grid = PhiGrid.from_array(kept.array) if kept is not None and kept.meta == meta else None
    res = phi(
        items,
        values,
        scale_min=info.scale_min,
        scale_max=info.scale_max,
        n_items=len(arrays.item_ids),
        gold=gold if np.isfinite(gold).any() else None,
        engine=engine,
        seed=settings.seed,
        mapping=settings.phi_mapping,
        prior=settings.phi_prior,
        grid=grid,
    )
    if res.grid is not None:
        out.states[PHI_STATE] = State(meta, res.grid.to_array())
    parameters["phi"] = {"engine": engine, "prior": res.prior, "mapping": res.mapping}
    out.campaign_value(
        "phi",
        res.mean if engine != "map" else res.map,
        res.hpd,
        n=res.n_items,
        detail={
            "map": num(res.map),
            "median": num(res.median),
            "method": res.method,
            "reading": res.reading,
            "rhat": num(res.rhat),
            "ess": num(res.ess),
            "divergences": res.divergences,
            "prior": res.prior,
            "mapping": res.mapping,
        },
        reason=res.reason,
    )
    mask = np.isfinite(res.item_mean)
    out.per_subject(
        "item",
        "phi_mu",
        arrays.item_ids,
        res.item_mean,
        low=res.item_hpd[:, 0],
        high=res.item_hpd[:, 1],
        mask=mask,
    )


def _multilabel(info, arrays, settings, out, warm, parameters) -> None:  # noqa: ANN001
    names = arrays.annotation_names
    reps = arrays.ann_count
    jud = np.repeat(arrays.ann_judgment, reps)
    ann = np.repeat(arrays.ann_code, reps)
    counts = multilabel_counts(jud, ann, arrays.n, len(names))
    answers_detail(out, "item", arrays.item_ids, arrays.items[jud], ann, names, arrays.items)
    reason = "not defined for multi-label sets: see the CrowdTruth unit and annotation scores"
    for metric in (
        "percent_agreement",
        "krippendorff_alpha",
        "fleiss_kappa",
        "cohen_kappa",
        "scott_pi",
    ):
        out.campaign_value(metric, None, reason=reason)
    run_crowdtruth(
        out,
        workers=arrays.workers,
        units=arrays.items,
        annotations=counts,
        worker_ids=arrays.worker_ids,
        unit_ids=arrays.item_ids,
        unit_scope="item",
        annotation_names=names,
        closed=not info.open,
        settings=settings,
        warm=warm,
        parameters=parameters,
        arrays=arrays,
    )
