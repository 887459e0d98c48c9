"""Benchmark: monitor's Krippendorff alpha against the ``krippendorff`` package.

    /work/venv/bin/python bench/agreement.py            # 1e4, 1e5, 1e6 judgments
    /work/venv/bin/python bench/agreement.py --quick    # 1e3, 1e4

Campaign: ratings 1..5, 5 judgments per item from a pool of 20 workers. The package gets its
reliability-data matrix (workers x items, NaN = missing); monitor gets the integer-coded
judgment arrays and builds its value counts inside the timed region. Times are the best of a few
runs; peak memory is measured separately with tracemalloc (NumPy reports its buffers to it).
The last rows time interval alpha on continuous values (every value distinct), where the package
would need a V x V coincidence matrix per item.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.metrics.agreement.krippendorff import ValueCounts, krippendorff_alpha  # noqa: E402

try:
    import krippendorff
except ImportError:  # pragma: no cover
    krippendorff = None

PER_ITEM = 5
WORKERS = 20


def campaign(n_judgments: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_items = n_judgments // PER_ITEM
    items = np.repeat(np.arange(n_items), PER_ITEM)
    # PER_ITEM distinct workers per item
    workers = np.argsort(rng.random((n_items, WORKERS)), axis=1)[:, :PER_ITEM].reshape(-1)
    truth = rng.integers(0, 5, n_items)
    noise = rng.integers(-1, 2, items.size) * (rng.random(items.size) < 0.4)
    codes = np.clip(truth[items] + noise, 0, 4)
    return items, workers, codes, n_items


def best_time(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_mb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000]
    domain = np.arange(1.0, 6.0)
    header = (
        f"{'judgments':>10} {'level':>9} {'package s':>10} {'monitor s':>10} {'speed-up':>9} "
        f"{'package MB':>11} {'monitor MB':>11} {'|diff|':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        items, workers, codes, n_items = campaign(n)
        rel = np.full((WORKERS, n_items), np.nan)
        rel[workers, items] = domain[codes]
        repeats = 3 if n <= 100_000 else 2
        for level in ("nominal", "interval"):

            def ours(level: str = level, items=items, codes=codes) -> float | None:
                vc = ValueCounts.from_judgments(items, codes, value_domain=domain)
                return krippendorff_alpha(vc, level).alpha

            def theirs(level: str = level, rel=rel) -> float:
                return float(krippendorff.alpha(reliability_data=rel, level_of_measurement=level))

            t_ours, a_ours = best_time(ours, repeats)
            m_ours = peak_mb(ours)
            if krippendorff is not None:
                t_pkg, a_pkg = best_time(theirs, repeats)
                m_pkg = peak_mb(theirs)
                diff = abs(a_ours - a_pkg)
                pkg_t, pkg_m, ratio = f"{t_pkg:10.4f}", f"{m_pkg:11.1f}", f"{t_pkg / t_ours:8.1f}x"
                diff_s = f"{diff:9.1e}"
            else:
                pkg_t, pkg_m, ratio, diff_s = f"{'-':>10}", f"{'-':>11}", f"{'-':>9}", f"{'-':>9}"
            print(
                f"{n:>10} {level:>9} {pkg_t} {t_ours:10.4f} {ratio} {pkg_m} {m_ours:11.1f} {diff_s}"
            )

    print()
    print("interval alpha on continuous values (every value distinct)")
    header = f"{'judgments':>10} {'distinct':>9} {'monitor s':>10} {'monitor MB':>11} {'alpha':>8}  package"
    print(header)
    print("-" * len(header))
    for n in [sizes[-1]] if args.quick else [100_000, 1_000_000]:
        rng = np.random.default_rng(1)
        n_items = n // PER_ITEM
        items = np.repeat(np.arange(n_items), PER_ITEM)
        values = rng.normal(size=n_items)[items] + rng.normal(scale=0.5, size=n) + 100.0

        def ours_cont(items=items, values=values) -> float | None:
            vc = ValueCounts.from_values(items, values)
            return krippendorff_alpha(vc, "interval").alpha

        t, a = best_time(ours_cont, 3)
        m = peak_mb(ours_cont)
        distinct = np.unique(values).size
        need = n_items * distinct * distinct * 8 / 2**40
        print(
            f"{n:>10} {distinct:>9} {t:10.4f} {m:11.1f} {a:8.4f}  "
            f"cannot: (items, V, V) arrays of {need:,.0f} TiB"
        )


if __name__ == "__main__":
    main()
