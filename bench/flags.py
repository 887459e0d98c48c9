"""Precision and recall of monitor's flags on the synthetic golden campaigns.

The synthetic cases of ``../shared/golden/cases`` say who the planted spammers, biased,
careless and adversarial workers are, and which items are ambiguous (``truth_info``). This runs
the pipeline on each (in a throwaway SQLite database) with the default settings, or with
``--set key=value`` overrides, and prints what the flags recover.

    python bench/flags.py [--set low_wqs_ratio=0.7 ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.pipeline import recompute  # noqa: E402
from monitor.settings import Settings, load_settings  # noqa: E402
from monitor.store.campaigns import get_campaign  # noqa: E402
from monitor.store.engine import make_engine, transaction  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402
from monitor.store.runs import latest_run, run_flags  # noqa: E402
from tests.golden import GOLDEN  # noqa: E402
from tests.pipeline.cases import store_case  # noqa: E402

WORKER_RULES = {"low_quality", "low_agreement", "intransitive", "position_bias"}


def evaluate(path: Path, settings: Settings) -> dict:
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
        engine.dispose()
    flagged_w = {f.subject for f in flags if f.scope == "worker" and f.rule in WORKER_RULES}
    bad_w = {w for w, t in types.items() if t != "good"}
    flagged_i = {f.subject for f in flags if f.rule == "ambiguous" and f.scope == "item"}
    amb = set(truth.get("ambiguous_items") or [])
    return {
        "case": path.stem,
        "workers": (len(flagged_w & bad_w), len(flagged_w), len(bad_w)),
        "items": (len(flagged_i & amb), len(flagged_i), len(amb))
        if "ambiguous_items" in truth
        else None,
        "missed": sorted(f"{w}({types[w]})" for w in bad_w - flagged_w),
        "false": sorted(flagged_w - bad_w),
    }


def _pr(tp: int, flagged: int, actual: int) -> str:
    p = f"{tp / flagged:.2f}" if flagged else "  - "
    r = f"{tp / actual:.2f}" if actual else "  - "
    return f"P {p} R {r} ({tp}/{flagged} flagged, {actual} planted)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.set)
    settings = load_settings(env={}, overrides={"bootstrap_samples": 0, "phi": "map", **overrides})
    totals = {"workers": [0, 0, 0], "items": [0, 0, 0]}
    paths = [
        p
        for p in sorted((GOLDEN / "cases").glob("*.json"))
        if "truth_info" in json.loads(p.read_text())
    ]
    print(f"{'case':42} {'workers (any worker flag)':45} ambiguous items")
    for path in paths:
        r = evaluate(path, settings)
        for key in totals:
            if r[key]:
                totals[key] = [a + b for a, b in zip(totals[key], r[key], strict=True)]
        items = _pr(*r["items"]) if r["items"] else "-"
        print(f"{r['case']:42} {_pr(*r['workers']):45} {items}")
        if r["missed"] or r["false"]:
            print(f"{'':42}   missed {r['missed']}  false {r['false']}")
    print(f"{'all':42} {_pr(*totals['workers']):45} {_pr(*totals['items'])}")


if __name__ == "__main__":
    main()
