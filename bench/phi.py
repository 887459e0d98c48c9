"""Phi timings: MAP, the exact quadrature posterior and PyMC NUTS on the paper's setting (5.3).

Run: /work/venv/bin/python bench/phi.py [--no-nuts]
Synthetic ratings: item means ~ Beta(2, 2), ratings Beta(mu p, (1 - mu) p) with p = 5, binned
to a 1-5 scale; 7,000 x 5 (the paper's setting) and 100,000 x 5. NUTS (2 chains x 1000 draws,
1000 tuning steps) only at 7,000 x 5; its first run includes PyTensor compilation.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from monitor.metrics.ratings.phi_measure import phi


def ratings(n_items: int, n_workers: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mu = rng.beta(2.0, 2.0, n_items)
    p = 5.0
    y = rng.beta(mu[:, None] * p, (1.0 - mu[:, None]) * p, (n_items, n_workers))
    x = np.clip(np.floor(y * 5.0), 0, 4) + 1.0
    return np.repeat(np.arange(n_items), n_workers), x.ravel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-nuts", action="store_true", help="skip PyMC NUTS")
    args = parser.parse_args()
    phi(*ratings(50, 5), scale_min=1, scale_max=5)  # warm-up (imports, first calls)
    rows = []
    for n_items in (7_000, 100_000):
        items, values = ratings(n_items, 5)
        engines = ["map", "exact"] + (["nuts"] if n_items == 7_000 and not args.no_nuts else [])
        for engine in engines:
            kw = dict(seed=1, draws=1000, tune=1000, chains=2) if engine == "nuts" else {}
            t = time.perf_counter()
            r = phi(items, values, scale_min=1, scale_max=5, engine=engine, **kw)
            seconds = time.perf_counter() - t
            rows.append((f"{n_items:,} x 5", engine, seconds, r))
    print(f"{'data':>13} {'engine':>6} {'seconds':>8} {'MAP':>7} {'mean':>7} {'95% HPD':>17} "
          f"{'R-hat':>6} {'ESS':>6}")  # fmt: skip
    for data, engine, seconds, r in rows:
        hpd = f"[{r.hpd.low:.4f}, {r.hpd.high:.4f}]" if r.hpd else "-"
        mean = f"{r.mean:.4f}" if r.mean is not None else "-"
        rhat = f"{r.rhat:.3f}" if r.rhat is not None else "-"
        ess = f"{r.ess:.0f}" if r.ess is not None else "-"
        print(f"{data:>13} {engine:>6} {seconds:8.3f} {r.map:7.4f} {mean:>7} {hpd:>17} "
              f"{rhat:>6} {ess:>6}")  # fmt: skip
    print("exact includes the MAP (a field of its result); 'mean' is the posterior mean of Phi.")


if __name__ == "__main__":
    main()
