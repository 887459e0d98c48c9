"""Preference bench: the reliability model against monitor's other signals and the peers.

Data sets: the synthetic golden pairwise cases of ``../shared/golden/cases`` that say who their
annotators are (``truth_info``), and every folder of ``../shared/real-preferences`` (README there).
For each, in one run:

* **worker scores**: the AUC (``realdata.auc``: the probability that a bad worker scores below
  a good one, ties one half; an undefined score gets the median, ``missing`` counts them) for
  the *bad* workers, the bottom 20% of the workers with at least 10 comparisons of items with
  different truth by their true accuracy (the share of those comparisons whose preferred item
  has the higher truth; a tie counts as not preferred; ``realdata.bad_workers`` keeps ties of
  the cut together). A golden case without latent scores has its planted spammers and
  adversaries as the bad workers. Scores: the model's ``accuracy``, ``agreement`` and
  ``answer_accuracy`` (:mod:`monitor.metrics.preferences.model`; the last is the run's
  ``model_accuracy``), monitor's transitivity kappa, CrowdTruth WQS / WUA /
  WWA on pairs, leave-one-out agreement and the agreement with the Davidson order (the existing
  metric functions, called directly); the peers: crowd-kit's NoisyBT skill and each worker's
  agreement (share of their strict answers along the order) with a converged Bradley-Terry fit
  (choix ``opt_pairwise``, Newton-CG, with the same Gaussian penalty as monitor's Davidson fit,
  ``alpha = 0.01``: the maximum-likelihood estimate does not exist where an item never loses)
  and with crowd-kit's BradleyTerry.
* **flags**: precision and recall, against the bad workers, of ``low_quality`` = the model's
  accuracy interval entirely below the chance floor 0.5 (and, for comparison, below the floor
  of the other kinds' rule, ``chance + 0.2 (1 - chance)`` = 0.6; and the interval of the model's
  ``agreement``, ties counting as not along, below the annotator's own ``agreement_floor``).
* **items**: Spearman correlation of the item scores with the truth, for the model, monitor's
  Davidson fit, choix, crowd-kit's BradleyTerry and NoisyBT.
* each real set once more with the truth as gold order for a seeded 10% of its distinct pairs
  (``+gold10``): gold accuracy (Wilson) as a worker score, and the model fitted with that gold.

crowd-kit is run as it is: its BradleyTerry keeps ``p_old`` as a second name for ``p_new``,
which it then updates in place, so its stopping test sees no change and it stops after the
second iteration whatever ``n_iter`` says; NoisyBT runs its defaults (L-BFGS-B from a seeded
random start, ``n_iter = 100``). crowd-kit takes no ties: tie answers are left out of its input.

A synthetic dense campaign with many ties (:func:`dense_ties`) shows the scores where CrowdTruth's
invert. Then a synthetic campaign with planted position-biased annotators (precision and recall of the
model's ``position_bias`` interval excluding 0, beside the binomial test monitor runs today) and
the time to fit a synthetic campaign of 1,000,000 comparisons (200,000 with ``--quick``),
with the machine's load average: the machine is shared, and the time scales with its load.

    python bench/preferences.py [--quick] [--json PATH] [--only NAME ...]

``--quick``: the golden cases and passages only, no crowd-kit BradleyTerry (its dense win
matrix), 200,000 comparisons for the time.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binomtest, spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realdata as rd  # noqa: E402
from davidson import davidson  # noqa: E402

from monitor.metrics.agreement.aggregate import worker_vs_aggregate  # noqa: E402
from monitor.metrics.crowdtruth.scores import crowdtruth, label_counts  # noqa: E402
from monitor.metrics.preferences.flags import gold_pair_accuracy  # noqa: E402
from monitor.metrics.preferences.intraobserver import transitivity  # noqa: E402
from monitor.metrics.preferences.judgments import canonical_pairs, parse_outcomes  # noqa: E402
from monitor.metrics.preferences.model import gold_order, preference_model  # noqa: E402
from tests.golden import shared_dir  # noqa: E402

MIN_COMPARISONS = 10
CHANCE = 0.5
MARGIN_FLOOR = CHANCE + 0.2 * (1 - CHANCE)  # the other kinds' low_quality floor, default margin
GOLD_SHARE, GOLD_SEED = 0.1, 0
CHOIX_ALPHA = 0.01  # = monitor's Davidson ridge: a Gaussian prior of variance 100
# the peer worker scores; the agreement with crowd-kit's BradleyTerry order is shown too
PEERS = ("NoisyBT skill", "agree choix BT")
TARGET_AUC_GAP, TARGET_AUC_PASSAGES, TARGET_PRECISION = 0.03, 0.80, 0.7


@dataclass
class PrefData:
    name: str
    workers: np.ndarray
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    worker_ids: np.ndarray
    truth: np.ndarray | None  # per item code
    planted_bad: set[int] | None = None
    gold: np.ndarray | None = None
    real: bool = False

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)

    @property
    def n_items(self) -> int:
        return int(max(self.left.max(), self.right.max())) + 1


def _codes(worker, left, right, preference, truth_by_item=None, **kw) -> dict[str, Any]:
    wu, wc = np.unique(np.asarray(worker), return_inverse=True)
    iu, ic = np.unique(np.r_[np.asarray(left), np.asarray(right)], return_inverse=True)
    n = len(worker)
    truth = None
    if truth_by_item is not None:
        truth = np.array([truth_by_item.get(i, np.nan) for i in iu], dtype=float)
    return dict(workers=wc, left=ic[:n], right=ic[n:], outcome=parse_outcomes(preference),
                worker_ids=wu, truth=truth, **kw)  # fmt: skip


def load_real(path: Path) -> PrefData:
    with (path / "preferences.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with (path / "truth.csv").open(newline="", encoding="utf-8") as f:
        truth = {r["item"]: float(r["truth"]) for r in csv.DictReader(f)}
    cols = {k: [r[k] for r in rows] for k in ("worker", "left", "right", "preference")}
    return PrefData(path.name, **_codes(**cols, truth_by_item=truth), real=True)


def load_golden(path: Path) -> PrefData | None:
    case = json.loads(path.read_text(encoding="utf-8"))
    info = case.get("truth_info") or {}
    if case.get("kind") != "pairwise" or not info.get("annotators"):
        return None
    rows = case["judgments"]
    cols = {k: [r[k] for r in rows] for k in ("worker", "left", "right", "preference")}
    d = PrefData(path.stem, **_codes(**cols, truth_by_item=info.get("latent_scores")))
    if d.truth is None:
        kinds = info["annotators"]
        d.planted_bad = {
            k for k, w in enumerate(d.worker_ids)
            if kinds[w]["type"] in ("spammer", "adversarial")
        }  # fmt: skip
    return d


def true_quality(d: PrefData) -> tuple[np.ndarray, np.ndarray] | None:
    """(true accuracy, comparisons of items with different truth) per worker code."""
    if d.truth is None:
        return None
    diff = np.sign(d.truth[d.left] - d.truth[d.right])
    ok = diff != 0
    n = np.bincount(d.workers[ok], minlength=d.n_workers)
    hits = np.bincount(d.workers[ok], weights=(d.outcome == diff)[ok], minlength=d.n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        return hits / n, n


# ---------------------------------------------------------------- scores


def _agreement(d: PrefData, scores: np.ndarray) -> np.ndarray:
    """Per worker, the share of their strict answers along the order of ``scores``."""
    strict = d.outcome != 0
    along = np.sign(scores[d.left] - scores[d.right]) == d.outcome
    n = np.bincount(d.workers[strict], minlength=d.n_workers)
    hit = np.bincount(d.workers[strict], weights=along[strict], minlength=d.n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        return hit / n


def monitor_scores(d: PrefData, out: dict[str, Any]) -> tuple[dict, dict]:
    """Worker scores and item scores of the model and of monitor's existing measures."""
    W = d.n_workers
    workers: dict[str, np.ndarray] = {}
    items: dict[str, np.ndarray] = {}
    ties_allowed = bool((d.outcome == 0).any())
    t0 = time.perf_counter()
    m = preference_model(d.workers, d.left, d.right, d.outcome, gold=d.gold)
    out["model"] = {
        "seconds": round(time.perf_counter() - t0, 3), "converged": m.converged,
        "iterations": m.iterations, "crowd_accuracy": round(m.crowd_accuracy, 4),
        "crowd_bias_sd": None if m.crowd_bias_sd is None else round(m.crowd_bias_sd, 4),
    }  # fmt: skip
    out["low_quality"] = {
        "eta < 0.5": m.accuracy_high < CHANCE,
        "eta < 0.6": m.accuracy_high < MARGIN_FLOOR,
        "agr < floor": m.agreement_high < m.agreement_floor,
    }
    workers["model accuracy"] = m.accuracy
    workers["model agreement"] = m.agreement
    if m.answer_accuracy is not None:  # along the true order, through the consensus of others
        workers["model answer accuracy"] = m.answer_accuracy
    items["model"] = m.score
    if d.gold is not None:
        workers["gold accuracy"] = gold_pair_accuracy(d.workers, d.outcome, d.gold,
                                                      n_workers=W).accuracy  # fmt: skip
    tr = transitivity(d.workers, d.left, d.right, d.outcome, ties_allowed=ties_allowed)
    kappa = np.full(W, np.nan)
    for a in tr.annotators:
        kappa[a.worker] = np.nan if a.kappa is None else a.kappa
    workers["transitivity kappa"] = kappa
    cp = canonical_pairs(d.workers, d.left, d.right, d.outcome)
    ct = crowdtruth(cp.workers, cp.pair, label_counts(cp.label, 3), closed=True, n_workers=W,
                    n_units=len(cp.pairs))  # fmt: skip
    workers["CrowdTruth WQS"], workers["CrowdTruth WUA"] = ct.wqs, ct.wua
    workers["CrowdTruth WWA"] = ct.wwa
    loo = worker_vs_aggregate(cp.pair, cp.workers, cp.label, kind="label", n_values=3,
                              n_workers=W)  # fmt: skip
    workers["agreement LOO"] = loo.agreement
    fit = davidson(d.left, d.right, d.outcome, regularization=0.01)
    dav = np.zeros(d.n_items)
    dav[fit.items] = fit.log_strength
    items["Davidson"] = dav
    workers["agree Davidson"] = _agreement(d, dav)
    return workers, items


def run_monitor(d: PrefData, out: dict[str, Any]) -> dict[str, np.ndarray]:
    """The campaign through monitor as a user runs it (create, ingest, recompute, in a throwaway
    SQLite database): the run's ``model_accuracy`` as a worker score and its worker flags, for
    ``evaluate`` to judge beside the model's own figures."""
    import tempfile

    from monitor.core.settings import Settings
    from monitor.ingest.api import create_campaign, ingest_file
    from monitor.pipeline import recompute
    from monitor.store.campaigns import CampaignSpec, get_campaign
    from monitor.store.engine import make_engine, transaction
    from monitor.store.migrate import upgrade
    from monitor.store.runs import latest_run, run_flags, run_values

    names = {1: "left", -1: "right", 0: "tie"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "preferences.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["worker", "left", "right", "preference"])
            w.writerows(zip(map(str, d.workers.tolist()), map(str, d.left.tolist()),
                            map(str, d.right.tolist()), (names[int(y)] for y in d.outcome),
                            strict=True))  # fmt: skip
        engine = make_engine(f"sqlite:///{Path(tmp) / 'm.db'}")
        upgrade(engine)
        create_campaign(
            engine, CampaignSpec("bench", "pairwise", strict=not (d.outcome == 0).any())
        )
        ingest_file(engine, path, "bench")
        t0 = time.perf_counter()
        [_o] = recompute(engine, Settings(bootstrap_samples=0, cache_dir=""))
        out["seconds monitor run"] = round(time.perf_counter() - t0, 2)
        with transaction(engine) as s:
            run = latest_run(s, get_campaign(s, "bench").id)
            assert run is not None
            acc = {v.subject: v.value for v in run_values(s, run.id, "worker", ["model_accuracy"])}
            flagged: dict[str, set[int]] = {}
            for f in run_flags(s, run.id, "worker"):
                flagged.setdefault(f.rule, set()).add(int(f.subject))
        engine.dispose()
    score = np.full(d.n_workers, np.nan)
    for k, v in acc.items():
        score[int(k)] = np.nan if v is None else v
    out["run_flags"] = {rule: sorted(ws) for rule, ws in flagged.items()}
    return score


def peer_scores(d: PrefData, quick: bool, out: dict[str, Any]) -> tuple[dict, dict]:
    import choix
    import pandas as pd
    from crowdkit.aggregation import BradleyTerry, NoisyBradleyTerry

    workers: dict[str, np.ndarray] = {}
    items: dict[str, np.ndarray] = {}
    strict = d.outcome != 0
    win = np.where(d.outcome > 0, d.left, d.right)[strict]
    lose = np.where(d.outcome > 0, d.right, d.left)[strict]
    t0 = time.perf_counter()
    p = choix.opt_pairwise(d.n_items, np.c_[win, lose], alpha=CHOIX_ALPHA, method="Newton-CG")
    out["seconds choix"] = round(time.perf_counter() - t0, 2)
    items["choix BT"] = p
    workers["agree choix BT"] = _agreement(d, p)
    frame = pd.DataFrame({"worker": d.workers[strict], "left": d.left[strict],
                          "right": d.right[strict], "label": win})  # fmt: skip
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nb = NoisyBradleyTerry().fit(frame)
    out["seconds NoisyBT"] = round(time.perf_counter() - t0, 2)
    items["NoisyBT"] = nb.scores_.reindex(range(d.n_items)).to_numpy(dtype=float)
    workers["NoisyBT skill"] = nb.skills_.reindex(range(d.n_workers)).to_numpy(dtype=float)
    if not quick or not d.real:
        t0 = time.perf_counter()
        bt = BradleyTerry(n_iter=100).fit(frame)
        out["seconds crowd-kit BT"] = round(time.perf_counter() - t0, 2)
        s = bt.scores_.reindex(range(d.n_items)).to_numpy(dtype=float)
        s = np.log(np.where(s > 0, s, np.nan))
        s = np.where(np.isfinite(s), s, np.nanmin(s) - 1)  # items it never saw win
        items["crowd-kit BT"] = s
        workers["agree crowd-kit BT"] = _agreement(d, s)
    return workers, items


# ---------------------------------------------------------------- one data set


def evaluate(d: PrefData, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": d.name, "comparisons": len(d.workers),
                           "workers": d.n_workers, "items": d.n_items}  # fmt: skip
    workers, items = monitor_scores(d, out)
    if d.gold is None:  # a run's gold is the items' (an items file): +gold10 is the model's alone
        workers["monitor run model_accuracy"] = run_monitor(d, out)
    w2, i2 = peer_scores(d, quick, out)
    workers.update(w2)
    items.update(i2)
    quality = true_quality(d)
    ids = [str(k) for k in range(d.n_workers)]
    if quality is not None:
        acc, n_eval = quality
        evaluated = {ids[k] for k in np.flatnonzero(n_eval >= MIN_COMPARISONS)}
        bad, cut = rd.bad_workers({ids[k]: float(acc[k]) for k in range(d.n_workers)
                                   if ids[k] in evaluated}, evaluated)  # fmt: skip
        out["bad_cut"] = cut
    else:
        evaluated = set(ids)
        bad = {ids[k] for k in d.planted_bad or ()}
    out["evaluated"], out["bad"] = len(evaluated), len(bad)
    out["auc"] = {
        name: rd.score_auc({ids[k]: _num(v[k]) for k in range(d.n_workers)}, bad, evaluated)
        for name, v in workers.items()
    }
    flags = out.pop("low_quality")
    for rule, ws in out.pop("run_flags", {}).items():
        flags[f"run: {rule}"] = np.isin(np.arange(d.n_workers), ws)
    out["flags"] = {
        name: rd.pr({ids[k] for k in np.flatnonzero(f)}, bad, evaluated)
        for name, f in flags.items()
    }
    if d.truth is not None:
        known = np.isfinite(d.truth)
        out["spearman"] = {
            name: float(
                spearmanr(np.nan_to_num(s[known], nan=np.nanmin(s)), d.truth[known]).statistic
            )
            for name, s in items.items()
        }
    return out


def _num(v: float) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else float(v)


def with_gold(d: PrefData) -> PrefData:
    """The same data with the truth as gold order for a seeded share of its distinct pairs."""
    lo, hi = np.minimum(d.left, d.right), np.maximum(d.left, d.right)
    keys, pair = np.unique(lo * d.n_items + hi, return_inverse=True)
    rng = np.random.default_rng(GOLD_SEED)
    chosen = rng.random(len(keys)) < GOLD_SHARE
    order = gold_order(d.left, d.right, d.truth)
    gold = np.where(chosen[pair.reshape(-1)], order, np.nan)
    return PrefData(d.name + "+gold10", d.workers, d.left, d.right, d.outcome, d.worker_ids,
                    d.truth, d.planted_bad, gold, d.real)  # fmt: skip


# ---------------------------------------------------------------- synthetic


def synthetic(n: int, seed: int, biased_share: float = 0.0) -> dict[str, np.ndarray]:
    """Random pairs of ``n / 20`` items, ``n / 500`` annotators: eta ~ Beta(8, 1.5), 10%
    spammers (eta = 1/2), ``biased_share`` of them with a left offset of +-1.5 logits, 10% ties
    at equal items (Davidson)."""
    rng = np.random.default_rng(seed)
    n_items, n_workers = max(n // 20, 50), max(n // 500, 10)
    s = rng.normal(size=n_items) * 1.5
    w = rng.integers(0, n_workers, n)
    left = rng.integers(0, n_items, n)
    right = (left + rng.integers(1, n_items, n)) % n_items
    eta = rng.beta(8, 1.5, n_workers)
    eta[rng.random(n_workers) < 0.1] = 0.5
    b = np.where(rng.random(n_workers) < biased_share, rng.choice([-1.5, 1.5], n_workers), 0.0)
    d = s[left] - s[right]
    tie = rng.random(n) < 0.2 / (0.2 + 2 * np.cosh(d / 2))
    e, bw = eta[w], b[w]
    p_left = e / (1 + np.exp(-(d + bw))) + (1 - e) / (1 + np.exp(-(bw - d)))
    y = np.where(tie, 0, np.where(rng.random(n) < p_left, 1, -1)).astype(np.int8)
    return {"workers": w, "left": left, "right": right, "outcome": y, "bias": b, "score": s}


def dense_ties(seed: int = 5) -> PrefData:
    """A dense campaign with many ties (the shape where CrowdTruth's worker scores invert): 120
    annotators each judge every pair of 8 blocks of 6 items; good (noise sd 0.3, tie below 0.35
    apart), noisy (sd 1), tie-happy (tie below 1.2 apart), spammers (uniform left / tie / right)
    and adversaries (reversed); the truth is the latent score rounded to halves, so some pairs
    are equal and a tie there is not scored."""
    rng = np.random.default_rng(seed)
    n_items, n_workers, block = 600, 120, 6
    s = rng.normal(size=n_items)
    kinds = rng.choice(5, n_workers, p=[0.5, 0.2, 0.1, 0.15, 0.05])
    noise = np.array([0.3, 1.0, 0.0, 0.3, 0.4])[kinds]
    width = np.array([0.35, 0.35, 0.0, 1.2, 0.2])[kinds]
    iu, ju = np.triu_indices(block, 1)
    blocks = np.stack([rng.choice(n_items, block, replace=False) for _ in range(8 * n_workers)])
    w = np.repeat(np.arange(n_workers), 8 * len(iu))
    a, b = blocks[:, iu].reshape(-1), blocks[:, ju].reshape(-1)
    swap = rng.random(len(a)) < 0.5
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    diff = s[a] - s[b] + rng.normal(size=len(a)) * noise[w]
    y = np.where(np.abs(diff) < width[w], 0, np.sign(diff))
    y = np.where(kinds[w] == 4, -y, y)
    y = np.where(kinds[w] == 2, rng.integers(-1, 2, len(a)), y).astype(np.int8)
    return PrefData("synthetic-dense-ties", w, a, b, y, np.arange(n_workers), np.round(2 * s) / 2)


def position_bias_check(seed: int = 1) -> dict[str, Any]:
    c = synthetic(50_000, seed, biased_share=0.1)
    m = preference_model(c["workers"], c["left"], c["right"], c["outcome"])
    biased = set(np.flatnonzero(c["bias"] != 0).tolist())
    everyone = set(range(len(c["bias"])))
    model = set(np.flatnonzero((m.position_bias_low > 0) | (m.position_bias_high < 0)).tolist())
    rule = _position_rule(m)
    # today's rule (defaults): binomial p < 0.001 and a share of "left" beyond 0.75
    today = set()
    for k in everyone:
        mine = (c["workers"] == k) & (c["outcome"] != 0)
        n, lefts = int(mine.sum()), int((c["outcome"][mine] > 0).sum())
        if n and binomtest(lefts, n).pvalue < 0.001 and abs(lefts / n - 0.5) > 0.25:
            today.add(k)
    return {"annotators": len(everyone), "biased": len(biased),
            "model interval excludes 0": rd.pr(model, biased, everyone),
            "monitor's rule (p < 0.001, share >= 0.75)": rd.pr(rule, biased, everyone),
            "binomial test (today)": rd.pr(today, biased, everyone),
            "crowd_bias_sd": m.crowd_bias_sd}  # fmt: skip


def _position_rule(m: Any) -> set[int]:
    """Who monitor's ``position_bias`` rule flags, with its default thresholds, given the
    model's biases: the rule itself, run on the values a run would store."""
    from monitor.core.results import Value
    from monitor.rules import Thresholds
    from monitor.rules.values import RunValues
    from monitor.rules.worker import position_bias

    values = [
        Value("campaign", "bench", "model_iterations", 1.0, detail={"converged": True,
              "model": "preference_model"}),
        Value("campaign", "bench", "model_chance", 0.5, detail={"measure": "accuracy"}),
        *(Value("worker", str(k), "model_position_bias", float(m.position_bias[k]),
                float(m.position_bias_low[k]), float(m.position_bias_high[k]), int(m.n_strict[k]))
          for k in range(len(m.position_bias))),
    ]  # fmt: skip
    flags = position_bias(RunValues("pairwise", values), Thresholds())
    return {int(f.subject) for f in flags}


def speed(n: int, seed: int = 2) -> dict[str, Any]:
    c = synthetic(n, seed, biased_share=0.05)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    m = preference_model(c["workers"], c["left"], c["right"], c["outcome"])
    seconds = time.perf_counter() - t0
    return {"comparisons": n, "items": len(c["score"]), "annotators": len(c["bias"]),
            "seconds": round(seconds, 2), "converged": m.converged, "iterations": m.iterations,
            "load_average": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
            "score_spearman": round(float(spearmanr(m.score, c["score"]).statistic), 4)}  # fmt: skip


# ---------------------------------------------------------------- report


def print_set(r: dict[str, Any]) -> None:
    print(f"\n== {r['name']}: {r['comparisons']} comparisons, {r['workers']} workers, "
          f"{r['items']} items; evaluated {r['evaluated']} workers, {r['bad']} bad"
          + (f" (true accuracy <= {r['bad_cut']:.3f})" if "bad_cut" in r else " (planted)"))  # fmt: skip
    m = r["model"]
    print(f"   model: {m['seconds']} s, converged={m['converged']}, {m['iterations']} iterations, "
          f"crowd accuracy {m['crowd_accuracy']}, crowd bias sd {m['crowd_bias_sd']}")  # fmt: skip
    print(f"   {'worker score':<22}{'AUC':>7}{'missing':>9}")
    for name, v in sorted(r["auc"].items(), key=lambda kv: -np.nan_to_num(kv[1]["auc"])):
        peer = "  (peer)" if name in PEERS else "  (crowd-kit)" if "crowd-kit" in name else ""
        print(f"   {name:<22}{v['auc']:>7.3f}{v['missing']:>9}{peer}")
    print(f"   {'flag':<22}{'flagged':>8}{'tp':>5}{'precision':>11}{'recall':>8}")
    for name, v in r["flags"].items():
        label = name[5:] if name.startswith("run: ") else f"low_quality {name}"
        label = f"run {label}" if name.startswith("run: ") else label
        print(f"   {label:<29}{v['flagged']:>5}{v['tp']:>5}{v['precision']:>11.3f}"
              f"{v['recall']:>8.3f}")  # fmt: skip
    if "spearman" in r:
        print(f"   {'item scores':<22}{'Spearman':>9}")
        for name, v in sorted(r["spearman"].items(), key=lambda kv: -kv[1]):
            print(f"   {name:<22}{v:>9.4f}")
    secs = {k[8:]: v for k, v in r.items() if k.startswith("seconds ")}
    print("   peers' seconds: " + ", ".join(f"{k} {v}" for k, v in secs.items()))


def targets(r: dict[str, Any]) -> list[str]:
    """The issue's targets on a real set, each as a line ending in ok or MISSED."""
    lines = []
    sp = r.get("spearman", {})
    peers_sp = {k: v for k, v in sp.items() if k != "model"}
    if sp:
        best = max(peers_sp, key=peers_sp.get)
        ok = sp["model"] > peers_sp[best]
        lines.append(f"item Spearman {sp['model']:.4f} > best other {best} {peers_sp[best]:.4f}"
                     f": {'ok' if ok else 'MISSED'}")  # fmt: skip
    auc = {k: v["auc"] for k, v in r["auc"].items()}
    peer = max((k for k in PEERS if k in auc), key=lambda k: np.nan_to_num(auc[k]))
    need = auc[peer] + TARGET_AUC_GAP
    if r["name"].startswith("passages"):
        need = max(need, TARGET_AUC_PASSAGES)
    ok = auc["model accuracy"] >= need
    lines.append(f"model accuracy AUC {auc['model accuracy']:.3f} >= {need:.3f} (best peer "
                 f"{peer} {auc[peer]:.3f} + 0.03): {'ok' if ok else 'MISSED'}")  # fmt: skip
    f = r["flags"].get("run: low_quality", r["flags"]["eta < 0.5"])
    if f["flagged"]:
        ok = f["precision"] >= TARGET_PRECISION
        lines.append(f"low_quality precision {f['precision']:.3f} >= 0.7: "
                     f"{'ok' if ok else 'MISSED'}")  # fmt: skip
    else:
        lines.append("low_quality flags nobody: no precision to judge")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="golden cases and passages; 200k")
    ap.add_argument("--json", type=Path, help="write every figure to this file")
    ap.add_argument("--only", nargs="*", help="data set names to run")
    ap.add_argument("--real", type=Path, default=shared_dir() / "real-preferences")
    args = ap.parse_args()
    sets: list[PrefData] = []
    for p in sorted((shared_dir() / "golden" / "cases").glob("*.json")):
        d = load_golden(p)
        if d is not None:
            sets.append(d)
    sets.append(dense_ties())
    real = sorted(p for p in args.real.iterdir() if (p / "preferences.csv").is_file())
    if args.quick:
        real = [p for p in real if p.name == "passages"]
    for p in real:
        d = load_real(p)
        sets += [d, with_gold(d)]
    if args.only:
        sets = [d for d in sets if d.name in args.only]
    results: dict[str, Any] = {"sets": []}
    for d in sets:
        r = evaluate(d, args.quick)
        results["sets"].append(r)
        print_set(r)
    print("\n== targets (real sets, no gold)")
    for r in results["sets"]:
        if r["name"] in {p.name for p in real}:
            for line in targets(r):
                print(f"   {r['name']}: {line}")
    pb = position_bias_check()
    results["position_bias"] = pb
    print(f"\n== planted position bias ({pb['biased']} of {pb['annotators']} annotators at +-1.5 "
          f"logits; crowd bias sd {pb['crowd_bias_sd']:.3f})")  # fmt: skip
    for name in ("model interval excludes 0", "monitor's rule (p < 0.001, share >= 0.75)",
                 "binomial test (today)"):  # fmt: skip
        v = pb[name]
        print(f"   {name:<28} flagged {v['flagged']:>4}, precision {v['precision']:.3f}, "
              f"recall {v['recall']:.3f}")  # fmt: skip
    sp = speed(200_000 if args.quick else 1_000_000)
    results["speed"] = sp
    print(f"\n== speed: {sp['comparisons']} comparisons, {sp['items']} items, {sp['annotators']} "
          f"annotators: {sp['seconds']} s (converged={sp['converged']}, {sp['iterations']} "
          f"iterations; load average {sp['load_average']} before, {sp['load_after']} after; "
          f"Spearman with the latent scores {sp['score_spearman']})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float), encoding="utf-8")


if __name__ == "__main__":
    main()
