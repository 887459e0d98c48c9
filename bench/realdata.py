"""Real data sets with truth for the signal-quality bench (``bench/flags.py``).

A data set is a folder with ``judgments.csv`` (worker,item,value), ``items.csv`` (item, and a
``gold`` column the bench never ingests as such: on some sets it equals the truth),
``truth.csv`` (item,truth) and ``meta.json`` (``kind`` and ``args``, the arguments of
``monitor campaign create``). Every subfolder with a ``meta.json`` is one data set.

Monitor is run the way a user runs it (``monitor campaign create``, ``ingest``, ``recompute``,
``export labels``, in-process, on a throwaway SQLite database); the run's values and flags are
then read through the store API. crowd-kit's aggregators run on the same judgments (labels only:
it has no comparable rating aggregator; ratings get the plain mean and median instead).

Definitions (the figures depend on them):

* **True worker quality**: labels, the share of a worker's answers equal to the truth; ratings,
  minus the mean absolute error against the truth. Only workers with at least ``min_n``
  judgments are evaluated. **Bad workers** are the bottom 20 % by true quality
  (``ceil(0.2 n)`` workers, plus any tied with the last of them, so ties are never split).
* **AUC** of a worker score: the probability that a bad worker scores below a good one, ties
  counting one half (the Mann-Whitney U of the good workers over ``n_good * n_bad``). A worker
  the score leaves undefined gets the median of the defined scores (neutral; the count of such
  workers is reported as ``missing``).
* **Items the crowd gets wrong** (what an ``ambiguous`` flag should find): labels, the majority
  answer differs from the truth, a tie for the top counting as wrong (the crowd then has no
  answer, which is what an ambiguity flag should catch); ratings, the plain mean of the
  judgments is further from the truth than the 80th percentile of ``|mean - truth|`` over the
  data set's items. A fixed distance would make that set depend on the scale and on how noisy
  the experts' truth itself is (affect's truth is the mean of 6 experts); the percentile makes it
  the worst fifth of the items on every data set, the same base rate as the bad workers, so
  precision figures compare across data sets.
* **Aggregates**: accuracy against the truth (labels; an item without an answer counts as wrong)
  or mean absolute error (ratings; an item without an answer gets the plain mean).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import rankdata

from monitor.cli import main as monitor_main
from monitor.core.settings import Settings
from monitor.store.arrays import load_arrays
from monitor.store.campaigns import get_campaign
from monitor.store.engine import make_engine, transaction
from monitor.store.runs import latest_run, run_flags, run_values

BAD_SHARE = 0.2
WRONG_QUANTILE = 0.8
# worker-scope values that are not quality scores (every other worker metric is evaluated);
# names with "chance" or "floor" (model_chance_sd, model_floor_sd, model_worker_chance) are a
# worker's own reference level or flag threshold, not a score either
NOT_SCORES = {"n_judgments", "mean_duration_s", "tie_rate", "position_bias", "side_test"}
NOT_SCORE_PARTS = ("chance", "floor")


def is_score(metric: str) -> bool:
    return metric not in NOT_SCORES and not any(p in metric for p in NOT_SCORE_PARTS)


# orientation: default higher is better; these are negated ("abs": minus the absolute value)
LOWER_IS_BETTER = {
    "model_noise_sd": "neg",
    "model_mae": "neg",
    "gold_mae": "neg",
    "model_bias": "abs",
    "constant_answer": "neg",  # the share of the commonest answer
}
# item-scope values that are an answer per item: how to read the answer
ITEM_ANSWERS = {"model_label": "label", "model_mean": "number", "phi_mu": "number", "uas": "top"}
# crowd-kit iteration caps: GLAD's M-step is a conjugate gradient per EM step (~1 s per step on
# rte), MACE restarts from random points (10 by default)
GLAD_ITER = 20
MACE_RESTARTS = 3
MACE_ITER = 50


@dataclass
class DataSet:
    name: str
    path: Path
    kind: str  # "label" | "rating"
    args: list[str]
    judgments: list[tuple[str, str, str]]  # (worker, item, value) as text
    truth: dict[str, str]
    items: list[str]

    @property
    def scale(self) -> tuple[float, float] | None:
        if self.kind != "rating":
            return None
        a = self.args
        return float(a[a.index("--min") + 1]), float(a[a.index("--max") + 1])


def find_datasets(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if (p / "meta.json").is_file())


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def load_dataset(path: Path) -> DataSet:
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    judgments = [(r["worker"], r["item"], r["value"]) for r in _rows(path / "judgments.csv")]
    truth = {r["item"]: r["truth"] for r in _rows(path / "truth.csv")}
    items_file = path / "items.csv"
    items = [r["item"] for r in _rows(items_file)] if items_file.is_file() else []
    return DataSet(path.name, path, meta["kind"], list(meta["args"]), judgments, truth, items)


# ---------------------------------------------------------------- figures


def auc(bad: Iterable[float], good: Iterable[float]) -> float:
    """P(a bad worker scores below a good one), ties 1/2 (Mann-Whitney U / (n_good n_bad))."""
    b = np.asarray(list(bad), dtype=np.float64)
    g = np.asarray(list(good), dtype=np.float64)
    if b.size == 0 or g.size == 0:
        return math.nan
    ranks = rankdata(np.concatenate([g, b]))
    u_good = ranks[: g.size].sum() - g.size * (g.size + 1) / 2
    return float(u_good / (g.size * b.size))


def score_auc(scores: Mapping[str, float | None], bad: set[str], evaluated: set[str]) -> dict:
    """AUC of one worker score over the evaluated workers (undefined scores: the median)."""
    defined = {w: float(v) for w, v in scores.items() if v is not None and math.isfinite(float(v))}
    fill = float(np.median(list(defined.values()))) if defined else 0.0
    s = {w: defined.get(w, fill) for w in evaluated}
    value = auc([s[w] for w in evaluated & bad], [s[w] for w in evaluated - bad])
    return {"auc": value, "missing": len(evaluated - defined.keys())}


def pr(flagged: set[str], actual: set[str], universe: set[str]) -> dict:
    f, a = flagged & universe, actual & universe
    tp = len(f & a)
    return {
        "tp": tp,
        "flagged": len(f),
        "actual": len(a),
        "precision": tp / len(f) if f else math.nan,
        "recall": tp / len(a) if a else math.nan,
    }


def worker_quality(ds: DataSet) -> tuple[dict[str, float], dict[str, int]]:
    """True quality per worker (higher is better) and judgments per worker."""
    hits: dict[str, list[float]] = defaultdict(list)
    for w, i, v in ds.judgments:
        if i not in ds.truth:
            continue
        if ds.kind == "rating":
            hits[w].append(-abs(float(v) - float(ds.truth[i])))
        else:
            hits[w].append(float(v == ds.truth[i]))
    n = Counter(w for w, _, _ in ds.judgments)
    return {w: float(np.mean(h)) for w, h in hits.items()}, dict(n)


def bad_workers(quality: Mapping[str, float], evaluated: set[str]) -> tuple[set[str], float]:
    """The bottom ``BAD_SHARE`` of the evaluated workers by true quality (ties kept together)."""
    ranked = sorted(evaluated, key=lambda w: (quality[w], w))
    if not ranked:
        return set(), math.nan
    cut = quality[ranked[max(1, math.ceil(BAD_SHARE * len(ranked))) - 1]]
    return {w for w in ranked if quality[w] <= cut}, cut


def by_item(ds: DataSet) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for _, i, v in ds.judgments:
        out[i].append(v)
    return out


def crowd_wrong(ds: DataSet, answers: Mapping[str, list[str]]) -> tuple[set[str], float | None]:
    """Items whose plain crowd answer is wrong (see the module docstring) and, for ratings,
    the distance beyond which the mean counts as wrong."""
    items = [i for i in answers if i in ds.truth]
    if ds.kind == "rating":
        dist = {i: abs(np.mean([float(v) for v in answers[i]]) - float(ds.truth[i])) for i in items}
        cut = float(np.quantile(list(dist.values()), WRONG_QUANTILE)) if dist else math.nan
        return {i for i, d in dist.items() if d > cut}, cut
    wrong = set()
    for i in items:
        top = Counter(answers[i]).most_common()
        if (len(top) > 1 and top[0][1] == top[1][1]) or top[0][0] != ds.truth[i]:
            wrong.add(i)
    return wrong, None


def rating_errors(ds: DataSet, answers: Mapping[str, Any], items: set[str]) -> np.ndarray:
    """Signed error of a rating aggregate on each of ``items`` (sorted), the plain mean where
    it gives no finite answer."""
    plain = {i: np.mean([float(v) for v in vs]) for i, vs in by_item(ds).items()}
    errs = []
    for i in sorted(items):
        a = answers.get(i)
        a = plain[i] if a is None or not math.isfinite(float(a)) else float(a)
        errs.append(a - float(ds.truth[i]))
    return np.array(errs)


def answer_error(ds: DataSet, answers: Mapping[str, Any], items: set[str]) -> float:
    """Accuracy (labels) or MAE (ratings) of one aggregate on ``items``."""
    if ds.kind == "rating":
        return float(np.mean(np.abs(rating_errors(ds, answers, items))))
    return float(np.mean([str(answers.get(i)) == ds.truth[i] for i in items]))


# ---------------------------------------------------------------- monitor, as a user runs it


@dataclass
class MonitorRun:
    seconds: float
    worker_scores: dict[str, dict[str, float | None]]
    worker_flags: dict[str, set[str]]
    item_flags: dict[str, set[str]]
    item_answers: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def _cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = monitor_main(list(argv))
    if code != 0:
        raise RuntimeError(f"monitor {' '.join(argv)}: exit {code}\n{err.getvalue()}")
    return out.getvalue()


def scrub_environment() -> list[str]:
    """Drop ``MONITOR_<setting>`` variables so the settings are the bench's own."""
    keys = {f"MONITOR_{k.upper()}" for k in Settings.__dataclass_fields__}
    dropped = sorted(k for k in os.environ if k in keys)
    for k in dropped:
        del os.environ[k]
    return dropped


def run_monitor(
    ds: DataSet, tmp: Path, settings: Mapping[str, str], gold: Mapping[str, str] | None = None
) -> MonitorRun:
    """Create, ingest (items without gold, or with ``gold``), recompute, export labels."""
    url = f"sqlite:///{tmp}/monitor.db"
    config = tmp / "monitor.toml"
    config.write_text("".join(f"{k} = {json.dumps(str(v))}\n" for k, v in settings.items()))
    items = tmp / "items.csv"
    with items.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["item", "gold"])
        w.writerows([i, (gold or {}).get(i, "")] for i in ds.items)
    common = ("--db", url, "--config", str(config))
    t0 = time.perf_counter()
    _cli(*common, "campaign", "create", ds.name, *ds.args)
    _cli(*common, "ingest", str(ds.path / "judgments.csv"), "--campaign", ds.name,
         "--items", str(items))  # fmt: skip
    _cli(*common, "recompute", "--campaign", ds.name)
    seconds = time.perf_counter() - t0
    labels = tmp / "labels.csv"
    _cli(*common, "export", "labels", "--campaign", ds.name, "--out", str(labels))
    answers: dict[str, dict[str, Any]] = {
        "export": {r["item"]: (r["value"] or None) for r in _rows(labels)}
    }
    engine = make_engine(url)
    try:
        with transaction(engine) as s:
            campaign = get_campaign(s, ds.name)
            run = latest_run(s, campaign.id)
            assert run is not None
            categories = load_arrays(s, campaign).categories
            workers = run_values(s, run.id, "worker")
            item_values = run_values(s, run.id, "item", list(ITEM_ANSWERS))
            flags = run_flags(s, run.id)
    finally:
        engine.dispose()
    scores: dict[str, dict[str, float | None]] = defaultdict(dict)
    for v in workers:
        if is_score(v.metric):
            scores[v.metric][v.subject] = _orient(v.metric, v.value)
    for v in item_values:
        answers.setdefault(v.metric, {})[v.subject] = _answer(v, categories)
    if ds.kind == "rating":
        answers = {k: {i: _num(a) for i, a in d.items()} for k, d in answers.items()}
    w_flags: dict[str, set[str]] = defaultdict(set)
    i_flags: dict[str, set[str]] = defaultdict(set)
    notes = []
    for f in flags:
        if f.scope == "worker":
            w_flags[f.rule].add(f.subject)
        elif f.scope == "item":
            i_flags[f.rule].add(f.subject)
        else:
            notes.append(f"{f.scope} flag {f.rule}: {f.evidence.get('message', '')}")
    return MonitorRun(seconds, dict(scores), dict(w_flags), dict(i_flags), answers, notes)


def _num(a: Any) -> float | None:
    try:
        x = float(a)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _orient(metric: str, value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    how = LOWER_IS_BETTER.get(metric)
    return -value if how == "neg" else -abs(value) if how == "abs" else value


def _answer(v: Any, categories: tuple[str, ...]) -> Any:
    """An item's answer from a stored value: the top of a distribution in the detail
    (``posterior`` of model_label, ``scores`` of uas), else the value itself (a number, or a
    category code)."""
    detail = v.detail or {}
    for key in ("posterior", "scores"):
        dist = detail.get(key)
        if isinstance(dist, dict) and dist:
            return max(sorted(dist), key=lambda k: dist[k])
    if ITEM_ANSWERS[v.metric] == "top" or v.value is None:
        return None
    if ITEM_ANSWERS[v.metric] == "label" and categories:
        return categories[int(v.value)]
    return v.value


# ---------------------------------------------------------------- crowd-kit and baselines


def run_crowdkit(ds: DataSet, cache: Path | None = None) -> dict[str, dict[str, Any]]:
    """Labels: DawidSkene, GLAD, MACE, Wawa, MajorityVote, as ``{"answers": {method: {item:
    label}}, "scores": {method: {worker: score}}, "seconds": {method: s}}``. Worker scores: DS,
    the expected accuracy sum_k prior_k e[w, k, k]; GLAD, alpha; MACE, the probability of not
    spamming; Wawa and MV, accuracy against their own answers.

    With ``cache`` (a folder) the result is kept there under a digest of the judgments and the
    iteration caps: crowd-kit's figures do not change when monitor does, and GLAD alone takes
    a minute on rte."""
    key = hashlib.sha256(
        json.dumps([2, ds.judgments, GLAD_ITER, MACE_RESTARTS, MACE_ITER]).encode()
    ).hexdigest()[:16]
    stored = cache / f"crowdkit-{ds.name}-{key}.json" if cache is not None else None
    if stored is not None and stored.is_file():
        return json.loads(stored.read_text(encoding="utf-8"))
    out = _run_crowdkit(ds)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(json.dumps(out), encoding="utf-8")
    return out


def _run_crowdkit(ds: DataSet) -> dict[str, dict[str, Any]]:
    import pandas as pd
    from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote, Wawa

    df = pd.DataFrame(ds.judgments, columns=["worker", "task", "label"])
    out: dict[str, dict[str, Any]] = {"answers": {}, "scores": {}, "seconds": {}, "iterations": {}}
    for name, model in (
        ("DS", DawidSkene(n_iter=100)),
        ("GLAD", GLAD(n_iter=GLAD_ITER)),
        ("MACE", MACE(n_restarts=MACE_RESTARTS, n_iter=MACE_ITER)),
        ("Wawa", Wawa()),
        ("MV", MajorityVote()),
    ):
        t0 = time.perf_counter()
        if name == "Wawa":
            # Wawa.predict's check_is_fitted fails with scikit-learn >= 1.6 (no
            # __sklearn_tags__): its predict is this majority vote weighted by the skills
            model.fit(df)
            labels = MajorityVote().fit(df, skills=model.skills_).labels_
        else:
            labels = model.fit_predict(df)
        if name == "DS":
            # errors_ has a row (worker, answer) only for answers the worker gave
            prior, err = model.priors_, model.errors_
            diag = {(w, a): float(err.at[(w, a), a]) for w, a in err.index if a in err.columns}
            skill = {
                w: sum(prior[k] * diag.get((w, k), 0.0) for k in prior.index)
                for w in err.index.get_level_values(0).unique()
            }
        elif name == "GLAD":
            skill = model.alphas_.to_dict()
        elif name == "MACE":
            names = pd.factorize(df["worker"])[1]
            skill = dict(zip(names, model.spamming_[:, 1], strict=True))
        else:
            skill = model.skills_.to_dict()
        out["answers"][name] = {str(k): str(v) for k, v in labels.items()}
        out["scores"][name] = {str(k): float(v) for k, v in skill.items()}
        out["seconds"][name] = time.perf_counter() - t0
        if getattr(model, "loss_history_", None) is not None:  # DS, GLAD: EM steps taken
            out["iterations"][name] = len(model.loss_history_)
    return out


def rating_baselines(ds: DataSet) -> dict[str, dict[str, Any]]:
    """Ratings, what a user gets without monitor: the plain mean and median as answers; as
    worker scores minus the mean distance to the others' mean of the item (``loo_dist``,
    leave-one-out) and the correlation with it (``loo_corr``). Same shape as
    :func:`run_crowdkit`."""
    answers = by_item(ds)
    sums = {i: (sum(map(float, vs)), len(vs)) for i, vs in answers.items()}
    dist: dict[str, list[float]] = defaultdict(list)
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for w, i, v in ds.judgments:
        s, n = sums[i]
        if n < 2:
            continue
        loo = (s - float(v)) / (n - 1)
        dist[w].append(abs(float(v) - loo))
        pairs[w].append((float(v), loo))

    def corr(p: list[tuple[float, float]]) -> float | None:
        a = np.asarray(p)
        if len(a) < 3 or a[:, 0].std() == 0 or a[:, 1].std() == 0:
            return None
        return float(np.corrcoef(a[:, 0], a[:, 1])[0, 1])

    return {
        "answers": {
            "mean": {i: float(np.mean([float(v) for v in vs])) for i, vs in answers.items()},
            "median": {i: float(np.median([float(v) for v in vs])) for i, vs in answers.items()},
        },
        "scores": {
            "loo_dist": {w: -float(np.mean(d)) for w, d in dist.items()},
            "loo_corr": {w: corr(p) for w, p in pairs.items()},
        },
        "seconds": {},
    }


def gold_sample(ds: DataSet, share: float, seed: int) -> dict[str, str]:
    """Gold (the truth) for a seeded random ``share`` of the items."""
    items = sorted(i for i in ds.items if i in ds.truth)
    chosen = random.Random(seed).sample(items, round(share * len(items)))
    return {i: ds.truth[i] for i in sorted(chosen)}
