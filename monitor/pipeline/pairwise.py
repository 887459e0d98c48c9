"""Pairwise preferences: the annotator audit (transitivity, ties, position bias), agreement on
pairs, CrowdTruth on pairs and the items' absolute scores."""

from __future__ import annotations

import numpy as np

from monitor.incremental.crowdtruth import CrowdTruthTask
from monitor.incremental.triangles import MEMORY as TRIANGLES
from monitor.incremental.triangles import transitivity_run
from monitor.metrics import agreement as ag
from monitor.metrics.crowdtruth import label_counts
from monitor.metrics.preferences import canonical_pairs, davidson, position_bias
from monitor.metrics.transitivity import P_E_STRICT, P_E_WEAK, implied_pairs
from monitor.pipeline.collect import Values, answers_detail, bootstrap_interval, num
from monitor.pipeline.crowdtruth import crowdtruth_values
from monitor.pipeline.params import Coded, Params
from monitor.results import Value

# Canonical labels "<", "=", ">" are the relation of the first item of a pair to the second;
# ">" means the first is preferred: shown as the outcome of the pair (first, second).
OUTCOME_NAMES = ("right", "tie", "left")
MAX_CYCLES = 50


def measure(coded: Coded, params: Params) -> Values:
    """Every measure of a pairwise campaign."""
    info, a = coded.info, coded.arrays
    out = params.values(info.name)
    items = a.item_ids
    ties_allowed = not info.strict
    tr, kept, how = transitivity_run(a, ties_allowed=ties_allowed, warm=params.warm)
    out.memory[TRIANGLES] = kept
    out.parameters["transitivity"] = {"triangles": how}
    implied = implied_pairs(a.workers, a.left, a.right, a.outcome, a.order)
    cycles_by_worker: dict[int, list[dict]] = {}
    cyc = tr.cycles
    for k in range(cyc.workers.size):
        w = int(cyc.workers[k])
        bucket = cycles_by_worker.setdefault(w, [])
        if len(bucket) < MAX_CYCLES:
            x, y, z = (str(items[i]) for i in cyc.items[k])
            rel = [int(r) for r in cyc.relations[k]]
            bucket.append(
                {
                    "items": [x, y, z],
                    "relations": rel,
                    "judgments": [int(j) for j in cyc.judgment_ids[k]],
                    "text": _cycle_text(x, y, z, rel),
                }
            )
    total_trip = total_trans = 0
    for t in tr.annotators:
        total_trip += t.n_triplets
        total_trans += t.n_transitive
        out.values.append(
            Value(
                "worker",
                str(a.worker_ids[t.worker]),
                "transitivity_kappa",
                num(t.kappa),
                n=t.n_triplets,
                detail={
                    "p_a": num(t.p_a),
                    "p_e": t.p_e,
                    "triplets": t.n_triplets,
                    "transitive": t.n_transitive,
                    "pairs": t.n_pairs_judged,
                    "kappa_weak": num(t.kappa_weak),
                    "kappa_strict": num(t.kappa_strict),
                    "has_ties": bool(t.has_ties),
                    "repeated_pairs": t.n_repeated_pairs,
                    "retest": num(t.retest_agreement),
                    "implied_pairs": int(implied.count[t.worker])
                    if t.worker < implied.count.size
                    else 0,
                    "n_cycles": t.n_triplets - t.n_transitive,
                    "cycles": cycles_by_worker.get(t.worker, []),
                    "reason": t.undefined.reason if t.undefined else None,
                },
            )
        )
    p_e = P_E_WEAK if ties_allowed else P_E_STRICT
    p_a = total_trans / total_trip if total_trip else None
    out.campaign_value(
        "transitivity_kappa",
        (p_a - p_e) / (1 - p_e) if p_a is not None else None,
        n=total_trip,
        detail={"p_e": p_e, "p_a": p_a},
        reason=None if total_trip else "no annotator has a fully judged triplet",
    )
    for b in position_bias(a.workers, a.outcome):
        wid = str(a.worker_ids[b.worker])
        out.values.append(Value("worker", wid, "tie_rate", num(b.tie_rate), n=b.n_judgments))
        out.values.append(
            Value(
                "worker",
                wid,
                "position_bias",
                num(b.left_share),
                n=b.n_strict,
                detail={"p_value": num(b.p_value), "n_left": b.n_left},
            )
        )
    out.add(_pairs(coded, params))
    return out.add(_scores(coded, params))


def _cycle_text(x: str, y: str, z: str, rel: list[int]) -> str:
    sym = {1: ">", 0: "=", -1: "<"}
    return f"{x} {sym[rel[0]]} {y}, {y} {sym[rel[1]]} {z}, {x} {sym[rel[2]]} {z}"


def _pairs(coded: Coded, params: Params) -> Values:
    """Agreement and CrowdTruth on pairs: each pair's outcomes (left, tie, right) as the
    latest judgment of each annotator gives them."""
    a = coded.arrays
    W = len(a.worker_ids)
    out = params.values(coded.info.name)
    cp = canonical_pairs(a.workers, a.left, a.right, a.outcome, a.order, latest_only=True)
    subjects = [f"{a.item_ids[lo]}\t{a.item_ids[hi]}" for lo, hi in cp.pairs]
    answers_detail(out, "pair", subjects, cp.pair, cp.label, OUTCOME_NAMES)
    P = len(subjects)
    vc = ag.ValueCounts.from_judgments(cp.pair, cp.label, n_items=P, n_values=3)
    pa = ag.percent_agreement(vc)
    out.campaign_value(
        "percent_agreement",
        pa.mean,
        n=pa.n_items_pairable,
        detail={"pooled": num(pa.pooled), "unit": "pair"},
        reason=pa.reason,
    )
    res = ag.krippendorff_alpha(vc, "nominal")
    ci = bootstrap_interval(
        params.bootstrap, res.alpha,
        lambda n, s: ag.bootstrap_alpha(vc, "nominal", n_boot=n, seed=s),
    )  # fmt: skip
    detail = {
        "level": "nominal",
        "unit": "pair",
        "D_o": num(res.observed_disagreement),
        "D_e": num(res.expected_disagreement),
    }
    out.campaign_value("krippendorff_alpha", res.alpha, ci, res.n_pairable, detail, res.reason)
    out.campaign_value(
        "krippendorff_alpha_nominal", res.alpha, n=res.n_pairable, detail=detail, reason=res.reason
    )
    fk = ag.fleiss_kappa(vc)
    out.campaign_value(
        "fleiss_kappa",
        fk.kappa,
        n=fk.n_items,
        detail={"P_bar": num(fk.p_bar), "P_e": num(fk.p_e)},
        reason=fk.reason,
    )
    for metric in ("cohen_kappa", "scott_pi"):
        out.campaign_value(
            metric, None, reason="not computed for pairwise campaigns: see alpha on pairs"
        )
    if P:
        loo = ag.worker_vs_aggregate(
            cp.pair, cp.workers, cp.label, kind="label", n_values=3, n_workers=W
        )
        out.per_subject(
            "worker",
            "agreement_loo",
            a.worker_ids,
            loo.agreement,
            n=loo.n_items,
            mask=np.bincount(cp.workers, minlength=W) > 0,
        )
    task = CrowdTruthTask(
        cp.workers, cp.pair, label_counts(cp.label, 3), a.worker_ids, subjects, "pair",
        list(OUTCOME_NAMES), True, params.names, "pair" in params.columnar,
    )  # fmt: skip
    out.add(crowdtruth_values(coded.info.name, task, params))
    for v in out.values:
        if v.scope == "pair" and v.metric == "n_judgments":
            left, _, right = v.subject.partition("\t")
            v.detail.update({"left": left, "right": right})
    return out


def _scores(coded: Coded, params: Params) -> Values:
    """The items' scores: a Bradley-Terry model with ties (Davidson 1970), warm-started from
    the last run's."""
    a = coded.arrays
    out = params.values(coded.info.name)
    init = None
    if params.warm is not None:
        init = params.warm.aligned("item", "score", a.item_ids, default=0.0)
    fit = davidson(a.left, a.right, a.outcome, regularization=0.01, init=init)
    out.parameters["scores"] = {
        "model": "Davidson (1970) Bradley-Terry with ties",
        "regularization": 0.01,
        "iterations": fit.iterations,
        "converged": bool(fit.converged),
    }
    if fit.log_strength is None:
        out.campaign_value(
            "score_model", None, reason=fit.undefined.reason if fit.undefined else "undefined"
        )
        return out
    n_cmp = np.bincount(np.r_[a.left, a.right], minlength=len(a.item_ids))
    se = fit.se if fit.se is not None else np.full(fit.items.size, np.nan)
    for k, i in enumerate(fit.items):
        s, e = float(fit.log_strength[k]), float(se[k])
        ok = np.isfinite(e)
        out.values.append(
            Value(
                "item",
                str(a.item_ids[i]),
                "score",
                s,
                s - 1.96 * e if ok else None,
                s + 1.96 * e if ok else None,
                int(n_cmp[i]),
                {"se": e if ok else None},
            )
        )
    out.campaign_value(
        "score_model",
        num(fit.tie_parameter),
        n=fit.n_comparisons,
        detail={
            "tie_parameter": num(fit.tie_parameter),
            "converged": bool(fit.converged),
            "iterations": fit.iterations,
        },
    )
    return out
