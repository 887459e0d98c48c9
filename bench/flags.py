"""Signal-quality bench: what monitor's worker scores, flags and aggregates recover.

Two kinds of data:

* the synthetic golden campaigns of ``../shared/golden/cases``, whose ``truth_info`` says who the
  planted spammers, biased, careless and adversarial workers are and which items are ambiguous:
  precision / recall of the worker flags and the ``ambiguous`` flags, and the AUC of every
  worker score against the planted bad workers (crowd-kit's too on label cases);
* the real data sets with expert truth of ``../shared/real-data`` (``--real-data PATH``; every
  subfolder with a ``meta.json``): per data set the AUC of every worker score for the bottom 20 %
  of the workers by true accuracy, precision / recall of the worker flags (vs those workers) and
  of the ``ambiguous`` item flags (vs the items whose crowd answer is wrong), and the accuracy
  (labels) or mean absolute error (ratings) of each aggregate against the truth, beside
  crowd-kit's DawidSkene, GLAD, MACE, Wawa and MajorityVote (labels) or the plain mean and
  median (ratings). Definitions: ``bench/realdata.py``. Each real data set runs twice: without
  gold (the comparison the targets judge) and with the truth given as gold for a seeded 10 % of
  the items (``gold10``; its aggregates and item flags are scored on the other items only).

Monitor runs with its default settings except ``bootstrap_samples = 0`` and ``phi = map`` (no
worker score or flag depends on either; they only cost time), or with ``--set key=value``
overrides. The worker scores evaluated are whatever worker-scope values the run stores (except
counts and durations), so new measures appear without a change here; those where lower is
better are listed in ``realdata.LOWER_IS_BETTER``. crowd-kit's GLAD runs at most
``realdata.GLAD_ITER`` EM iterations (it converges in 6 to 10 here: the cap does not bind, its
conjugate-gradient M-step is what costs, two minutes on rte on a busy 2-core machine) and MACE
``realdata.MACE_RESTARTS`` random restarts instead of 10. crowd-kit's results are cached under
``--cache`` (they do not change when monitor does): the first run takes about 5 minutes, the
next ones about 2 (synthetic cases 1.5, real data sets 0.5).

Targets, on every real data set (without gold): best monitor worker-score AUC >= best crowd-kit
AUC - 0.02 (ratings: best of the no-monitor baselines); ``ambiguous`` precision >= 0.6 with
recall >= 0.4; accuracy of ``monitor export labels`` >= DawidSkene's (ratings: its MAE <= the
plain mean's).

    python bench/flags.py [--set low_agreement_ratio=0.7 ...] [--real-data PATH] [--json PATH]
                          [--only NAME ...] [--no-synthetic] [--no-gold]
    python bench/flags.py --models [--real-data PATH] [--only NAME ...]

``--models`` (``bench/models.py``) prints only the aggregates: per real rating set (and per item
group of it, e.g. affect's emotions: small campaigns) the MAE of the plain mean, the median and
``monitor export labels``; per label set the accuracy of the majority vote, Dawid-Skene and the
export.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realdata as rd  # noqa: E402

from monitor.core.settings import Settings, load_settings  # noqa: E402
from monitor.pipeline import recompute  # noqa: E402
from monitor.store.campaigns import get_campaign  # noqa: E402
from monitor.store.engine import make_engine, transaction  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402
from monitor.store.runs import latest_run, run_flags, run_values  # noqa: E402
from tests.golden import shared_dir  # noqa: E402
from tests.pipeline.cases import store_case  # noqa: E402

BASE_SETTINGS = {"bootstrap_samples": "0", "phi": "map"}
MIN_WORKER_JUDGMENTS = 10  # real data: workers with fewer are not evaluated (monitor's default)
AUC_SLACK = 0.02
AMBIGUOUS_PRECISION, AMBIGUOUS_RECALL = 0.6, 0.4
GOLD_SHARE, GOLD_SEED = 0.1, 0


def shared() -> Path:
    """``../shared`` (or ``$MONITOR_SHARED``), else the nearest ``shared`` folder above the
    checkout (a worktree may sit one level deeper than the main checkout)."""
    first = shared_dir()
    if first.is_dir():
        return first
    for parent in ROOT.parents:
        if (parent / "shared").is_dir():
            return parent / "shared"
    return first


# ---------------------------------------------------------------- synthetic golden cases


def evaluate_synthetic(path: Path, settings: Settings) -> dict:
    case = json.loads(path.read_text())
    truth = case.get("truth_info") or {}
    types = truth.get("worker_types") or {
        k: v["type"] for k, v in (truth.get("annotators") or {}).items()
    }
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/b.db")
        upgrade(engine)
        store_case(engine, case)
        recompute(engine, settings)
        with transaction(engine) as s:
            run = latest_run(s, get_campaign(s, "golden").id)
            flags = run_flags(s, run.id)
            workers = run_values(s, run.id, "worker")
        engine.dispose()
    flagged_w = {f.subject for f in flags if f.scope == "worker"}
    bad_w = {w for w, t in types.items() if t != "good"}
    flagged_i = {f.subject for f in flags if f.rule == "ambiguous" and f.scope == "item"}
    amb = set(truth.get("ambiguous_items") or [])
    everyone = set(types)
    scores: dict[str, dict[str, float | None]] = {}
    for v in workers:
        if rd.is_score(v.metric):
            scores.setdefault(v.metric, {})[v.subject] = rd._orient(v.metric, v.value)
    aucs = {f"monitor:{m}": rd.score_auc(s, bad_w, everyone)["auc"] for m, s in scores.items()}
    if case["kind"] == "label" and bad_w and bad_w != everyone:
        ds = rd.DataSet(
            path.stem,
            path,
            "label",
            [],
            [(str(r["worker"]), str(r["item"]), str(r["value"])) for r in case["judgments"]],
            {},
            [],
        )
        ck = rd.run_crowdkit(ds)
        for name, s in ck["scores"].items():
            aucs[f"crowdkit:{name}"] = rd.score_auc(s, bad_w, everyone)["auc"]
    return {
        "case": path.stem,
        "workers": rd.pr(flagged_w, bad_w, everyone),
        "items": rd.pr(flagged_i, amb, flagged_i | amb | _items(case))
        if "ambiguous_items" in truth
        else None,
        "missed": sorted(f"{w}({types[w]})" for w in bad_w - flagged_w),
        "false": sorted(flagged_w - bad_w),
        "auc": aucs,
    }


def _items(case: dict) -> set[str]:
    return {str(r["item"]) for r in case["judgments"] if "item" in r}


def _pr(r: dict | None, what: str = "planted") -> str:
    if not r:
        return "-"
    p = f"{r['precision']:.2f}" if r["flagged"] else "  - "
    q = f"{r['recall']:.2f}" if r["actual"] else "  - "
    return f"P {p} R {q} ({r['tp']}/{r['flagged']} flagged, {r['actual']} {what})"


def _aucs(aucs: dict[str, float], prefix: str) -> str:
    return "  ".join(
        f"{k.split(':', 1)[1]} {v:.2f}" for k, v in aucs.items() if k.startswith(prefix)
    )


def synthetic(settings: Settings) -> list[dict]:
    paths = [
        p
        for p in sorted((shared() / "golden" / "cases").glob("*.json"))
        if "truth_info" in json.loads(p.read_text())
    ]
    print("== synthetic golden campaigns (bad = planted non-good workers)")
    print(f"{'case':40} {'workers (any worker flag)':44} ambiguous items")
    results = []
    for path in paths:
        r = evaluate_synthetic(path, settings)
        results.append(r)
        print(f"{r['case']:40} {_pr(r['workers']):44} {_pr(r['items'])}")
        if r["missed"] or r["false"]:
            print(f"{'':40}   missed {r['missed']}  false {r['false']}")
        print(f"{'':40}   AUC monitor: {_aucs(r['auc'], 'monitor:') or '-'}")
        if any(k.startswith("crowdkit:") for k in r["auc"]):
            print(f"{'':40}   AUC crowd-kit: {_aucs(r['auc'], 'crowdkit:')}")
    totals = {}
    for key in ("workers", "items"):
        tp = sum(r[key]["tp"] for r in results if r[key])
        fl = sum(r[key]["flagged"] for r in results if r[key])
        ac = sum(r[key]["actual"] for r in results if r[key])
        totals[key] = {
            "tp": tp,
            "flagged": fl,
            "actual": ac,
            "precision": tp / fl if fl else math.nan,
            "recall": tp / ac if ac else math.nan,
        }
    print(f"{'all':40} {_pr(totals['workers']):44} {_pr(totals['items'])}")
    return results


# ---------------------------------------------------------------- real data sets


def evaluate_real(
    ds: rd.DataSet, run: rd.MonitorRun, ref: dict, eval_items: set[str], ref_kind: str
) -> dict:
    quality, n = rd.worker_quality(ds)
    evaluated = {w for w in quality if n[w] >= MIN_WORKER_JUDGMENTS}
    bad, cut = rd.bad_workers(quality, evaluated)
    answers = rd.by_item(ds)
    wrong, wrong_cut = rd.crowd_wrong(ds, {i: answers[i] for i in eval_items if i in answers})
    aucs: dict[str, dict] = {}
    for m, s in run.worker_scores.items():
        aucs[f"monitor:{m}"] = rd.score_auc(s, bad, evaluated)
    for m, s in ref["scores"].items():
        aucs[f"{ref_kind}:{m}"] = rd.score_auc(s, bad, evaluated)
    any_flag = set().union(*run.worker_flags.values()) if run.worker_flags else set()
    worker_flags = {"any": rd.pr(any_flag, bad, evaluated)}
    worker_flags |= {r: rd.pr(f, bad, evaluated) for r, f in sorted(run.worker_flags.items())}
    item_flags = {"ambiguous": rd.pr(run.item_flags.get("ambiguous", set()), wrong, eval_items)}
    item_flags |= {
        r: rd.pr(f, wrong, eval_items)
        for r, f in sorted(run.item_flags.items())
        if r != "ambiguous"
    }
    aggregates = {
        f"monitor:{k}": rd.answer_error(ds, a, eval_items) for k, a in run.item_answers.items()
    }
    aggregates |= {
        f"{ref_kind}:{k}": rd.answer_error(ds, a, eval_items) for k, a in ref["answers"].items()
    }
    return {
        "workers_evaluated": len(evaluated),
        "bad_workers": len(bad),
        "bad_cut": cut,
        "items_evaluated": len(eval_items),
        "crowd_wrong": len(wrong),
        "crowd_wrong_cut": wrong_cut,
        "auc": aucs,
        "worker_flags": worker_flags,
        "item_flags": item_flags,
        "aggregates": aggregates,
        "monitor_seconds": run.seconds,
        "notes": run.notes,
    }


def targets(ds: rd.DataSet, r: dict, ref_kind: str) -> list[dict]:
    def best(prefix: str) -> tuple[str, float]:
        c = [(k, v["auc"]) for k, v in r["auc"].items() if k.startswith(prefix)]
        c = [(k, v) for k, v in c if math.isfinite(v)]
        return max(c, key=lambda kv: kv[1]) if c else ("-", math.nan)

    (mk, mv), (ck, cv) = best("monitor:"), best(f"{ref_kind}:")
    amb = r["item_flags"]["ambiguous"]
    agg = r["aggregates"]
    exp = agg.get("monitor:export", math.nan)
    if ds.kind == "rating":
        base_k, base = f"{ref_kind}:mean", agg.get(f"{ref_kind}:mean", math.nan)
        agg_met, agg_text = exp <= base, f"export MAE {exp:.2f} vs {base_k} {base:.2f}"
    else:
        base_k, base = "crowdkit:DS", agg.get("crowdkit:DS", math.nan)
        agg_met, agg_text = exp >= base, f"export {exp:.3f} vs DS {base:.3f}"
    others = {k: v for k, v in agg.items() if k.startswith("monitor:") and k != "monitor:export"}
    if others:
        pick = min if ds.kind == "rating" else max
        k = pick(others, key=lambda m: others[m])
        agg_text += f" (best other monitor answer: {k.split(':', 1)[1]} {others[k]:.3f})"
    return [
        {
            "target": "worker AUC",
            "met": mv >= cv - AUC_SLACK,
            "text": f"{mk.split(':')[1]} {mv:.3f} vs {ck} {cv:.3f} - {AUC_SLACK}",
        },
        {
            "target": "ambiguous P/R",
            "met": amb["precision"] >= AMBIGUOUS_PRECISION and amb["recall"] >= AMBIGUOUS_RECALL,
            "text": f"P {_num(amb['precision'])} R {_num(amb['recall'])} "
            f"({amb['tp']}/{amb['flagged']} flagged, {amb['actual']} wrong)",
        },
        {"target": "aggregate", "met": agg_met, "text": agg_text},
    ]


def _num(x: float) -> str:
    return f"{x:.2f}" if math.isfinite(x) else "-"


def print_real(ds: rd.DataSet, config: str, r: dict, ref_kind: str) -> None:
    cut = f"<= {r['bad_cut']:.3f}" if ds.kind == "label" else f"MAE >= {-r['bad_cut']:.1f}"
    wrong = (
        "majority wrong or tied"
        if ds.kind == "label"
        else f"|mean - truth| > {r['crowd_wrong_cut']:.1f}"
    )
    print(
        f"-- {config}: {r['bad_workers']} bad of {r['workers_evaluated']} workers "
        f"(true {'accuracy ' if ds.kind == 'label' else ''}{cut}, >= {MIN_WORKER_JUDGMENTS} "
        f"judgments); {r['crowd_wrong']} of {r['items_evaluated']} items wrong "
        f"({wrong}); monitor {r['monitor_seconds']:.1f} s"
    )
    for kind in ("monitor", ref_kind):
        row = "  ".join(
            f"{k.split(':', 1)[1]} {v['auc']:.3f}"
            + (f" ({v['missing']} missing)" if v["missing"] else "")
            for k, v in r["auc"].items()
            if k.startswith(kind + ":")
        )
        print(f"   AUC {kind + ':':10} {row}")
    for rule, x in r["worker_flags"].items():
        print(f"   worker flags {rule:15} {_pr(x, 'bad')}")
    for rule, x in r["item_flags"].items():
        print(f"   item flags {rule:17} {_pr(x, 'wrong')}")
    what = "MAE" if ds.kind == "rating" else "accuracy"
    for kind in ("monitor", ref_kind):
        fmt = "{:.2f}" if ds.kind == "rating" else "{:.3f}"
        row = "  ".join(
            f"{k.split(':', 1)[1]} {fmt.format(v)}"
            for k, v in r["aggregates"].items()
            if k.startswith(kind + ":")
        )
        print(f"   {what} {kind + ':':10} {row}")
    for note in r["notes"]:
        print(f"   note: {note}")


def real(
    root: Path, overrides: dict[str, str], only: list[str], gold: bool, cache: Path | None
) -> list[dict]:
    if not root.is_dir():
        print(f"== real data: {root} not found, skipped (give --real-data PATH)")
        return []
    dropped = rd.scrub_environment()
    if dropped:
        print(f"(ignoring {', '.join(dropped)}: the bench uses its own settings)")
    out = []
    for path in rd.find_datasets(root):
        if only and path.name not in only:
            continue
        ds = rd.load_dataset(path)
        workers = len({w for w, _, _ in ds.judgments})
        print(
            f"\n== {ds.name} ({ds.kind}, {workers} workers, {len(ds.truth)} items with truth, "
            f"{len(ds.judgments)} judgments)"
        )
        t0 = time.perf_counter()
        if ds.kind == "label":
            ref, ref_kind = rd.run_crowdkit(ds, cache), "crowdkit"
            steps = ref.get("iterations", {})
            took = ", ".join(
                f"{k} {v:.1f} s" + (f" ({steps[k]} it.)" if k in steps else "")
                for k, v in ref["seconds"].items()
            )
            cached = " (cached)" if time.perf_counter() - t0 < 1 else ""
            print(f"   crowd-kit: {took}{cached}")
        else:
            ref, ref_kind = rd.rating_baselines(ds), "baseline"
        ref_seconds = time.perf_counter() - t0
        configs = [("no gold", None)]
        if gold:
            configs.append(
                (f"gold{round(GOLD_SHARE * 100)}", rd.gold_sample(ds, GOLD_SHARE, GOLD_SEED))
            )
        entry: dict[str, Any] = {
            "data_set": ds.name,
            "kind": ds.kind,
            "reference_seconds": ref_seconds,
        }
        for config, gold_items in configs:
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    run = rd.run_monitor(ds, Path(tmp), {**BASE_SETTINGS, **overrides}, gold_items)
                except Exception as exc:  # a broken run is reported, the bench goes on
                    print(f"-- {config}: monitor failed: {exc}")
                    entry[config] = {"error": str(exc)}
                    continue
            eval_items = {i for i in ds.truth if i not in (gold_items or {})}
            r = evaluate_real(ds, run, ref, eval_items, ref_kind)
            print_real(ds, config, r, ref_kind)
            r["targets"] = targets(ds, r, ref_kind)
            entry[config] = r
        out.append(entry)
    return out


def summary(results: list[dict]) -> None:
    """The targets judge the runs without gold; the gold configuration's figures (monitor with
    gold against crowd-kit without, on the items that are not gold) follow for information."""
    configs = sorted({k for e in results for k, v in e.items() if isinstance(v, dict)})
    for config in sorted(configs, key=lambda c: c != "no gold"):
        what = "" if config == "no gold" else ": for information, items not given as gold"
        print(f"\n== targets (real data, {config}{what})")
        for entry in results:
            for t in entry.get(config, {}).get("targets", []):
                mark = "met   " if t["met"] else "MISSED"
                print(f"{entry['data_set']:10} {t['target']:15} {mark} {t['text']}")


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [_clean(v) for v in obj]
    return obj


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--real-data", type=Path, default=shared() / "real-data")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="a real data set")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--no-gold", action="store_true", help="skip the 10 %% gold configuration")
    ap.add_argument("--json", type=Path, metavar="PATH", help="save the figures")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "monitor-bench",
        help="where crowd-kit's results are kept between runs (default: %(default)s)",
    )
    ap.add_argument("--no-cache", action="store_true", help="always rerun crowd-kit")
    ap.add_argument(
        "--models",
        action="store_true",
        help="only the aggregates: MAE of the mean, median and export (ratings), accuracy of "
        "the majority, Dawid-Skene and export (labels) on every real data set",
    )
    args = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.set)
    if args.models:
        from models import models

        t0 = time.perf_counter()
        figures = models(args.real_data, {**BASE_SETTINGS, **overrides}, args.only)
        print(f"\n({time.perf_counter() - t0:.0f} s)")
        if args.json:
            args.json.write_text(json.dumps(_clean({"models": figures}), indent=1) + "\n")
        return
    settings = load_settings(env={}, overrides={**BASE_SETTINGS, **overrides})
    t0 = time.perf_counter()
    syn = [] if args.no_synthetic or args.only else synthetic(settings)
    cache = None if args.no_cache else args.cache
    results = real(args.real_data, overrides, args.only, not args.no_gold, cache)
    summary(results)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if args.json:
        doc = {"settings": {**BASE_SETTINGS, **overrides}, "synthetic": syn, "real": results}
        args.json.write_text(json.dumps(_clean(doc), indent=1, allow_nan=False) + "\n")
        print(f"figures saved to {args.json}")


if __name__ == "__main__":
    main()
