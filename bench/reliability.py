"""Benchmark: monitor's Dawid-Skene and rating model, against crowd-kit's ``DawidSkene``.

Synthetic label campaigns of 1e4 .. 1e6 judgments: 2000 workers (accuracy uniform in 0.3..0.95,
errors uniform over the other classes), 5 classes, 5 judgments per item, seeded. For each size:

- crowd-kit 1.4 ``DawidSkene()`` with its defaults (100 iterations, tol 1e-5): run once;
- monitor with crowd-kit's steps (``smoothing=0, min_judgments=0``) and the same number of
  iterations as crowd-kit (``tol=0``, ``max_iter`` = crowd-kit's): same start, same steps, so the
  labels must be the same and the time is a like-for-like comparison;
- monitor with its defaults (smoothing, one-coin fallback, run to convergence).

Seconds (pandas and crowd-kit imported before timing), peak resident memory above the start,
iterations, label agreement with crowd-kit and label accuracy against the planted truth. Then the
rating model at 1e6 judgments. ``--real`` adds the real data sets of /work/shared/real-data
(label accuracy, AUC of the worker score for the bottom 20% of workers by true accuracy, MAE).

    python bench/reliability.py                 # 1e4, 1e5, 1e6
    python bench/reliability.py --max 100000    # 1e4, 1e5
    python bench/reliability.py --only 1000000  # one size
    python bench/reliability.py --real          # also the real data sets
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from monitor.metrics.labels.label_model import dawid_skene
from monitor.metrics.ratings.model import rating_model

N_WORKERS = 2000
N_CLASSES = 5
PER_ITEM = 5
REAL = Path("/work/shared/real-data")


def label_campaign(n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    n_items = n // PER_ITEM
    truth = rng.integers(0, N_CLASSES, n_items)
    acc = rng.uniform(0.3, 0.95, N_WORKERS)
    items = np.repeat(np.arange(n_items), PER_ITEM)
    workers = rng.integers(0, N_WORKERS, items.size)
    right = rng.random(items.size) < acc[workers]
    wrong = (truth[items] + rng.integers(1, N_CLASSES, items.size)) % N_CLASSES
    return items, workers, np.where(right, truth[items], wrong), truth


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float, float, float]:
    """(result of ``fn(*args, **kwargs)``, seconds, CPU seconds, peak MiB above the resident size
    at start; CPU seconds are steadier than wall time on a shared machine).

    The resident size is sampled every 10 ms by a thread (tracemalloc would slow pandas-heavy
    code several times over and so distort the comparison)."""
    gc.collect()
    base = _rss()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _rss())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    done.set()
    thread.join()
    peak[0] = max(peak[0], _rss())
    return out, seconds, cpu, (peak[0] - base) / 2**20


def crowdkit_ds(items: np.ndarray, workers: np.ndarray, labels: np.ndarray, n_items: int):
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    df = pd.DataFrame({"task": items, "worker": workers, "label": labels})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = DawidSkene().fit(df)
    out = np.full(n_items, -1)
    out[ds.labels_.index.to_numpy()] = ds.labels_.to_numpy()
    return out, len(ds.loss_history_), ds


def bench_labels(sizes: list[int]) -> None:
    import crowdkit.aggregation  # noqa: F401  (imported before timing: pandas and crowd-kit load slowly)

    print("Dawid-Skene, 2000 workers, 5 classes, 5 judgments per item")
    head = f"{'judgments':>10} {'method':<26} {'seconds':>8} {'cpu s':>7} {'peak MiB':>9} "
    print(head + f"{'iter':>5} {'same labels as ck':>17} {'accuracy':>9}")
    for n in sizes:
        items, workers, labels, truth = label_campaign(n)
        n_items = truth.size
        kw = dict(n_items=n_items, n_workers=N_WORKERS, n_classes=N_CLASSES)
        (ck_labels, ck_iter, _), *ck = measure(crowdkit_ds, items, workers, labels, n_items)
        rows = [("crowd-kit DawidSkene", *ck, ck_iter, ck_labels)]
        steps = dict(smoothing=0.0, min_judgments=0, max_iter=ck_iter, tol=0.0)
        same, *cost = measure(dawid_skene, items, workers, labels, **kw, **steps)
        rows.append(("monitor, crowd-kit steps", *cost, same.iterations, same.labels))
        own, *cost = measure(dawid_skene, items, workers, labels, **kw)
        rows.append(("monitor, defaults", *cost, own.iterations, own.labels))
        for name, s, cpu, mem, it, lab in rows:
            agree = np.mean(lab == ck_labels)
            print(f"{n:>10} {name:<26} {s:>8.2f} {cpu:>7.2f} {mem:>9.1f} {it:>5} {agree:>17.4f} "
                  f"{np.mean(lab == truth):>9.4f}")  # fmt: skip
        print(f"{'':>10} speed-up (wall / cpu), same steps: {ck[0] / rows[1][1]:.1f}x / "
              f"{ck[1] / rows[1][2]:.1f}x; defaults: {ck[0] / rows[2][1]:.1f}x / "
              f"{ck[1] / rows[2][2]:.1f}x (converged: {own.converged})")  # fmt: skip


def bench_ratings(n: int) -> None:
    rng = np.random.default_rng(1)
    n_items = n // PER_ITEM
    mu = rng.uniform(0, 100, n_items)
    bias, noise = rng.normal(0, 8, N_WORKERS), rng.uniform(3, 30, N_WORKERS)
    items = np.repeat(np.arange(n_items), PER_ITEM)
    workers = rng.integers(0, N_WORKERS, items.size)
    x = mu[items] + bias[workers] + rng.normal(0, 1, items.size) * noise[workers]
    m, s, _, mem = measure(
        rating_model, items, workers, x, n_items=n_items, n_workers=N_WORKERS, scale=(0.0, 100.0)
    )
    plain = np.bincount(items, weights=x) / np.bincount(items)
    print(f"\nRating model, {n} judgments, 2000 workers: {s:.2f} s, peak {mem:.1f} MiB, "
          f"{m.iterations} iterations (converged: {m.converged}); MAE of the means "
          f"{np.abs(m.mean - mu).mean():.2f} vs plain mean {np.abs(plain - mu).mean():.2f}; "
          f"max error of noise sd {np.nanmax(np.abs(m.noise_sd - noise)):.2f}")  # fmt: skip


def _load(name: str) -> tuple[np.ndarray, ...]:
    with open(REAL / name / "judgments.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open(REAL / name / "truth.csv", encoding="utf-8") as f:
        truth = {r["item"]: r["truth"] for r in csv.DictReader(f)}
    items = {v: i for i, v in enumerate(sorted({r["item"] for r in rows}))}
    workers = {v: i for i, v in enumerate(sorted({r["worker"] for r in rows}))}
    i = np.array([items[r["item"]] for r in rows])
    w = np.array([workers[r["worker"]] for r in rows])
    v = [r["value"] for r in rows]
    t = [truth.get(k) for k in sorted(items)]
    return i, w, np.array(v), np.array(t, dtype=object), len(items), len(workers)


def _auc(score: np.ndarray, bad: np.ndarray) -> float:
    """P(a bad worker scores below a good one), ties count half."""
    b, g = score[bad][:, None], score[~bad][None, :]
    return float(np.mean((b < g) + 0.5 * (b == g)))


def bench_real() -> None:
    print("\nReal data (bad workers: bottom 20% by accuracy / MAE against the expert truth)")
    for name in ("rte", "duck"):
        if not (REAL / name).exists():
            continue
        i, w, v, t, n_i, n_w = _load(name)
        codes, lab = np.unique(v, return_inverse=True)
        truth = np.array([np.searchsorted(codes, x) if x is not None else -1 for x in t])
        k = codes.size
        right = lab == truth[i]
        true_acc = np.bincount(w, right, n_w) / np.bincount(w, minlength=n_w)
        bad = true_acc <= np.quantile(true_acc, 0.2)
        votes = np.zeros((n_i, k))
        np.add.at(votes, (i, lab), 1)
        ck_labels, _, ck = crowdkit_ds(i, w, lab, n_i)
        err, pri = ck.errors_, ck.priors_
        ck_acc = np.array(
            [
                sum(pri[c] * err.loc[(j, c), c] if (j, c) in err.index else 0.0 for c in range(k))
                for j in range(n_w)
            ]
        )
        m = dawid_skene(i, w, lab, n_items=n_i, n_workers=n_w, n_classes=k)
        flagged = m.high < m.floor
        print(f"{name}: labels MV {np.mean(votes.argmax(1) == truth):.3f}, crowd-kit DS "
              f"{np.mean(ck_labels == truth):.3f}, monitor DS {np.mean(m.labels == truth):.3f}; "
              f"AUC crowd-kit {_auc(ck_acc, bad):.3f}, monitor {_auc(m.accuracy, bad):.3f}; "
              f"flagged {flagged.sum()} of {n_w} ({np.sum(flagged & bad)} in the bottom 20%)")  # fmt: skip
    if (REAL / "affect").exists():
        i, w, v, t, n_i, n_w = _load("affect")
        x, truth = v.astype(float), np.array(t, dtype=float)
        plain = np.bincount(i, weights=x) / np.bincount(i)
        true_mae = np.bincount(w, np.abs(x - truth[i])) / np.bincount(w)
        bad = true_mae >= np.quantile(true_mae, 0.8)
        m = rating_model(i, w, x, n_items=n_i, n_workers=n_w, scale=(0.0, 100.0))
        nb = rating_model(i, w, x, n_items=n_i, n_workers=n_w, scale=(0.0, 100.0), bias=False)
        flagged = m.low > m.worker_floor_sd
        print(f"affect: MAE plain mean {np.abs(plain - truth).mean():.2f}, rating model "
              f"{np.abs(m.mean - truth).mean():.2f} (bias=False: "
              f"{np.abs(nb.mean - truth).mean():.2f}); AUC of noise sd {_auc(-m.noise_sd, bad):.3f}"
              f" (bias=False {_auc(-nb.noise_sd, bad):.3f}); flagged {flagged.sum()} of {n_w}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=1_000_000, help="largest number of judgments")
    ap.add_argument("--only", type=int, action="append", help="just this size (repeatable)")
    ap.add_argument("--real", action="store_true", help="also the real data sets")
    args = ap.parse_args()
    sizes = args.only or [n for n in (10_000, 100_000, 1_000_000) if n <= args.max]
    bench_labels(sizes)
    bench_ratings(sizes[-1])
    if args.real:
        bench_real()


if __name__ == "__main__":
    main()
