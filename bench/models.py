"""``bench/flags.py --models``: monitor's aggregates against the plain ones on real data sets.

Ratings: mean absolute error against the expert truth of the plain mean, the median and
``monitor export labels``; labels (nominal or ordinal): accuracy of the majority vote (ties
count as wrong), Dawid-Skene (full confusion matrices from the majority-vote start, no
smoothing, run to convergence: crowd-kit's ``DawidSkene`` without its early stop) and the export;
beside them, where crowd-kit is installed, crowd-kit's ``DawidSkene`` as it runs by default (it
stops as soon as its own objective falls, often a few steps from the majority-vote start).
Each rating set is also split by its ``prefix:`` item groups where it has them (affect: one
emotion each, 100 items of 10 judgments: small campaigns of the shape of valence), to show the
model on small campaigns; ``fallback`` says where the held-out check gave the plain mean.

Beside the MAE, each rating aggregate's ``level`` (its mean signed error: how far the crowd's
level, as that aggregate weighs it, sits from the experts') and its ``centred`` MAE (the MAE once
that level is taken out: what the aggregate gets right about the items relative to each other).
``[ok: -0.48 se 0.13]``: the export's MAE minus the plain mean's, with its standard error paired
over the items (how far the verdict stands from the luck of 100 headlines).
No crowd-only aggregate can know the experts' level; the model moves it by whom it weighs.

A simulated ordinal label set (``ordinal-sim``, :func:`ordinal_sim`) is added beside the real
ones, shaped like a large real ordinal campaign (adult-content ratings G < P < R < X: 825
workers of very unequal activity, 11,040 items, about 8 judgments each): each worker answers
the true class plus a shift and Gaussian noise of their own, rounded and clipped to the scale;
15% answer at random. ``--only`` names it like the others.
"""

from __future__ import annotations

import csv
import math
import shutil
import tempfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import realdata as rd

from monitor.metrics.labels.label_model import dawid_skene


def _majority(ds: rd.DataSet) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for i, vs in rd.by_item(ds).items():
        top = Counter(vs).most_common()
        out[i] = None if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]
    return out


def _dawid_skene(ds: rd.DataSet) -> dict[str, str]:
    items = sorted({i for _, i, _ in ds.judgments})
    workers = sorted({w for w, _, _ in ds.judgments})
    classes = sorted({v for _, _, v in ds.judgments})
    ii, ww, cc = ({k: n for n, k in enumerate(x)} for x in (items, workers, classes))
    it = np.array([ii[i] for _, i, _ in ds.judgments])
    wk = np.array([ww[w] for w, _, _ in ds.judgments])
    lb = np.array([cc[v] for _, _, v in ds.judgments])
    m = dawid_skene(it, wk, lb, n_items=len(items), n_workers=len(workers),
                    n_classes=len(classes), smoothing=0.0, min_judgments=0,
                    min_item_judgments=1, max_iter=1000, tol=1e-9)  # fmt: skip
    return {i: classes[int(m.labels[n])] for n, i in enumerate(items)}


def _crowdkit_dawid_skene(ds: rd.DataSet) -> dict[str, str] | None:
    """crowd-kit's ``DawidSkene`` as it runs by default (it stops as soon as its objective
    falls); None where crowd-kit is not installed."""
    try:
        import pandas as pd
        from crowdkit.aggregation import DawidSkene
    except ImportError:
        return None
    df = pd.DataFrame(ds.judgments, columns=["worker", "task", "label"])
    return {str(k): str(v) for k, v in DawidSkene(n_iter=100).fit_predict(df).items()}


def _subsets(ds: rd.DataSet, tmp: Path) -> list[rd.DataSet]:
    """The rating set split by item prefix (``emotion:headline``), each a data set folder."""
    groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for w, i, v in ds.judgments:
        if ":" in i:
            groups[i.split(":", 1)[0]].append((w, i, v))
    if len(groups) < 2:
        return []
    out = []
    for g, rows in sorted(groups.items()):
        path = tmp / f"{ds.name}-{g}"
        path.mkdir()
        with (path / "judgments.csv").open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("worker", "item", "value"), *rows])
        items = sorted({i for _, i, _ in rows})
        out.append(replace(ds, name=f"{ds.name}/{g}", path=path, judgments=rows,
                           truth={i: ds.truth[i] for i in items if i in ds.truth},
                           items=items))  # fmt: skip
    return out


def ordinal_sim(tmp: Path, seed: int = 7) -> rd.DataSet:
    """The simulated ordinal set of the module docstring, written as a data set folder."""
    rng = np.random.default_rng(seed)
    n_items, n_workers, n_draws, cats = 11040, 825, 89799, ("G", "P", "R", "X")
    truth = rng.choice(len(cats), n_items, p=[0.55, 0.2, 0.15, 0.1])
    activity = rng.pareto(1.0, n_workers) + 1.0
    items = rng.integers(0, n_items, n_draws)
    workers = rng.choice(n_workers, n_draws, p=activity / activity.sum())
    sd, shift = rng.uniform(0.5, 2.5, n_workers), rng.normal(0.0, 0.7, n_workers)
    latent = truth[items] + shift[workers] + rng.normal(0.0, 1.0, n_draws) * sd[workers]
    answer = np.clip(np.rint(latent), 0, len(cats) - 1).astype(int)
    spam = rng.random(n_workers) < 0.15
    answer = np.where(spam[workers], rng.integers(0, len(cats), n_draws), answer)
    _, first = np.unique(items * n_workers + workers, return_index=True)  # one per worker, item
    rows = [(f"w{workers[k]}", f"i{items[k]}", cats[answer[k]]) for k in np.sort(first)]
    judged = sorted({i for _, i, _ in rows})
    path = tmp / "ordinal-sim"
    path.mkdir()
    with (path / "judgments.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("worker", "item", "value"), *rows])
    args = ["--kind", "label", "--level", "ordinal", "--categories", ",".join(cats)]
    return rd.DataSet("ordinal-sim", path, "label", args, rows,
                      {i: cats[truth[int(i[1:])]] for i in judged}, judged)  # fmt: skip


def _level(e: np.ndarray) -> tuple[float, float]:
    """(mean signed error, MAE after removing it) of a rating aggregate's signed errors ``e``
    (module docstring)."""
    return float(e.mean()), float(np.mean(np.abs(e - e.mean())))


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """MAE minus MAE of two aggregates' signed errors on the same items, and its standard error
    (paired over the items: the sd of the per-item differences of absolute error over sqrt(n))."""
    d = np.abs(a) - np.abs(b)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else math.nan


def _figures(ds: rd.DataSet, settings: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        run = rd.run_monitor(replace(ds, name=ds.name.replace("/", "-")), Path(tmp), settings)
    items = set(ds.truth)
    export = run.item_answers["export"]
    out: dict[str, Any] = {"items": len(items), "judgments": len(ds.judgments)}
    if ds.kind == "rating":
        base = rd.rating_baselines(ds)["answers"]
        answers = {i: rd._num(a) for i, a in export.items()}
        errors = {name: rd.rating_errors(ds, a, items) for name, a in
                  (("mean", base["mean"]), ("median", base["median"]), ("export", answers))}  # fmt: skip
        for name, e in errors.items():
            out[name] = float(np.mean(np.abs(e)))
        out["fallback"] = any("model_fallback" in n for n in run.notes)
        for name in ("mean", "export"):
            out[f"{name}_level"], out[f"{name}_centred"] = _level(errors[name])
        out["diff"], out["diff_se"] = _paired(errors["export"], errors["mean"])
    else:
        out["majority"] = rd.answer_error(ds, _majority(ds), items)
        out["dawid_skene"] = rd.answer_error(ds, _dawid_skene(ds), items)
        ck = _crowdkit_dawid_skene(ds)
        out["crowdkit_dawid_skene"] = None if ck is None else rd.answer_error(ds, ck, items)
        out["export"] = rd.answer_error(ds, export, items)
    return out


def models(root: Path, settings: dict[str, str], only: list[str]) -> list[dict[str, Any]]:
    """The figures of every real data set under ``root`` (and of its item groups), printed."""
    rd.scrub_environment()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        sets: list[rd.DataSet] = []
        for path in rd.find_datasets(root):
            if only and path.name not in only:
                continue
            ds = rd.load_dataset(path)
            sets.append(ds)
            if ds.kind == "rating":
                sets += _subsets(ds, Path(tmp))
        if not only or "ordinal-sim" in only:
            sets.append(ordinal_sim(Path(tmp)))
        print("\n== models: monitor's export against the plain aggregates (no gold)")
        print(f"{'data set':18} {'kind':7} {'items':>6}  figures")
        for ds in sets:
            r = {"data_set": ds.name, "kind": ds.kind, **_figures(ds, settings)}
            results.append(r)
            if ds.kind == "rating":
                verdict = "ok" if r["export"] <= r["mean"] + 1e-9 else "WORSE"
                text = (f"MAE mean {r['mean']:.2f}  median {r['median']:.2f}  export "
                        f"{r['export']:.2f}{' (fallback: plain mean)' if r['fallback'] else ''}"
                        f"  [{verdict}: {r['diff']:+.2f} se {r['diff_se']:.2f}]  level mean "
                        f"{r['mean_level']:+.2f} export "
                        f"{r['export_level']:+.2f}  centred mean {r['mean_centred']:.2f} export "
                        f"{r['export_centred']:.2f}")  # fmt: skip
            else:
                verdict = "ok" if r["export"] >= r["dawid_skene"] - 1e-9 else "WORSE"
                ck = r["crowdkit_dawid_skene"]
                text = (f"accuracy majority {r['majority']:.3f}  Dawid-Skene "
                        f"{r['dawid_skene']:.3f}  export {r['export']:.3f}  [{verdict}]"
                        f"{'' if ck is None else f'  crowd-kit DawidSkene {ck:.3f}'}")  # fmt: skip
            print(f"{ds.name:18} {ds.kind:7} {r['items']:>6}  {text}")
    shutil.rmtree(tmp, ignore_errors=True)
    return results


__all__ = ["models"]
