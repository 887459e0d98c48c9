"""Benchmark: monitor's vectorised CrowdTruth 2.0 against the reference package.

Closed multi-label campaigns of 1e3 .. 1e6 judgments (10 options, 10 distinct workers per
unit, a pool of max(20, n / 2000) workers, seeded). The reference package (``crowdtruth`` 2.1,
CrowdTruth-core) is timed on the same data up to 1e5 judgments, both its loading
(``crowdtruth.load`` of a CSV with a custom-platform config) and its ``run`` step; the
numbers are compared (max abs diff over UQS, UAS, WQS, WWA, WUA, AQS). The package parses
every row's two timestamps with ``dateparser`` (about 7 ms per row); all timestamps here are
equal, so the bench memoises ``dateparser.parse`` to time the rest of its loading fairly.
Then a warm start after 1% new judgments is compared with a cold start.

    /work/venv/bin/python bench/crowdtruth.py            # 1e3 .. 1e6
    /work/venv/bin/python bench/crowdtruth.py --quick    # 1e3 and 1e4
    /work/venv/bin/python bench/crowdtruth.py --max 100000
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

# this file is called crowdtruth.py: keep its folder off the path so that ``import
# crowdtruth`` finds the reference package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from monitor.metrics.crowdtruth.scores import CrowdTruthResult, crowdtruth  # noqa: E402

N_OPTIONS = 10
PER_UNIT = 10
PER_WORKER = 2000
REFERENCE_MAX = 100_000


def campaign(n: int, seed: int = 0, first_unit: int = 0, n_workers: int | None = None):
    """n judgments: units of PER_UNIT distinct workers, 1-2 true options per unit, workers
    of varying reliability who pick true options and, now and then, others."""
    rng = np.random.default_rng(seed)
    n_units = max(1, n // PER_UNIT)
    n_w = n_workers if n_workers is not None else max(20, n // PER_WORKER)
    # distinct workers on each unit: the first PER_UNIT of a random order of the pool
    workers = np.concatenate(
        [
            np.argsort(rng.random((min(2000, n_units - start), n_w)), axis=1)[:, :PER_UNIT]
            for start in range(0, n_units, 2000)
        ]
    )
    workers = workers.reshape(-1)
    units = np.repeat(np.arange(n_units), PER_UNIT) + first_unit
    reliability = np.random.default_rng(1234).uniform(0.3, 0.95, size=n_w)
    truth = rng.random((n_units, N_OPTIONS)) < 0.12
    truth[np.arange(n_units), rng.integers(0, N_OPTIONS, n_units)] = True
    truth = np.repeat(truth, PER_UNIT, axis=0)
    q = reliability[workers][:, None]
    pick = rng.random(truth.shape) < np.where(truth, q, (1 - q) * 0.15)
    empty = ~pick.any(axis=1)
    pick[np.flatnonzero(empty), rng.integers(0, N_OPTIONS, int(empty.sum()))] = True
    return workers, units, sp.csr_array(pick.astype(np.float64)), n_w


def write_csv(path: Path, workers, units, counts) -> None:
    dense = counts.toarray() > 0
    names = np.array([f"o{k}" for k in range(N_OPTIONS)])
    with path.open("w", encoding="utf-8") as fh:
        fh.write("judgment_id,unit_id,worker_id,started,submitted,text,annotation\n")
        for k in range(len(workers)):
            ann = ",".join(names[dense[k]])
            fh.write(
                f"{k},u{units[k]},w{workers[k]},2018-01-01 10:00:00,2018-01-01 10:01:00,"
                f'text{units[k]},"{ann}"\n'
            )


def run_reference(path: Path):
    import functools

    import crowdtruth as ct
    from crowdtruth.configuration import DefaultConfig

    loader = sys.modules["crowdtruth.load"]
    if not hasattr(loader.dateparser.parse, "cache_info"):
        loader.dateparser.parse = functools.lru_cache(maxsize=None)(loader.dateparser.parse)

    class Config(DefaultConfig):
        # the package needs one input column for a custom platform
        inputColumns: ClassVar[list[str]] = ["text"]
        outputColumns: ClassVar[list[str]] = ["annotation"]
        customPlatformColumns: ClassVar[list[str]] = [
            "judgment_id",
            "unit_id",
            "worker_id",
            "started",
            "submitted",
        ]
        annotation_separator = ","
        open_ended_task = False
        annotation_vector: ClassVar[list[str]] = [f"o{k}" for k in range(N_OPTIONS)]

        def processJudgments(self, judgments):
            return judgments

    t0 = time.perf_counter()
    data, config = ct.load(file=str(path), config=Config())
    t1 = time.perf_counter()
    results = ct.run(data, config)
    t2 = time.perf_counter()
    return results, t1 - t0, t2 - t1


def max_diff(ours: CrowdTruthResult, ref) -> float:
    units = ref["units"]
    workers = ref["workers"]
    worst = 0.0
    u_codes = np.array([int(str(i)[1:]) for i in units.index])
    w_codes = np.array([int(str(i)[1:]) for i in workers.index])
    worst = max(worst, np.max(np.abs(ours.uqs[u_codes] - units["uqs"].to_numpy(float))))
    for key, col in (("wqs", "wqs"), ("wwa", "wwa"), ("wua", "wsa")):
        ref_vals = workers[col].to_numpy(float)
        worst = max(worst, np.max(np.abs(getattr(ours, key)[w_codes] - ref_vals)))
    aqs = ref["annotations"]["aqs"]
    a_codes = np.array([int(str(i)[1:]) for i in aqs.index])
    worst = max(worst, np.max(np.abs(ours.aqs[a_codes] - aqs.to_numpy(float))))
    uas = ours.uas.toarray()
    for code, scores in zip(u_codes, units["unit_annotation_score"], strict=True):
        for name, value in scores.items():
            worst = max(worst, abs(uas[code, int(name[1:])] - value))
    return float(worst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1e3 and 1e4 judgments only")
    parser.add_argument("--max", type=int, default=None, help="largest campaign size")
    parser.add_argument("--no-reference", action="store_true", help="skip the package")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    if args.max is not None:
        sizes = [s for s in sizes if s <= args.max]
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")

    header = (
        f"{'judgments':>10} {'workers':>7} {'units':>7} {'iter':>4} {'monitor s':>10} "
        f"{'ref load s':>10} {'ref run s':>10} {'run ratio':>9} {'total ratio':>11} "
        f"{'max |diff|':>10}"
    )
    print(header)
    print("-" * len(header))
    warm_rows = []
    for n in sizes:
        w, u, counts, n_w = campaign(n)
        t0 = time.perf_counter()
        ours = crowdtruth(w, u, counts, n_workers=n_w)
        t_ours = time.perf_counter() - t0
        ref_cols = f"{'-':>10} {'-':>10} {'-':>9} {'-':>11} {'-':>10}"
        if n <= REFERENCE_MAX and not args.no_reference:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "campaign.csv"
                write_csv(path, w, u, counts)
                ref, t_load, t_run = run_reference(path)
            diff = max_diff(ours, ref)
            ref_cols = (
                f"{t_load:>10.2f} {t_run:>10.2f} {t_run / t_ours:>8.0f}x "
                f"{(t_load + t_run) / t_ours:>10.0f}x {diff:>10.1e}"
            )
        print(
            f"{n:>10} {n_w:>7} {int(ours.unit_kept.sum()):>7} {ours.iterations:>4} "
            f"{t_ours:>10.3f} {ref_cols}",
            flush=True,
        )
        # warm start: 1% new judgments on new units, same worker pool
        w2, u2, c2, _ = campaign(
            max(PER_UNIT, n // 100), seed=7, first_unit=int(u.max()) + 1, n_workers=n_w
        )
        wa, ua = np.concatenate([w, w2]), np.concatenate([u, u2])
        ca = sp.vstack([counts, c2], format="csr")
        t0 = time.perf_counter()
        cold = crowdtruth(wa, ua, ca, n_workers=n_w)
        t_cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm = crowdtruth(wa, ua, ca, n_workers=n_w, warm_start=ours.scores)
        t_warm = time.perf_counter() - t0
        gap = max(np.nanmax(np.abs(warm.wqs - cold.wqs)), np.nanmax(np.abs(warm.uqs - cold.uqs)))
        warm_rows.append((n, cold.iterations, warm.iterations, t_cold, t_warm, gap))

    print()
    print("warm start after 1% new judgments (new units, same workers)")
    head = (
        f"{'judgments':>10} {'cold iter':>9} {'warm iter':>9} {'fewer':>5} {'cold s':>8} "
        f"{'warm s':>8} {'max |warm-cold|':>15}"
    )
    print(head)
    print("-" * len(head))
    for n, ic, iw, tc, tw, gap in warm_rows:
        print(f"{n:>10} {ic:>9} {iw:>9} {ic - iw:>5} {tc:>8.3f} {tw:>8.3f} {gap:>15.1e}")


if __name__ == "__main__":
    main()
