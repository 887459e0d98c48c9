"""Planning bench: pairs chosen by ``monitor pairs plan`` against uniformly random pairs.

On each set of ``../shared/real-preferences`` (README there), the items and their truth are
kept and the annotators are simulated with the accuracies observed there. The real answers
show that accuracy falls as the truth of the two items comes closer (passages: 56% for one
grade apart, 76% for eight; face-age: 58% within 7 years, 91% beyond 34), so the simulation is
Crowd-BT on the truth: an annotator answers along the truth with probability
``eta_k q + (1 - eta_k)(1 - q)``, ``q = sig(beta |t_a - t_b|)`` (truth in its sds; at random
when equal), sides at random, no ties. ``beta`` and every real annotator's ``eta`` are fitted
jointly to the set's answers by maximum likelihood; the ``W`` simulated annotators draw their
``eta`` (with replacement) from the real annotators with at least 10 comparisons of items with
different truth.

The budget ``B`` (comparisons per item x items) is spent in ``STEPS`` equal steps by the same
annotators. **Random**: uniformly random pairs, each annotator an equal share of each step.
**Planned**: the first step the same pairs and answers as random (with nothing judged there is
nothing to plan from), then
each step's budget planned (and shared among the annotators: more to those whose answers carry
more information, between half and 1.5 times the even share) by :func:`monitor.metrics.preferences.planning.plan_pairs` from the preference model
(:func:`monitor.metrics.preferences.model.preference_model`, no position bias: the simulated
annotators have none) fitted on the answers so far, as ``monitor pairs plan`` does. After each
step both are fitted and the Spearman correlation of the item scores with the truth is taken.

Reported: Spearman per step for both (and ``accuracy_rho``: the Spearman correlation with the
true accuracies of the annotators' accuracies that the planner was told for that step, fitted on
the steps before it); the share of the budget at which planned pairs first
reach random's full-budget Spearman (target: at most 60%); the share of the annotators with 30+
comparisons who have 10+ fully judged triplets at the end (target: at least 90%; random's for
comparison); and the time to plan for 10,000 items and 1,000 annotators with 30 comparisons each
(target: under 5 s), with the machine's load average (the machine is shared).

    python bench/planning.py [--quick] [--json PATH] [--seed N] [--repeats N]
                             [--ceiling [--ceiling-shares FLOOR,CAP]]

Each set is simulated ``--repeats`` times (6) and the Spearman correlations averaged per step;
the spread between repeats is reported as the mean and sd over the repeats of planned minus
random (the same seed, annotators and first step for both arms) at 60% and 100%.
``--quick``: face-age cut to its first 2,000 items (and half the annotators); 5 steps, 2
repeats.

``--ceiling`` adds a third arm that is not monitor's behaviour but a bound on what choosing
annotators can give: the planner is told every simulated annotator's **true** accuracy (monitor
only has the model's estimate) and its quotas are free (0 to 10 times the even share, instead
of 0.5 to 1.5: the worst annotators may get nothing, so they are never audited);
``--ceiling-shares 0.5,1.5`` keeps monitor's bounds and tells only the accuracies.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.metrics.preferences.model import preference_model  # noqa: E402
from monitor.metrics.preferences.planning import plan_pairs  # noqa: E402
from monitor.metrics.preferences.triangles import triangle_state  # noqa: E402

DATA = ROOT.parent / "shared" / "real-preferences"
BETA_DEFAULT = 3.0
SETTINGS = {  # annotators, comparisons per item at full budget
    "passages": (60, 8.0),
    "face-age": (300, 3.0),
}


def load(path: Path, max_items: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """The items' truth (I,) in sds of the truth, the set's annotators' accuracies ``eta``
    (those with at least 10 comparisons of items with different truth) and the slope ``beta``,
    fitted jointly by maximum likelihood to the real answers (module docstring)."""
    with (path / "truth.csv").open(newline="", encoding="utf-8") as f:
        truth = {r["item"]: float(r["truth"]) for r in csv.DictReader(f)}
    scale = float(np.std(list(truth.values())))
    names = sorted(truth)[:max_items] if max_items else sorted(truth)
    t = np.array([truth[n] for n in names]) / scale
    who, gap, along = [], [], []
    with (path / "preferences.csv").open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            a, b = truth.get(r["left"]), truth.get(r["right"])
            if a is None or b is None or a == b:
                continue
            who.append(r["worker"])
            gap.append(abs(a - b) / scale)
            along.append((a > b) == (r["preference"] == "left"))
    _, w = np.unique(who, return_inverse=True)
    eta, beta = _calibrate(w, np.array(gap), np.array(along, dtype=float))
    n = np.bincount(w)
    return t, eta[n >= 10], beta


def _calibrate(w, gap, along, iters: int = 8) -> tuple[np.ndarray, float]:
    """Crowd-BT on the truth: ``P(along) = eta_w q + (1 - eta_w)(1 - q)``, ``q = sig(beta
    gap)``; alternating maximisation (beta by a bounded scalar search, each eta_w by bisection
    on its concave log likelihood)."""
    from scipy.optimize import minimize_scalar

    n_w = int(w.max()) + 1
    eta = np.full(n_w, 0.8)
    beta = 1.0
    for _ in range(iters):

        def nll(bt: float, e: np.ndarray = eta[w]) -> float:
            q = 1 / (1 + np.exp(-bt * gap))
            p = np.where(along > 0, e * q + (1 - e) * (1 - q), e * (1 - q) + (1 - e) * q)
            return -float(np.log(np.maximum(p, 1e-12)).sum())

        beta = float(minimize_scalar(nll, bounds=(0.01, 50), method="bounded").x)
        q = 1 / (1 + np.exp(-beta * gap))
        c = np.where(along > 0, 2 * q - 1, 1 - 2 * q)  # dP/deta
        base = np.where(along > 0, 1 - q, q)  # P at eta = 0
        lo, hi = np.full(n_w, 0.01), np.full(n_w, 0.99)
        for _ in range(40):
            mid = (lo + hi) / 2
            slope = np.bincount(w, c / (base + mid[w] * c), n_w)
            lo, hi = np.where(slope > 0, mid, lo), np.where(slope > 0, hi, mid)
        eta = (lo + hi) / 2
    return eta, beta


def answer(truth, eta, w, a, b, rng, beta: float = BETA_DEFAULT) -> np.ndarray:
    """+1 left / -1 right: along the truth with probability ``eta q + (1 - eta)(1 - q)``,
    ``q = sig(beta |truth_a - truth_b|)`` (at random when the truth is equal)."""
    diff = truth[a] - truth[b]
    q = 1 / (1 + np.exp(-beta * np.abs(diff)))
    p = eta[w] * q + (1 - eta[w]) * (1 - q)
    along = np.where(diff == 0, rng.choice((-1, 1), a.size), np.sign(diff))
    return np.where(rng.random(a.size) < p, along, -along).astype(np.int64)


def random_pairs(n_items, per, rng) -> tuple[np.ndarray, ...]:
    w = np.repeat(np.arange(per.size), per)
    a = rng.integers(0, n_items, w.size)
    b = (a + rng.integers(1, n_items, w.size)) % n_items
    return w, a, b


def fit(n_items, w, a, b, y, n_w):
    return preference_model(w, a, b, y, n_workers=n_w, n_items=n_items, ties_allowed=False,
                            position_bias=False)  # fmt: skip


def spearman(score, truth) -> float:
    return float(spearmanr(score, truth).statistic)


def run_set(name: str, truth, accs, beta, n_w, per_item, steps, seed,
            ceiling: tuple[float, float] | None = None) -> dict[str, Any]:  # fmt: skip
    """One simulated campaign, every arm on the same annotators (each arm its own random
    stream, so one arm's draws do not move the other's); ``ceiling``: the third arm of the
    module docstring, with these quota bounds."""
    n_i = truth.size
    eta = np.random.default_rng([seed, 0]).choice(accs, n_w)
    budget = int(per_item * n_i)
    step = np.full(n_w, budget // (steps * n_w))
    out: dict[str, Any] = {"items": n_i, "annotators": n_w, "budget": int(step.sum() * steps),
                           "eta_mean": float(eta.mean()), "beta": beta, "steps": []}  # fmt: skip
    empty = np.zeros(0, np.int64)
    names = ("random", "planned", "ceiling") if ceiling is not None else ("random", "planned")
    arms = {arm: [empty] * 4 for arm in names}
    rngs = {arm: np.random.default_rng([seed, n + 1]) for n, arm in enumerate(names)}
    plan_s = 0.0
    # the first step is the same for both arms: random pairs, the same answers
    first = random_pairs(n_i, step, rngs["random"])
    first = (*first, answer(truth, eta, *first, rngs["random"], beta))
    for k in range(steps):
        row = {"share": (k + 1) / steps}
        for arm, (w, a, b, y) in list(arms.items()):
            rng = rngs[arm]
            if k == 0:
                w, a, b, y = first
                arms[arm] = [w, a, b, y]
                row[arm] = spearman(fit(n_i, w, a, b, y, n_w).score, truth)
                continue
            if arm == "random":
                nw, na, nb = random_pairs(n_i, step, rng)
            else:
                m = fit(n_i, w, a, b, y, n_w)
                told = {"accuracy": eta, "shares": ceiling} if arm == "ceiling" else {
                    "accuracy": m.accuracy}  # fmt: skip
                t0 = time.perf_counter()
                p = plan_pairs(w, a, b, y, n_items=n_i, score=m.score, score_sd=m.score_se,
                               plan_for=np.arange(n_w), budget=int(step.sum()), seed=rng,
                               **told)  # fmt: skip
                if arm == "planned":
                    plan_s += time.perf_counter() - t0
                    # how well the accuracies the planner is told rank the true ones
                    row["accuracy_rho"] = spearman(m.accuracy, eta)
                nw, na, nb = p.workers, p.left, p.right
            ny = answer(truth, eta, nw, na, nb, rng, beta)
            w, a, b, y = np.r_[w, nw], np.r_[a, na], np.r_[b, nb], np.r_[y, ny]
            arms[arm] = [w, a, b, y]
            row[arm] = spearman(fit(n_i, w, a, b, y, n_w).score, truth)
        out["steps"].append(row)
    for arm, (w, a, b, y) in arms.items():
        n = np.bincount(w, minlength=n_w)
        tri = triangle_state(w, a, b, y, n_workers=n_w, n_items=n_i).n_triplets
        eligible = n >= 30
        out[f"{arm}_triplets"] = [int((tri[eligible] >= 10).sum()), int(eligible.sum())]
    out["plan_seconds_total"] = plan_s
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean Spearman per step over the repeats; where planned first reaches random's mean at
    the full budget; the triplet shares pooled over the repeats."""
    arms = [a for a in ("random", "planned", "ceiling") if a in runs[0]["steps"][0]]
    steps = [
        {"share": s["share"]} | {a: float(np.mean([r["steps"][k][a] for r in runs])) for a in arms}
        for k, s in enumerate(runs[0]["steps"])
    ]
    for k, s in enumerate(steps):  # the accuracies the planner was told for this step
        rho = [r["steps"][k].get("accuracy_rho", np.nan) for r in runs]
        if np.isfinite(rho).any():
            s["accuracy_rho"] = float(np.nanmean(rho))
    full = steps[-1]["random"]
    reach = [s["share"] for s in steps if s["planned"] >= full]
    spread: dict[str, dict[str, list[float]]] = {}
    for arm in arms[1:]:
        spread[arm] = {}
        for k in (round(0.6 * len(steps)) - 1, len(steps) - 1):
            d = [r["steps"][k][arm] - r["steps"][k]["random"] for r in runs]
            spread[arm][f"{steps[k]['share']:.0%}"] = [
                float(np.mean(d)),
                float(np.std(d, ddof=1)) if len(d) > 1 else 0.0,
            ]
    out = {k: runs[0][k] for k in ("items", "annotators", "budget", "beta")}
    if "ceiling" in arms:
        at = [s["share"] for s in steps if s["ceiling"] >= full]
        out["ceiling_reaches_it_at"] = at[0] if at else None
    out.update(steps=steps, random_full_spearman=full,
               planned_reaches_it_at=reach[0] if reach else None,
               repeats=len(runs), minus_random=spread, per_repeat=[{k: r[k] for k in (
                   "eta_mean", "random_triplets", "planned_triplets")} | {
                   "random_full": r["steps"][-1]["random"],
                   "planned_full": r["steps"][-1]["planned"]} for r in runs])  # fmt: skip
    for arm in arms:
        met = sum(r[f"{arm}_triplets"][0] for r in runs)
        n = sum(r[f"{arm}_triplets"][1] for r in runs)
        out[f"{arm}_triplet_share"] = met / n if n else None
        out[f"{arm}_eligible"] = n
    return out


def timing(rng, n_items=10_000, n_w=1000, per_w=30) -> dict[str, Any]:
    truth = rng.normal(0, 1, n_items)
    eta = np.full(n_w, 0.8)
    w, a, b = random_pairs(n_items, np.full(n_w, per_w), rng)
    y = answer(truth, eta, w, a, b, rng)
    t0 = time.perf_counter()
    m = fit(n_items, w, a, b, y, n_w)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    p = plan_pairs(w, a, b, y, n_items=n_items, score=m.score, score_sd=m.score_se,
                   accuracy=m.accuracy, plan_for=np.arange(n_w), budget=per_w * n_w,
                   retest=0.05, seed=rng)  # fmt: skip
    plan_s = time.perf_counter() - t0
    return {"items": n_items, "annotators": n_w, "judgments": int(w.size), "pairs": len(p),
            "plan_seconds": plan_s, "model_fit_seconds": fit_s,
            "load_average": os.getloadavg()[0]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, help="simulated campaigns per set (6; --quick 2)")
    ap.add_argument(
        "--ceiling",
        action="store_true",
        help="a third arm told the true accuracies, with free quotas (docstring)",
    )
    ap.add_argument("--ceiling-shares", default="0,10", metavar="FLOOR,CAP",
                    help="the ceiling arm's quota bounds, times the even share (0,10)")  # fmt: skip
    args = ap.parse_args()
    floor, cap = (float(x) for x in args.ceiling_shares.split(","))
    ceiling = (floor, cap) if args.ceiling else None
    rng = np.random.default_rng(args.seed)
    steps = 5 if args.quick else 10
    repeats = args.repeats or (2 if args.quick else 6)
    report: dict[str, Any] = {"quick": args.quick, "sets": {}}
    for name, (n_w, per_item) in SETTINGS.items():
        path = DATA / name
        if not path.is_dir():
            print(f"{name}: not found at {path}, skipped")
            continue
        cut = args.quick and name == "face-age"
        truth, accs, beta = load(path, 2000 if cut else None)
        n_w = n_w // 2 if cut else n_w
        print(f"{name}: {truth.size} items, {accs.size} annotators' accuracies (median eta "
              f"{np.median(accs):.2f}), beta {beta:.2f}", flush=True)  # fmt: skip
        runs = []
        for rep in range(repeats):
            runs.append(run_set(name, truth, accs, beta, n_w, per_item, steps, args.seed + rep,
                                ceiling))  # fmt: skip
            last = runs[-1]["steps"][-1]
            print(f"  repeat {rep + 1}: at 100% random {last['random']:.3f}, planned "
                  f"{last['planned']:.3f}", flush=True)  # fmt: skip
        report["sets"][name] = summarise(runs)
        for s in report["sets"][name]["steps"]:
            print(f"  {s['share']:.0%}: " + "  ".join(f"{a} {v:.3f}" for a, v in s.items()
                                                     if a != "share"))  # fmt: skip
        for arm, by in report["sets"][name]["minus_random"].items():
            for at, (mean, sd) in by.items():
                print(f"  {arm} - random at {at}: {mean:+.3f} (sd {sd:.3f} over {repeats} "
                      "repeats)")  # fmt: skip
        if args.ceiling:
            at = report["sets"][name]["ceiling_reaches_it_at"]
            print(f"  ceiling reaches random's 100% at {'never' if at is None else f'{at:.0%}'}")
    report["timing"] = timing(rng)
    print()
    print("| set | items | annotators | budget | random Spearman at 100% | planned reaches it at |"
          " annotators 30+ with 10+ triplets: planned / random |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, r in report["sets"].items():
        at = r["planned_reaches_it_at"]
        print(f"| {name} | {r['items']} | {r['annotators']} | {r['budget']} | "
              f"{r['random_full_spearman']:.3f} | {'never' if at is None else f'{at:.0%}'} | "
              f"{_share(r['planned_triplet_share'])} of {r['planned_eligible']} / "
              f"{_share(r['random_triplet_share'])} of {r['random_eligible']} |")  # fmt: skip
    t = report["timing"]
    print(
        f"\nplan for {t['items']:,} items and {t['annotators']:,} annotators "
        f"({t['judgments']:,} judgments, {t['pairs']:,} pairs): {t['plan_seconds']:.2f} s "
        f"(model fit {t['model_fit_seconds']:.1f} s; load average {t['load_average']:.2f})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


if __name__ == "__main__":
    main()
