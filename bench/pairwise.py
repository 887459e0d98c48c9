"""Benchmark of the pairwise measures: transitivity kappa, incremental triangles, Davidson fit.

Synthetic campaigns of 1e4, 1e5 and 1e6 preference judgments: every annotator judges all pairs of
dense blocks of items (so fully judged triplets abound), from latent scores with noise, ties
below a width, 5% spammers and 3% repeated pairs. For each size: time for every annotator's
kappa from scratch (triangle_state + summarize), time for an incremental update with 1% new
judgments (half new pairs inside the annotators' items, half re-judged pairs) against a full
recount, and, on the largest, the Davidson Bradley-Terry fit with its Kendall tau to the truth.

    /work/venv/bin/python bench/pairwise.py           # 1e4, 1e5, 1e6
    /work/venv/bin/python bench/pairwise.py --quick   # 1e4, 1e5
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from davidson import davidson
from scipy.stats import kendalltau

from monitor.metrics.preferences.intraobserver import summarize, triangle_state

BLOCK = 8  # items per block: 28 pairs, 56 triplets
BLOCKS_PER_ANNOTATOR = 20
# Items at the extremes never lose (or never win) in a sparse design, so the plain maximum
# likelihood estimate does not exist; a weak ridge (prior sd 10 on log-strengths) keeps it finite.
REG = 0.01


def campaign(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """About n judgments; dict of workers, left, right, outcome, order, latent."""
    pairs_per_block = BLOCK * (BLOCK - 1) // 2
    n_blocks = max(1, int(n / (pairs_per_block * 1.03)))
    n_items = max(200, n // 20)
    latent = rng.normal(size=n_items)
    blocks = np.stack([rng.choice(n_items, BLOCK, replace=False) for _ in range(n_blocks)])
    iu, ju = np.triu_indices(BLOCK, 1)
    left = blocks[:, iu].reshape(-1)
    right = blocks[:, ju].reshape(-1)
    workers = np.repeat(np.arange(n_blocks) // BLOCKS_PER_ANNOTATOR, pairs_per_block)
    rep = rng.random(len(left)) < 0.03
    left, right, workers = (
        np.r_[left, right[rep]],
        np.r_[right, left[rep]],
        np.r_[workers, workers[rep]],
    )
    n_workers = int(workers.max()) + 1
    spammer = rng.random(n_workers) < 0.05
    outcome = judge(latent, workers, left, right, spammer, rng)
    swap = rng.random(len(left)) < 0.5
    left, right = np.where(swap, right, left), np.where(swap, left, right)
    outcome = np.where(swap, -outcome, outcome).astype(np.int8)
    order = rng.permutation(len(left)).astype(np.float64)
    return dict(
        workers=workers, left=left, right=right, outcome=outcome, order=order, latent=latent,
        spammer=spammer,
    )  # fmt: skip


def judge(latent, workers, left, right, spammer, rng) -> np.ndarray:
    diff = latent[left] - latent[right] + rng.normal(scale=0.3, size=len(left))
    out = np.sign(diff) * (np.abs(diff) > 0.15)
    noise = rng.integers(-1, 2, size=len(left))
    return np.where(spammer[workers], noise, out).astype(np.int8)


def new_batch(c: dict[str, np.ndarray], frac: float, rng: np.random.Generator) -> dict:
    """frac * n new judgments: half re-judge existing pairs, half pair items across an
    annotator's blocks (new edges closing triangles)."""
    n = len(c["workers"])
    k = max(2, int(frac * n))
    pick = rng.integers(0, n, k)
    w, a, b = c["workers"][pick], c["left"][pick].copy(), c["right"][pick].copy()
    # second half: replace b by an item of another judgment of the same worker
    half = np.arange(k) >= k // 2
    order_by_w = np.argsort(c["workers"], kind="stable")
    sw = c["workers"][order_by_w]
    start = np.searchsorted(sw, w)
    size = np.searchsorted(sw, w, side="right") - start
    other = order_by_w[start + (rng.random(k) * size).astype(np.int64)]
    b = np.where(half, c["right"][other], b)
    ok = a != b
    w, a, b = w[ok], a[ok], b[ok]
    spam = c["spammer"]
    outcome = judge(c["latent"], w, a, b, spam, rng)
    order = c["order"].max() + 1 + np.arange(len(w), dtype=np.float64)
    return dict(workers=w, left=a, right=b, outcome=outcome, order=order)


def timed(fn, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only 1e4 and 1e5 judgments")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    cols = ["judgments", "annotators", "triplets", "kappa all (s)", "recount +1% (s)",
            "update 1% (s)", "update/recount"]  # fmt: skip
    print(" | ".join(f"{c:>15}" for c in cols))
    largest = None
    for n in sizes:
        c = campaign(n, rng)
        keys = ("workers", "left", "right", "outcome", "order")
        args5 = [c[k] for k in keys]
        t_kappa, res = timed(lambda a=args5: summarize(triangle_state(*a)), repeat=2)
        b = new_batch(c, 0.01, rng)
        both = [np.r_[c[k], b[k]] for k in keys]
        t_full, full = timed(lambda a=both: triangle_state(*a), repeat=2)
        state = triangle_state(*args5)
        new = [b[k] for k in keys]
        t_inc, inc = timed(lambda s=state, a=new: s.update(*a), repeat=3)
        if not (
            np.array_equal(inc.n_triplets, full.n_triplets)
            and np.array_equal(inc.n_transitive, full.n_transitive)
        ):
            raise SystemExit("incremental counts differ from the recount")
        row = [len(c["workers"]), len(res.annotators), int(full.n_triplets.sum()),
               f"{t_kappa:.3f}", f"{t_full:.3f}", f"{t_inc:.4f}", f"{t_inc / t_full:.3f}"]  # fmt: skip
        print(" | ".join(f"{v:>15}" for v in row), flush=True)
        largest = c
    c = largest
    t_bt, fit = timed(
        lambda: davidson(c["left"], c["right"], c["outcome"], regularization=REG, max_iter=100)
    )
    good = ~c["spammer"][c["workers"]]
    tau = kendalltau(fit.log_strength, c["latent"][fit.items]).statistic
    print(
        f"\nDavidson Bradley-Terry on {len(c['workers'])} judgments, {len(fit.items)} items: "
        f"{t_bt:.2f} s (ridge {REG}), {fit.iterations} iterations, converged={fit.converged}, "
        f"nu={fit.tie_parameter:.3f}, Kendall tau to latent = {tau:.3f} "
        f"(good annotators only: {_tau_good(c, good):.3f})"
    )


def _tau_good(c, good) -> float:
    fit = davidson(
        c["left"][good], c["right"][good], c["outcome"][good], regularization=REG, se_max_items=0
    )
    if fit.log_strength is None:
        return float("nan")
    return float(kendalltau(fit.log_strength, c["latent"][fit.items]).statistic)


if __name__ == "__main__":
    main()
