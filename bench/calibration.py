"""Calibration bench: does ``model_accuracy`` say how often a worker is right?

Every real data set with truth under ``../shared/real-data`` (label sets; rating sets have no
accuracy and are skipped, noted in the output) and ``../shared/real-preferences`` (pairwise
sets) is run the way a user runs it (``monitor campaign create``, ``ingest``, ``recompute``, in
process, on a throwaway SQLite database, default settings but ``bootstrap_samples = 0`` and
``phi = map``, which no worker accuracy depends on), without gold. Then, over the workers with
at least ``MIN_N`` judgments that the truth can score:

* **true accuracy** ``t``: labels, the share of the worker's answers on items with a truth that
  equal it; preferences, the share of their comparisons of two items with different truth whose
  preferred item has the higher truth (a tie counts as wrong; the shared sets have none);
  ``n`` the number of such answers;
* **bias**: the mean of ``model_accuracy - t``; **MAE**: the mean of ``|model_accuracy - t|``;
* **coverage**: the share of workers whose 95% interval, widened by the binomial noise of
  ``t``, holds ``t``. ``model_accuracy`` (``a``) is an expected share, ``t`` the share observed
  on ``n`` answers, so ``t - a`` has the model's uncertainty plus a binomial sd
  ``sqrt(a (1 - a) / n)``: each side of the interval is widened in quadrature, ``low' = a -
  sqrt((a - low)^2 + z^2 a (1 - a) / n)`` and ``high' = a + sqrt((high - a)^2 + z^2 a (1 - a) /
  n)``, ``z = 1.96``;
* the mean interval width (unwidened) and the mean ``t``;
* **sure**: how far the truth itself can be reached from the answers: over the units (items;
  unordered pairs) with ``SURE_N`` or more answers of which ``SURE_SHARE`` or more agree, the
  share whose truth is the crowd's answer. Below 1 the truth is a proxy the crowd does not see
  (a passage's school grade is not how hard it reads; a face's real age is not the age it
  shows): a worker measured against any consensus of the answers is then "right" more often
  than against the truth, and no estimate from the answers alone (without gold) can close that
  gap. The gap it leaves in ``t`` is roughly ``(2 a - 1) (1 - sure)``.

Where the truth covers only part of the items, and not a random part (adult2: 333 of 11,040
sites, with far fewer G than the rest), ``t`` is measured on other answers than those
``model_accuracy`` speaks of; a second row (``same``) moves each worker's accuracy and interval
by the model's own difference between the two (:func:`scored_shift`): the model's expectation
over the very answers the truth scores.

Targets, per set: ``|bias| <= 0.05`` and coverage ``>= 0.85``.

A second table puts the report's verdict about the deliverable (``export_quality``, the expected
quality of what ``monitor export labels`` gives, with its 95% interval) beside the true one,
measured on the exported answers against ``truth.csv`` (items with a truth only): label sets,
the share of items whose exported label is the truth (target: within ``TARGET_EXPORT_LABELS``);
preference sets, the share of pairs of ranked items of different truth that the exported ranking
orders as the truth (all pairs, or ``MAX_PAIRS`` drawn at random; target: within
``TARGET_EXPORT_PAIRS``); rating sets, the mean absolute error of the exported values (no
target). ``inside``: whether the true figure lies in the interval, widened by the truth's own
sampling. Where the truth covers only part of the items (adult2), a second row (``same``)
gives the run's expectation over those items alone (:func:`expected_on_truth`). ``sure`` as in
the first table: where it is below 1, the truth disagrees with a near-unanimous crowd on that
share of units, which no estimate from the answers alone sees (the expectation is then too high
by about that share).

``--gold SHARE`` gives the truth of a seeded random share of the items (those with a truth) as
gold, through an items file as a user would: what the numbers become once the campaign has gold
questions (the figures still count every answer and every item, the gold ones included). A
third table then gives the verdict measured on that gold (``export_gold``: each gold item
answered with its gold withheld, 5 folds) against the export's true quality on the items not
given as gold (label sets: target within ``TARGET_EXPORT_LABELS``, the interval holding it).

    python bench/calibration.py [--only NAME ...] [--min-n 30] [--json PATH] [--worst K]
                                [--gold SHARE]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realdata as rd  # noqa: E402

from monitor.actions.labels import aggregate_labels  # noqa: E402
from monitor.store.campaigns import get_campaign  # noqa: E402
from monitor.store.engine import make_engine, transaction  # noqa: E402
from monitor.store.runs import latest_run, run_values  # noqa: E402
from tests.golden import shared_dir  # noqa: E402

MIN_N = 30
POSTERIOR = ("posterior",)  # run()'s key of the items' posteriors
WORKER_N = ("n",)  # and of the workers' judgments
GOLD_VERDICT = ("gold",)  # and of the campaign's export_gold
SURE_N, SURE_SHARE = 10, 0.9
Z = 1.959963984540054
TARGET_BIAS, TARGET_COVERAGE = 0.05, 0.85
TARGET_EXPORT_LABELS, TARGET_EXPORT_PAIRS = 0.03, 0.05
MAX_PAIRS = 2_000_000
SETTINGS = {"bootstrap_samples": "0", "phi": "map"}
GOLD_SEED = 20261128


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def truth_labels(path: Path) -> tuple[dict[str, float], dict[str, int]]:
    """Per worker: share of answers equal to the truth, and the number of answers with one."""
    truth = {r["item"]: r["truth"] for r in _rows(path / "truth.csv")}
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in _rows(path / "judgments.csv"):
        t = truth.get(r["item"])
        if t is None or t == "":
            continue
        h = hits[r["worker"]]
        h[0] += int(r["value"] == t)
        h[1] += 1
    return {w: h[0] / h[1] for w, h in hits.items()}, {w: h[1] for w, h in hits.items()}


def scored_shift(path: Path, posterior: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per worker: the model's expected share right on the answers the truth scores (the mean
    posterior of each answer, from the run's ``model_label``) minus that on all their answers.
    Where the truth covers a part of the items that is not a random one (adult2: 333 of 11,040
    sites, harder than the rest), ``model_accuracy``, an expectation over all the worker's
    answers, is compared with the truth over other answers; adding this shift compares the
    model's expectation over the same answers. Zero where the truth covers every item."""
    truth = {r["item"] for r in _rows(path / "truth.csv") if r["truth"] != ""}
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0, 0])
    for r in _rows(path / "judgments.csv"):
        p = posterior.get(r["item"], {}).get(r["value"], 0.0)
        h = sums[r["worker"]]
        h[0] += p
        h[1] += 1
        if r["item"] in truth:
            h[2] += p
            h[3] += 1
    return {w: h[2] / h[3] - h[0] / h[1] for w, h in sums.items() if h[3]}


def truth_preferences(path: Path) -> tuple[dict[str, float], dict[str, int]]:
    """Per worker: share of comparisons of items with different truth answered along it."""
    truth = {r["item"]: float(r["truth"]) for r in _rows(path / "truth.csv")}
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in _rows(path / "preferences.csv"):
        tl, tr = truth.get(r["left"]), truth.get(r["right"])
        if tl is None or tr is None or tl == tr:
            continue
        along = (r["preference"] == "left" and tl > tr) or (r["preference"] == "right" and tr > tl)
        h = hits[r["worker"]]
        h[0] += int(along)
        h[1] += 1
    return {w: h[0] / h[1] for w, h in hits.items()}, {w: h[1] for w, h in hits.items()}


def sure_crowd(path: Path, pairwise: bool) -> tuple[int, float | None]:
    """The units with ``SURE_N``+ answers, ``SURE_SHARE`` of them alike, and the share of them
    whose truth is the crowd's answer (None: no such unit)."""
    counts: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    if pairwise:
        truth = {r["item"]: float(r["truth"]) for r in _rows(path / "truth.csv")}
        for r in _rows(path / "preferences.csv"):
            if r["preference"] not in ("left", "right"):
                continue
            won = r["left"] if r["preference"] == "left" else r["right"]
            counts[frozenset((r["left"], r["right"]))][won] += 1
    else:
        labels = {r["item"]: r["truth"] for r in _rows(path / "truth.csv")}
        for r in _rows(path / "judgments.csv"):
            counts[r["item"]][r["value"]] += 1
    sure = agree = 0
    for unit, c in counts.items():
        n = sum(c.values())
        answer, top = max(c.items(), key=lambda kv: kv[1])
        if n < SURE_N or top < SURE_SHARE * n:
            continue
        if pairwise:
            a, b = tuple(unit)
            other = b if answer == a else a
            if a not in truth or b not in truth or truth[a] == truth[b]:
                continue
            right = truth[answer] > truth[other]
        else:
            if not labels.get(unit):
                continue
            right = labels[unit] == answer
        sure += 1
        agree += int(right)
    return sure, (agree / sure if sure else None)


def gold_share(path: Path, share: float, seed: int = GOLD_SEED) -> dict[str, str]:
    """The truth of a seeded random ``share`` of the items with one, as gold."""
    truth = {r["item"]: r["truth"] for r in _rows(path / "truth.csv") if r["truth"] != ""}
    chosen = random.Random(seed).sample(sorted(truth), round(share * len(truth)))
    return {i: truth[i] for i in sorted(chosen)}


def run(
    path: Path, kind: str, args: list[str], data: Path, gold: dict[str, str] | None = None
) -> tuple[dict[str, Any], float]:
    """Create, ingest (with ``gold``: an items file giving those items' gold values),
    recompute; the workers' ``model_accuracy`` with its interval, and under ``None`` the
    campaign's ``export_quality`` (value, low, high, detail) and the exported answers
    (``monitor export labels``' rows)."""
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/monitor.db"
        config = Path(tmp) / "monitor.toml"
        config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in SETTINGS.items()))
        common = ("--db", url, "--config", str(config))
        t0 = time.perf_counter()
        rd._cli(*common, "campaign", "create", path.name, *args)
        items: tuple[str, ...] = ()
        if gold:
            with (Path(tmp) / "items.csv").open("w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerows([("item", "gold"), *sorted(gold.items())])
            items = ("--items", str(Path(tmp) / "items.csv"))
        rd._cli(*common, "ingest", str(data), "--campaign", path.name, *items)
        rd._cli(*common, "recompute", "--campaign", path.name)
        seconds = time.perf_counter() - t0
        engine = make_engine(url)
        try:
            with transaction(engine) as s:
                c = get_campaign(s, path.name)
                r = latest_run(s, c.id)
                assert r is not None
                vals = run_values(s, r.id, "worker", ["model_accuracy"])
                out: dict[Any, Any] = {v.subject: (v.value, v.low, v.high) for v in vals}
                out[POSTERIOR] = {
                    v.subject: (v.detail or {}).get("posterior", {})
                    for v in run_values(s, r.id, "item", ["model_label"])
                }
                out[WORKER_N] = {v.subject: v.n for v in vals}
                q = run_values(s, r.id, "campaign", ["export_quality"])
                out[None] = (
                    ([(v.value, v.low, v.high, v.detail) for v in q][:1] or [None])[0],
                    aggregate_labels(s, c),
                )
                g = run_values(s, r.id, "campaign", ["export_gold"])
                out[GOLD_VERDICT] = ([(v.value, v.low, v.high, v.n) for v in g][:1] or [None])[0]
        finally:
            engine.dispose()
    return out, seconds


def true_export(path: Path, kind: str, rows: list[dict[str, Any]]) -> tuple[float, int, int]:
    """The exported answers' true quality against ``truth.csv``, how many units it counts
    (labels: items; preferences: pairs; ratings: items, as a mean absolute error) and how many
    of them are independent (preferences: half the items with a truth)."""
    truth = {r["item"]: r["truth"] for r in _rows(path / "truth.csv") if r["truth"] != ""}
    if kind == "pairwise":
        ranked = [(float(r["score"]), float(truth[r["item"]])) for r in rows if r["item"] in truth]
        score = np.array([x[0] for x in ranked])
        t = np.array([x[1] for x in ranked])
        n = len(ranked)
        if n * (n - 1) // 2 <= MAX_PAIRS:
            i, j = np.triu_indices(n, k=1)
        else:
            rng = np.random.default_rng(0)
            i = rng.integers(0, n, MAX_PAIRS)
            j = (i + rng.integers(1, n, MAX_PAIRS)) % n
        differ = t[i] != t[j]
        right = np.sign(score[i] - score[j]) == np.sign(t[i] - t[j])
        return float(right[differ].mean()), int(differ.sum()), n // 2
    if kind == "rating":
        err = [abs(float(r["value"]) - float(truth[r["item"]])) for r in rows
               if r["item"] in truth and r["value"] is not None]  # fmt: skip
        return float(np.mean(err)), len(err), len(err)
    hits = [str(r["value"]) == truth[r["item"]] for r in rows if r["item"] in truth]
    return float(np.mean(hits)), len(hits), len(hits)


def expected_on_truth(
    path: Path,
    model: dict[str, Any],
    counts: dict[str, int | None],
    posterior: dict[str, dict[str, float]],
    rows: list[dict[str, Any]],
) -> tuple[float, float, float] | None:
    """Label sets whose truth covers only part of the items (adult2): the run's expected
    export accuracy over those items alone, by the run's own function on the run's inputs (the
    judgments, the workers' stored accuracies and counts, the exported labels, the class prior
    as the mean of the items' posteriors, which is how Dawid-Skene fits it): items without a
    truth are given no exported label, so they are not scored. None where the truth covers
    every exported item."""
    from monitor.metrics.labels.export_accuracy import expected_accuracy

    truth = {r["item"] for r in _rows(path / "truth.csv") if r["truth"] != ""}
    exported = {str(r["item"]): r["value"] for r in rows if r.get("value") is not None}
    if all(i in truth for i in exported):
        return None
    judgments = _rows(path / "judgments.csv")
    items = sorted({r["item"] for r in judgments})
    workers = sorted({r["worker"] for r in judgments})
    classes = sorted({r["value"] for r in judgments} | {str(v) for v in exported.values()})
    ii, ww, cc = ({k: n for n, k in enumerate(x)} for x in (items, workers, classes))
    prior = np.zeros(len(classes))
    for p in posterior.values():
        for c, v in p.items():
            prior[cc[c]] += v
    ex = [cc[str(exported[i])] if i in truth and i in exported else -1 for i in items]
    acc = [model.get(w, (None,))[0] for w in workers]
    r = expected_accuracy(
        [ii[r["item"]] for r in judgments],
        [ww[r["worker"]] for r in judgments],
        [cc[r["value"]] for r in judgments],
        ex,
        [np.nan if a is None else a for a in acc],
        [counts.get(w) or 0 for w in workers],
        prior / prior.sum(),
    )
    return r.value, r.low, r.high


def export_table(
    results: list[tuple[str, str, Any, tuple[float, int, int]]],
    sure: dict[str, float | None],
    same: dict[str, tuple[float, float, float]] | None = None,
) -> dict[str, Any]:
    """The second table: expected against true export quality, per set. ``inside``: the true
    figure within the interval widened in quadrature by the sampling of the units with a truth
    (a share: binomial sd on the independent units; not for ratings), as the first table's."""
    print()
    print(
        "the verdict's expected export quality (95% interval) against the truth; inside: "
        "the true figure within the interval widened by the truth's own sampling"
    )
    print(f"{'set':<10}{'measure':>14}{'expected':>10}{'interval':>18}{'true':>8}{'diff':>8}"
          f"{'units':>9}{'inside':>8}{'sure':>7}  target")  # fmt: skip
    out = {}
    for name, kind, q, (true, units, m) in results:
        if q is None or q[0] is None:
            print(f"{name:<10}  no export_quality stored")
            continue
        value, low, high, detail = q
        measure = (detail or {}).get("measure", "?")
        diff = value - true
        target = {"accuracy": TARGET_EXPORT_LABELS, "pair_accuracy": TARGET_EXPORT_PAIRS}.get(
            measure
        )
        met = "—" if target is None else ("met" if abs(diff) <= target else "MISSED")
        tgt = "" if target is None else f" (|diff| <= {target})"
        b2 = 0.0 if kind == "rating" else Z**2 * value * (1 - value) / max(m, 1)
        inside = (value - math.sqrt((value - low) ** 2 + b2) <= true
                  <= value + math.sqrt((high - value) ** 2 + b2))  # fmt: skip
        print(f"{name:<10}{measure:>14}{value:>10.3f}{f'[{low:.3f}, {high:.3f}]':>18}"
              f"{true:>8.3f}{diff:>+8.3f}{units:>9}{'yes' if inside else 'no':>8}"
              f"{'     —' if sure.get(name) is None else f'{sure[name]:>7.3f}'}  {met}{tgt}")  # fmt: skip
        out[name] = {"measure": measure, "expected": value, "low": low, "high": high,
                     "true": true, "units": units, "inside": inside, "met": met}  # fmt: skip
        if same and name in same:
            value, low, high = same[name]
            diff = value - true
            met = "—" if target is None else ("met" if abs(diff) <= target else "MISSED")
            inside = (value - math.sqrt((value - low) ** 2 + b2) <= true
                      <= value + math.sqrt((high - value) ** 2 + b2))  # fmt: skip
            print(f"{'  same':<10}{'':>14}{value:>10.3f}{f'[{low:.3f}, {high:.3f}]':>18}"
                  f"{true:>8.3f}{diff:>+8.3f}{units:>9}{'yes' if inside else 'no':>8}"
                  f"{'':>7}  {met}{tgt}")  # fmt: skip
            out[name]["same_items"] = {"expected": value, "low": low, "high": high,
                                       "inside": inside, "met": met}  # fmt: skip
    print("same: where the truth covers only part of the items, the run's expectation over "
          "those items alone (the run's function on the run's inputs)")  # fmt: skip
    return out


def gold_table(
    golds: list[tuple[str, str, Any, Any, tuple[float, int, int]]],
) -> dict[str, Any]:
    """The verdict measured on gold (``export_gold``: each gold item answered with its gold
    withheld) beside the crowd-only expectation and the true quality of the export over the
    items that were not given as gold (target: within ``TARGET_EXPORT_LABELS`` for labels, and
    the interval, widened by the truth's own sampling, holding it)."""
    print("\nthe verdict measured on gold against the export's true quality on the items not "
          "given as gold")  # fmt: skip
    print(f"{'set':<10}{'measure':>9}{'on gold':>9}{'95% interval':>18}{'gold':>6}"
          f"{'crowd':>8}{'true':>8}{'diff':>8}{'inside':>8}  target")  # fmt: skip
    out: dict[str, Any] = {}
    for name, kind, g, q, (true, m, _) in golds:
        crowd = f"{q[0]:>8.3f}" if q is not None and q[0] is not None else f"{'—':>8}"
        if g is None or g[0] is None:
            print(f"{name:<10}  no gold verdict{'' if g is None else f' (gold on {g[3]} items)'}")
            continue
        value, low, high, n = g
        measure = "mae" if kind == "rating" else "accuracy"
        diff = value - true
        b2 = 0.0 if kind == "rating" else Z**2 * true * (1 - true) / max(m, 1)
        inside = (value - math.sqrt((value - low) ** 2 + b2) <= true
                  <= value + math.sqrt((high - value) ** 2 + b2))  # fmt: skip
        met = "—" if kind == "rating" else (
            "met" if abs(diff) <= TARGET_EXPORT_LABELS and inside else "MISSED")  # fmt: skip
        print(f"{name:<10}{measure:>9}{value:>9.3f}{f'[{low:.3f}, {high:.3f}]':>18}{n:>6}"
              f"{crowd}{true:>8.3f}{diff:>+8.3f}{'yes' if inside else 'no':>8}  {met}")  # fmt: skip
        out[name] = {"measure": measure, "value": value, "low": low, "high": high, "gold": n,
                     "true": true, "inside": inside, "met": met}  # fmt: skip
    return out


def figures(
    model: dict[str, Any],
    true: dict[str, float],
    n: dict[str, int],
    min_n: int,
    shift: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Bias, MAE, coverage over the workers with ``min_n``+ scored answers; with ``shift``
    (:func:`scored_shift`) each worker's accuracy and interval moved by theirs."""
    rows = []
    for w, t in true.items():
        if n[w] < min_n or w not in model or model[w][0] is None:
            continue
        a, lo, hi = model[w]
        lo = a if lo is None else lo
        hi = a if hi is None else hi
        if shift is not None:
            d = shift.get(w, 0.0)
            a, lo, hi = (min(max(x + d, 0.0), 1.0) for x in (a, lo, hi))
        b2 = Z**2 * a * (1 - a) / n[w]
        wlo, whi = a - math.sqrt((a - lo) ** 2 + b2), a + math.sqrt((hi - a) ** 2 + b2)
        rows.append((w, n[w], t, a, lo, hi, wlo <= t <= whi))
    if not rows:
        return {"workers": 0}
    t_ = np.array([r[2] for r in rows])
    a_ = np.array([r[3] for r in rows])
    width = np.array([r[5] - r[4] for r in rows])
    return {
        "workers": len(rows),
        "mean_true": float(t_.mean()),
        "mean_model": float(a_.mean()),
        "bias": float((a_ - t_).mean()),
        "mae": float(np.abs(a_ - t_).mean()),
        "coverage": float(np.mean([r[6] for r in rows])),
        "mean_width": float(width.mean()),
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--min-n", type=int, default=MIN_N)
    ap.add_argument("--worst", type=int, default=0, help="print the K workers furthest off")
    ap.add_argument("--json", type=Path, metavar="PATH")
    ap.add_argument("--real-data", type=Path, default=shared_dir() / "real-data")
    ap.add_argument("--real-preferences", type=Path, default=shared_dir() / "real-preferences")
    ap.add_argument("--gold", type=float, default=0.0, metavar="SHARE",
                    help="give the truth of this share of the items as gold (default: none)")  # fmt: skip
    a = ap.parse_args()
    rd.scrub_environment()
    sets: list[tuple[Path, str]] = [(p, "data") for p in rd.find_datasets(a.real_data)]
    sets += [(p, "pref") for p in rd.find_datasets(a.real_preferences)]
    if a.only:
        sets = [s for s in sets if s[0].name in a.only]
    results: dict[str, Any] = {}
    exports: list[tuple[str, str, Any, tuple[float, int, int]]] = []
    golds: list[tuple[str, str, Any, Any, tuple[float, int, int]]] = []
    same: dict[str, tuple[float, float, float]] = {}
    sures: dict[str, float | None] = {}
    print(f"workers with {a.min_n}+ judgments scored by the truth; 95% intervals widened in "
          "quadrature by the binomial sd of the true share"
          + (f"; the truth of {a.gold:.0%} of the items given as gold" if a.gold else ""))  # fmt: skip
    print(f"{'set':<10}{'workers':>8}{'true':>7}{'model':>7}{'bias':>8}{'MAE':>7}"
          f"{'cover':>7}{'width':>7}{'secs':>6}{'sure':>7}  targets")  # fmt: skip
    for path, where in sets:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        gold = gold_share(path, a.gold) if a.gold else None
        if meta["kind"] == "rating":
            model, _ = run(path, meta["kind"], list(meta["args"]), path / "judgments.csv", gold)
            q, rows = model[None]
            exports.append((path.name, "rating", q, true_export(path, "rating", rows)))
            if gold:
                rest = [r for r in rows if r["item"] not in gold]
                golds.append((path.name, "rating", model[GOLD_VERDICT], q,
                              true_export(path, "rating", rest)))  # fmt: skip
            print(f"{path.name:<10}  a rating set: no accuracy to calibrate (second table)")
            continue
        if where == "data":
            true, n = truth_labels(path)
            data = path / "judgments.csv"
        else:
            true, n = truth_preferences(path)
            data = path / "preferences.csv"
        model, secs = run(path, meta["kind"], list(meta["args"]), data, gold)
        q, rows = model.pop(None)
        g = model.pop(GOLD_VERDICT)
        if gold and meta["kind"] != "pairwise":
            rest = [r for r in rows if str(r["item"]) not in gold]
            golds.append((path.name, meta["kind"], g, q, true_export(path, meta["kind"], rest)))
        posterior = model.pop(POSTERIOR)
        counts = model.pop(WORKER_N)
        exports.append((path.name, meta["kind"], q, true_export(path, meta["kind"], rows)))
        if where == "data" and posterior:
            on_truth = expected_on_truth(path, model, counts, posterior, rows)
            if on_truth is not None:
                same[path.name] = on_truth
        f = figures(model, true, n, a.min_n)
        if not f["workers"]:
            print(f"{path.name:<10}  no worker with {a.min_n}+ judgments")
            continue
        n_sure, sure = sure_crowd(path, where == "pref")
        sures[path.name] = sure
        f["sure_units"], f["sure"] = n_sure, sure
        ok = abs(f["bias"]) <= TARGET_BIAS and f["coverage"] >= TARGET_COVERAGE
        shown = "     —" if sure is None else f"{sure:>7.3f}"
        print(f"{path.name:<10}{f['workers']:>8}{f['mean_true']:>7.3f}{f['mean_model']:>7.3f}"
              f"{f['bias']:>+8.3f}{f['mae']:>7.3f}{f['coverage']:>7.2f}{f['mean_width']:>7.3f}"
              f"{secs:>6.0f}{shown}  {'ok' if ok else 'MISSED'}")  # fmt: skip
        if a.worst:
            for w, nn, t, m, lo, hi, cov in sorted(f["rows"], key=lambda r: -abs(r[3] - r[2]))[
                : a.worst
            ]:
                print(f"    {w:<24} n={nn:<5} true {t:.3f}  model {m:.3f} [{lo:.3f}, {hi:.3f}]"
                      f"{'' if cov else '  (outside)'}")  # fmt: skip
        results[path.name] = {k: v for k, v in f.items() if k != "rows"}
        shift = scored_shift(path, posterior) if where == "data" and posterior else {}
        if any(abs(d) > 1e-9 for d in shift.values()):
            g = figures(model, true, n, a.min_n, shift)
            ok = abs(g["bias"]) <= TARGET_BIAS and g["coverage"] >= TARGET_COVERAGE
            print(f"{'  same':<10}{g['workers']:>8}{g['mean_true']:>7.3f}{g['mean_model']:>7.3f}"
                  f"{g['bias']:>+8.3f}{g['mae']:>7.3f}{g['coverage']:>7.2f}"
                  f"{g['mean_width']:>7.3f}{'':>13}  {'ok' if ok else 'MISSED'}")  # fmt: skip
            results[path.name]["same_answers"] = {k: v for k, v in g.items() if k != "rows"}
    print(f"targets: |bias| <= {TARGET_BIAS}, coverage >= {TARGET_COVERAGE}; sure: the share of "
          f"the units with {SURE_N}+ answers, {SURE_SHARE:.0%} alike, whose truth is the crowd's "
          "answer (below 1: the truth is a proxy the answers cannot reach); same: where the "
          "truth covers only part of the items, the model's expectation over the very answers "
          "the truth scores (model_accuracy moved by the mean posterior of those answers less "
          "that of all the worker's answers)")  # fmt: skip
    results["export"] = export_table(exports, sures, same)
    if a.gold:
        results["gold"] = gold_table(golds)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
