"""Benchmark: co-determination rounds and seconds, cold (every run) against the plain rounds.

    python bench/codetermination.py            # 1e5, 1e6 judgments
    python bench/codetermination.py --quick    # 1e4, 1e5

Campaign: 5 judgments per item from 200 workers (70% careful: right 80% of the time; the rest
at random), ratings 1..5 and labels of 5 categories. "plain" is the iteration without SQUAREM
(max_iter=1 repeated, as before), capped at 100 rounds like the old default.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.metrics.agreement.aggregate import codetermination  # noqa: E402


def campaign(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_items, per, n_w = n // 5, 5, 200
    items = np.repeat(np.arange(n_items), per)
    workers = rng.integers(0, n_w, items.size)
    truth = rng.integers(0, 5, n_items)
    careful = rng.random(n_w) < 0.7
    right = careful[workers] & (rng.random(items.size) < 0.8)
    return items, workers, np.where(right, truth[items], rng.integers(0, 5, items.size))


def plain(items, workers, codes, kw: dict, cap: int = 100) -> tuple[int, bool, np.ndarray]:  # noqa: ANN001
    q = None
    for it in range(1, cap + 1):
        r = codetermination(items, workers, codes, initial_weights=q, max_iter=1, **kw)
        q = r.weights
        if r.max_change < 1e-6:
            return it, True, q
    return cap, False, q


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    sizes = (10_000, 100_000) if parser.parse_args().quick else (100_000, 1_000_000)
    print(
        f"{'n':>9} {'kind':>6} {'rounds':>6} {'conv':>5} {'s':>7} | {'plain':>6} {'conv':>5} {'s':>7}"
    )
    for n in sizes:
        items, workers, codes = campaign(n)
        for kind in ("rating", "label"):
            kw = {"kind": kind}
            kw |= {"value_domain": np.arange(1.0, 6.0)} if kind == "rating" else {"n_values": 5}
            t = time.perf_counter()
            r = codetermination(items, workers, codes, **kw)
            s = time.perf_counter() - t
            t = time.perf_counter()
            p_it, p_conv, _ = plain(items, workers, codes, kw)
            ps = time.perf_counter() - t
            print(
                f"{n:>9} {kind:>6} {r.iterations:>6} {r.converged!s:>5} {s:>7.2f} | "
                f"{p_it:>6} {p_conv!s:>5} {ps:>7.2f}"
            )


if __name__ == "__main__":
    main()
