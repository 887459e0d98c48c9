"""Benchmark: a label campaign whose categories come from free-text-like answers.

10,000 items judged twice by 50 workers (20,000 judgments), each answer right with probability
0.7, else one of K categories at random (seeded). Prints, for each K:

- the one-coin Dawid-Skene model alone (``monitor.metrics.labels.one_coin``): seconds, peak resident
  memory above the start, iterations;
- the whole run, ``monitor analyze`` in a child process (ingest, every measure, flags): seconds
  and the child's peak resident memory, with the bootstrap intervals (default 1000 resamples)
  and without (``--bootstrap 0``).

Above ``model_max_categories`` (200) the run's label model is the one-coin model; the full
model's K x K confusion matrix per worker and (N, K) posterior took 11.2 GiB at K = 10,000.
Above 256 values the bootstrap's per-item features are sparse (dense: 93 s and 3.8 GiB for the
whole run at K = 10,000 with 1000 resamples).

Measured (2 shared cores): K = 10,000 (7,854 used): the model 0.12 s, +4 MiB, 65 iterations;
the whole run 26 s and 830 MiB without intervals, 30 s and 950 MiB with them.

    python bench/categories.py                  # K = 1,000 and 10,000
    python bench/categories.py --k 10000 --no-run
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reliability import measure  # noqa: E402
from monitor.metrics.labels.one_coin import one_coin_dawid_skene  # noqa: E402

N_WORKERS = 50


def campaign(k: int, n_judgments: int = 20_000, seed: int = 0) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n_judgments // 2):
        truth = rng.randrange(k)
        for w in rng.sample(range(N_WORKERS), 2):
            value = truth if rng.random() < 0.7 else rng.randrange(k)
            rows.append((f"w{w}", f"i{i}", f"c{value}"))
    return rows


def model_alone(rows: list[tuple[str, str, str]]) -> str:
    def codes(col: int) -> tuple[np.ndarray, int]:
        names = {v: n for n, v in enumerate(dict.fromkeys(r[col] for r in rows))}
        return np.array([names[r[col]] for r in rows]), len(names)

    (workers, w), (items, n), (labels, k) = codes(0), codes(1), codes(2)
    res, seconds, _, peak = measure(
        one_coin_dawid_skene, items, workers, labels, n_items=n, n_workers=w, n_classes=k,
        max_iter=500,
    )  # fmt: skip
    return f"one-coin model: {seconds:.2f} s, peak +{peak:.0f} MiB, {res.iterations} iterations"


def whole_run(path: Path, *extra: str) -> str:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "analyze", str(path), "--kind", "label", *extra],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    status = "ok" if done.returncode == 0 and "No metric run" not in done.stdout else "FAILED"
    mib = max(peak, before) / 1024
    return f"whole run {' '.join(extra) or '(bootstrap 1000)'}: {status}, {seconds:.1f} s, " + (
        f"peak {mib:.0f} MiB" if peak > before else "peak not above an earlier child's"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, action="append", help="categories (repeatable)")
    ap.add_argument("--no-run", action="store_true", help="the model alone")
    args = ap.parse_args()
    for k in args.k or [1_000, 10_000]:
        rows = campaign(k)
        used = len({r[2] for r in rows})
        print(f"K = {k:,} ({used:,} categories used), {len(rows):,} judgments")
        print("  " + model_alone(rows))
        if args.no_run:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"k{k}.csv"
            path.write_text("worker,item,value\n" + "".join(f"{w},{i},{v}\n" for w, i, v in rows))
            print("  " + whole_run(path, "--bootstrap", "0"))
            print("  " + whole_run(path))


if __name__ == "__main__":
    main()
