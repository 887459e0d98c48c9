"""Worker decisions against the truth: is monitor's word safe to act on?

On every real data set with truth (``../shared/real-data``: labels and ratings;
``../shared/real-preferences``: preferences), monitor runs with its defaults (except
``bootstrap_samples = 0`` and ``phi = map``, which no decision reads) and each worker's decision
(``monitor workers --json``) is set against their true quality (labels: share right; ratings:
mean absolute error; preferences: share of comparisons answered along the true order).

Printed per data set: the number of workers per decision; the campaign's ``verdict.state``; the crowd's median true quality
(workers with 30+ judgments); the workers decided ``block`` whose true quality is at or above
that median (target: none); the workers right less than 60% of the time on 500+ binary
judgments and their decisions (target: at least ``down_weight``).

On the preference sets two annotators are planted on randomised sides: one answering "left" in
72 of 80 comparisons (90%, "right" in the others), one answering "left" always. The
campaign is run three times: a first run holding 80% of the other annotators' comparisons and
the planted ones, an incremental run after the rest arrives, and ``recompute --full``. Targets:
the 90% one flagged and not ``ok``, the always-left one ``block``, in all three runs.

    python bench/decisions.py [--real-data PATH] [--real-preferences PATH] [--only NAME ...]
                              [--json PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realdata as rd  # noqa: E402

SETTINGS = {"bootstrap_samples": "0", "phi": "map"}
MIN_N = 30
PLANTED = {"planted-left90": 0.9, "planted-left100": 1.0}
PLANTED_N = 80


def _workers(common: tuple[str, ...], campaign: str) -> dict[str, dict[str, Any]]:
    out = rd._cli(*common, "workers", "--campaign", campaign, "--json")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {r["worker"]: r for r in rows}


def _state(common: tuple[str, ...], campaign: str) -> str:
    """The campaign's ``verdict.state`` in its JSON document."""
    doc = json.loads(rd._cli(*common, "report", "--campaign", campaign, "--format", "json"))
    return str(doc["verdict"].get("state"))


def _setup(tmp: Path) -> tuple[str, ...]:
    config = tmp / "monitor.toml"
    config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in SETTINGS.items()))
    return ("--db", f"sqlite:///{tmp}/monitor.db", "--config", str(config))


def _summary(
    rows: dict[str, dict[str, Any]], quality: dict[str, float], n: dict[str, int], binary: bool
) -> dict[str, Any]:
    judged = [w for w in rows if n.get(w, 0) >= MIN_N and w in quality]
    median = float(np.median([quality[w] for w in judged])) if judged else None
    blocked_good = sorted(
        w
        for w, r in rows.items()
        if r.get("decision") == "block" and median is not None and quality.get(w, -1e9) >= median
    )
    near_chance = (
        {
            w: rows[w].get("decision")
            for w in rows
            if binary and n.get(w, 0) >= 500 and quality.get(w, 1.0) < 0.6
        }
        if binary
        else {}
    )
    return {
        "decisions": dict(Counter(r.get("decision") for r in rows.values())),
        "median_true_quality": median,
        "blocked_at_or_above_median": blocked_good,
        "below_60_on_500": near_chance,
        "blocked": sorted(w for w, r in rows.items() if r.get("decision") == "block"),
    }


def label_set(path: Path) -> dict[str, Any]:
    ds = rd.load_dataset(path)
    quality, n = rd.worker_quality(ds)
    if ds.kind == "rating":  # worker_quality gives -|error| for ratings
        pass
    with tempfile.TemporaryDirectory() as t:
        common = _setup(Path(t))
        rd._cli(*common, "campaign", "create", ds.name, *ds.args)
        rd._cli(*common, "ingest", str(path / "judgments.csv"), "--campaign", ds.name)
        t0 = time.perf_counter()
        rd._cli(*common, "recompute", "--campaign", ds.name)
        seconds = time.perf_counter() - t0
        rows = _workers(common, ds.name)
        state = _state(common, ds.name)
    binary = ds.kind == "label" and len({v for _, _, v in ds.judgments}) == 2
    out = _summary(rows, quality, n, binary)
    out["seconds"] = round(seconds, 1)
    out["state"] = state
    blocked_quality = [quality[w] for w in out["blocked"] if w in quality]
    out["blocked_true_quality"] = [round(q, 3) for q in sorted(blocked_quality)]
    return out


def _write(path: Path, rows: list[tuple[str, str, str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["worker", "left", "right", "preference"])
        w.writerows(rows)


def preference_set(path: Path, seed: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    with (path / "preferences.csv").open(newline="", encoding="utf-8") as f:
        rows = [(r["worker"], r["left"], r["right"], r["preference"]) for r in csv.DictReader(f)]
    with (path / "truth.csv").open(newline="", encoding="utf-8") as f:
        truth = {r["item"]: float(r["truth"]) for r in csv.DictReader(f)}
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    items = sorted({i for r in rows for i in r[1:3]})
    planted = []
    for name, share in PLANTED.items():
        lefts = set(rng.permutation(PLANTED_N)[: round(share * PLANTED_N)].tolist())
        for k in range(PLANTED_N):
            a, b = rng.choice(len(items), 2, replace=False)
            planted.append((name, items[a], items[b], "left" if k in lefts else "right"))
    order = rng.permutation(len(rows))
    cut = int(0.8 * len(rows))
    first = [rows[i] for i in order[:cut]] + planted
    later = [rows[i] for i in order[cut:]]
    every = rows + planted
    hits: dict[str, list[float]] = {}
    for w, left, right, pref in every:
        tl, tr = truth.get(left), truth.get(right)
        if tl is None or tr is None or tl == tr:
            continue
        hits.setdefault(w, []).append(float((pref == "left") == (tl > tr)))
    quality = {w: float(np.mean(h)) for w, h in hits.items()}
    n = dict(Counter(r[0] for r in every))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        common = _setup(tmp)
        name = path.name
        rd._cli(*common, "campaign", "create", name, *meta["args"])
        _write(tmp / "first.csv", first)
        _write(tmp / "later.csv", later)
        rd._cli(*common, "ingest", str(tmp / "first.csv"), "--campaign", name)
        for label, argv in (
            ("first", ()),
            ("incremental", ("later",)),
            ("full", ("--full",)),
        ):
            if argv == ("later",):
                rd._cli(*common, "ingest", str(tmp / "later.csv"), "--campaign", name)
                argv = ()
            t0 = time.perf_counter()
            rd._cli(*common, "recompute", "--campaign", name, *argv)
            seconds = time.perf_counter() - t0
            rows_now = _workers(common, name)
            out[label] = {
                "seconds": round(seconds, 1),
                "planted": {
                    w: {
                        "decision": rows_now[w].get("decision"),
                        "flags": rows_now[w].get("flags"),
                        "reason": rows_now[w].get("decision_reason"),
                    }
                    for w in PLANTED
                },
            }
        real = {w: r for w, r in rows_now.items() if w not in PLANTED}
        out["full"].update(_summary(real, quality, n, binary=False))
        out["full"]["state"] = _state(common, name)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real-data", type=Path, default=ROOT.parent / "shared" / "real-data")
    ap.add_argument(
        "--real-preferences", type=Path, default=ROOT.parent / "shared" / "real-preferences"
    )
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rd.scrub_environment()
    results: dict[str, Any] = {}
    for root, fn in ((args.real_data, label_set), (args.real_preferences, preference_set)):
        if not root.is_dir():
            continue
        for path in rd.find_datasets(root):
            if args.only and path.name not in args.only:
                continue
            results[path.name] = fn(path)
            print(f"== {path.name}")
            print(json.dumps(results[path.name], indent=1, default=str))
            sys.stdout.flush()
    print("== targets")
    for name, r in results.items():
        for line in _targets(r):
            print(f"{name}: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


def _targets(r: dict[str, Any]) -> list[str]:
    """Each target of the module's docstring, met or not, with its figure."""
    if "full" not in r:
        below = r["below_60_on_500"]
        return [
            f"blocked at or above the median: {len(r['blocked_at_or_above_median'])} "
            f"({'met' if not r['blocked_at_or_above_median'] else 'MISSED'})",
            f"right < 60% on 500+ binary judgments: {below} "
            f"({'met' if all(d in ('block', 'down_weight') for d in below.values()) else 'MISSED'})",
        ]
    runs = ("first", "incremental", "full")
    left90 = [r[k]["planted"]["planted-left90"] for k in runs]
    left100 = [r[k]["planted"]["planted-left100"] for k in runs]
    ok90 = all("position_bias" in (p["flags"] or []) and p["decision"] != "ok" for p in left90)
    ok100 = all(p["decision"] == "block" for p in left100)
    blocked = r["full"]["blocked_at_or_above_median"]
    return [
        f"90% left: {[p['decision'] for p in left90]} ({'met' if ok90 else 'MISSED'})",
        f"always left: {[p['decision'] for p in left100]} ({'met' if ok100 else 'MISSED'})",
        f"blocked at or above the median: {len(blocked)} ({'met' if not blocked else 'MISSED'})",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
