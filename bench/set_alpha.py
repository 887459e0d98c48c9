"""Benchmark: alpha over sets (MASI, Jaccard) against NLTK, and its speed.

    .venv/bin/python bench/set_alpha.py            # the demo campaign, then 1e4..1e6 judgments
    .venv/bin/python bench/set_alpha.py --quick    # the demo campaign, then 1e4, 1e5

First the demo's multi-label campaign (``monitor demo``, seed 0): monitor's value and NLTK's
``AnnotationTask(distance=...).alpha()`` (the target: within 0.005). Then simulated campaigns,
5 judgments per item over 12 options (each item a true set, each judgment that set with each
option flipped with probability 0.1, never empty): seconds to code the sets, for alpha, and for a bootstrap of
200 replicates; NLTK's time on the smallest one for comparison.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.metrics.agreement.bootstrap import bootstrap_set_alpha  # noqa: E402
from monitor.metrics.agreement.sets import SetCounts, set_alpha  # noqa: E402


def demo() -> None:
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import jaccard_distance, masi_distance

    from monitor.actions.demo import OPTIONS, generate

    with tempfile.TemporaryDirectory() as tmp:
        multi = generate(Path(tmp), seed=0)[2]
        with multi.judgments.open(newline="") as fh:
            rows = [(r["worker"], r["item"], r["value"].split("|")) for r in csv.DictReader(fh)]
    item_ids = sorted({r[1] for r in rows})
    code = {o: k for k, o in enumerate(OPTIONS)}
    jud = [k for k, r in enumerate(rows) for _ in r[2]]
    opt = [code[o] for r in rows for o in r[2]]
    sc = SetCounts.from_annotations(
        [item_ids.index(r[1]) for r in rows], jud, opt, n_options=len(OPTIONS)
    )
    data = [(r[0], r[1], frozenset(r[2])) for r in rows]
    print(f"demo multi-label campaign: {len(rows)} judgments, {len(item_ids)} items")
    for distance, fn in (("masi", masi_distance), ("jaccard", jaccard_distance)):
        ours = set_alpha(sc, distance).alpha
        theirs = AnnotationTask(data, distance=fn).alpha()
        assert ours is not None
        print(
            f"  {distance:8s} monitor {ours:.9f}  NLTK {theirs:.9f}  |diff| {abs(ours - theirs):.1e}"
        )


def simulated(n_judgments: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_items = n_judgments // 5
    items = np.repeat(np.arange(n_items), 5)
    truth = rng.random((n_items, 12)) < 0.2
    chosen = truth[items] ^ (rng.random((items.size, 12)) < 0.1)
    empty = np.flatnonzero(~chosen.any(axis=1))  # NLTK cannot compare two empty sets
    chosen[empty, rng.integers(0, 12, empty.size)] = True
    jud, opt = np.nonzero(chosen)
    return items, jud, opt


def speed(n_judgments: int, with_nltk: bool) -> None:
    items, jud, opt = simulated(n_judgments)
    t0 = time.perf_counter()
    sc = SetCounts.from_annotations(items, jud, opt, n_options=12)
    t1 = time.perf_counter()
    r = set_alpha(sc, "masi")
    t2 = time.perf_counter()
    bootstrap_set_alpha(sc, "masi", n_boot=200)
    t3 = time.perf_counter()
    line = (
        f"{n_judgments:>9,} judgments, {sc.n_sets:,} distinct sets: alpha {r.alpha:.4f}; "
        f"code {t1 - t0:.2f} s, alpha {t2 - t1:.2f} s, bootstrap(200) {t3 - t2:.2f} s"
    )
    if with_nltk:
        from nltk.metrics.agreement import AnnotationTask
        from nltk.metrics.distance import masi_distance

        sets = [frozenset() for _ in range(items.size)]
        for j, o in zip(jud.tolist(), opt.tolist(), strict=True):
            sets[j] = sets[j] | {o}
        data = [(f"w{k % 5}", int(i), sets[k]) for k, i in enumerate(items.tolist())]
        t4 = time.perf_counter()
        theirs = AnnotationTask(data, distance=masi_distance).alpha()
        line += f"; NLTK {time.perf_counter() - t4:.2f} s ({theirs:.4f})"
    print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    demo()
    sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    for k, n in enumerate(sizes):
        speed(n, with_nltk=k == 0)


if __name__ == "__main__":
    main()
