"""Pairwise preferences: the annotator audit (transitivity, ties, position bias), agreement on
pairs, CrowdTruth on pairs and the items' absolute scores."""

from __future__ import annotations

import numpy as np

from monitor.core.results import Value
from monitor.incremental.crowdtruth import CrowdTruthTask
from monitor.incremental.triangles import MEMORY as TRIANGLES
from monitor.incremental.triangles import transitivity_run
from monitor.metrics.agreement import aggregate, bootstrap, kappa, krippendorff
from monitor.metrics.crowdtruth.scores import label_counts
from monitor.metrics.preferences.flags import kappa_interval
from monitor.metrics.preferences.intraobserver import (
    P_E_STRICT,
    P_E_WEAK,
    Transitivity,
    implied_pairs,
)
from monitor.metrics.preferences.judgments import canonical_pairs, position_bias
from monitor.metrics.preferences.triangles import TriangleState, triplets_per_pair
from monitor.pipeline.collect import Values, answers_detail, bootstrap_interval, num
from monitor.pipeline.crowdtruth import crowdtruth_values
from monitor.pipeline.params import Coded, Params
from monitor.pipeline.preference import preference_reliability

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
    s = kept.state
    interval = kappa_interval(s.n_triplets, s.n_transitive, triplets_per_pair(s),
                              P_E_WEAK if ties_allowed else P_E_STRICT)  # fmt: skip
    implied = implied_pairs(a.workers, *a.comparisons, a.order)
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
                num(interval.low[t.worker]),
                num(interval.high[t.worker]),
                n=t.n_triplets,
                detail={
                    "effective_triplets": num(interval.n_effective[t.worker]),
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
    for b in position_bias(a.workers, a.comparisons[2]):
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
    out.add(_design(coded, params, tr, s))
    out.add(_pairs(coded, params))
    return out.add(preference_reliability(coded, params))


def _cycle_text(x: str, y: str, z: str, rel: list[int]) -> str:
    sym = {1: ">", 0: "=", -1: "<"}
    return f"{x} {sym[rel[0]]} {y}, {y} {sym[rel[1]]} {z}, {x} {sym[rel[2]]} {z}"


def _pairs(coded: Coded, params: Params) -> Values:
    """Agreement and CrowdTruth on pairs: each pair's outcomes (left, tie, right) as the
    latest judgment of each annotator gives them."""
    a = coded.arrays
    W = len(a.worker_ids)
    out = params.values(coded.info.name)
    cp = canonical_pairs(a.workers, *a.comparisons, a.order, latest_only=True)
    subjects = [f"{a.item_ids[lo]}\t{a.item_ids[hi]}" for lo, hi in cp.pairs]
    answers_detail(out, "pair", subjects, cp.pair, cp.label, OUTCOME_NAMES)
    P = len(subjects)
    vc = krippendorff.ValueCounts.from_judgments(cp.pair, cp.label, n_items=P, n_values=3)
    pa = kappa.percent_agreement(vc)
    out.campaign_value(
        "percent_agreement",
        pa.mean,
        n=pa.n_items_pairable,
        detail={"pooled": num(pa.pooled), "unit": "pair"},
        reason=pa.reason,
    )
    res = krippendorff.krippendorff_alpha(vc, "nominal")
    ci = bootstrap_interval(
        params.bootstrap, res.alpha,
        lambda n, s: bootstrap.bootstrap_alpha(vc, "nominal", n_boot=n, seed=s),
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
    fk = kappa.fleiss_kappa(vc)
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
        loo = aggregate.worker_vs_aggregate(
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
        if v.scope == "pair" and v.metric == "n_judgments" and v.detail is not None:
            left, _, right = v.subject.partition("\t")
            v.detail.update({"left": left, "right": right})
    return out


def _design(coded: Coded, params: Params, tr: Transitivity, state: TriangleState) -> Values:
    """What the campaign's design lets monitor measure of its annotators: transitivity needs
    closed triangles (an annotator who judged all three pairs of three items), agreement on
    pairs needs pairs judged more than once; reliability always comes from agreement with the
    consensus order of the reliability model."""
    a = coded.arrays
    out = params.values(coded.info.name)
    measurable = sum(1 for t in tr.annotators if t.n_triplets)
    judged = int(np.count_nonzero(state.n_judgments))
    left, right, _ = a.comparisons
    canonical = left < right
    keys = np.where(canonical, left * len(a.item_ids) + right, right * len(a.item_ids) + left)
    _, per_pair = np.unique(keys, return_counts=True)
    repeated = int(np.count_nonzero(per_pair > 1))
    signals = ["reliability: agreement with the consensus order (the reliability model)"]
    if measurable:
        signals.append(f"transitivity: {measurable} of {judged} annotators closed a triangle")
    else:
        signals.append("no closed triangles: transitivity cannot be measured")
    if repeated:
        signals.append(
            f"agreement on pairs: {repeated} of {per_pair.size} pairs judged twice or more"
        )
    else:
        signals.append("each pair judged once: no agreement on pairs")
    out.campaign_value(
        "preference_design",
        measurable,
        n=judged,
        detail={
            "annotators_with_triplets": measurable,
            "annotators": judged,
            "pairs": int(per_pair.size),
            "pairs_judged_again": repeated,
            "transitivity": bool(measurable),
            "pair_agreement": bool(repeated),
            "message": "; ".join(signals),
        },
    )
    return out
