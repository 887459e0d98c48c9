"""Live bench: replay the real label and preference sets as a platform would, and judge the
``stop`` decision.

Usage::

    python bench/live.py [--only NAME ...] [--order random|bursts] [--chunk 400] [--seed 0]

Face-age (29,626 comparisons with the planted annotator) takes 5-6 minutes at the default
chunk (75 cycles of 4-5 s on two cores); passages about a minute.

Each real label set of ``../shared/real-data`` and preference set of
``../shared/real-preferences`` (with ``--plant N``, default 60, an annotator added who picks the
left item on exactly 90% of N distinct pairs of the set) arrives in chunks of ``--chunk`` judgments: in a
random order (``random``) or in worker bursts (``bursts``: each worker's judgments together,
the workers in a random order). Each chunk is ingested and recomputed, and ``monitor workers
--json`` read, the way the README's loop does, on a throwaway SQLite database. A worker decided
``stop`` or ``block`` gets no more work: their later judgments never arrive. With ``--overlap``,
an item whose ``need`` is 0 after a cycle (``monitor export overlap``) gets no more judgments
either, until a later cycle says it wants some again; ``max_overlap`` is set to the most
judgments any item of the set has (the platform's planned overlap). With ``--live K`` (label
sets), the judgments of a chunk arrive K at a time and the live path runs after each batch, as
a pull or a webhook runs it (``monitor.incremental.live``): a worker it stops gets nothing more
of the chunk, and the run still comes once a chunk.

Printed per set:

* **near-chance workers**: true accuracy at most chance + 0.2 x (1 - chance) (binary: 60%),
  among the workers with at least 10 judgments measured by the truth. A label worker's true
  accuracy is the share of their answers equal to the truth, over their judgments of items
  with a truth (adult2's truth covers a few of its sites: most of its workers judged one or
  two of them, and are not counted). An annotator's, on a
  preference set, is the share of their comparisons of two items of unequal truth whose
  preferred item has the higher truth (chance 0.5), and they need 10 such comparisons. The
  planted annotator is none of the set's workers: it is reported on its own;
* their **judgments to stop**: the judgments of theirs that had arrived when they were stopped
  (median and p90 over the near-chance workers stopped; ``--chunk`` sets the granularity),
  and the test's own count, ``stop_after`` (the judgments it had scored when its evidence
  reached 1 / alpha: what a decision taken on every judgment would have needed; none for a
  worker blocked without the test's evidence);
* the **share of their judgments that arrived** (a worker never stopped: all of them);
* **false stops**: workers stopped whose true accuracy is at or above the crowd's median (over
  the workers with at least 10 judgments measured by the truth; a worker stopped with fewer is
  counted apart). "Stopped" is a ``stop`` or a ``block`` decision (either ends the worker's
  work); the count of blocks is printed beside it, and ``--json`` gives each stopped worker's
  decision, cycle, judgments and true accuracy;
* **an oracle's** figures beside theirs: the near-chance workers that Wald's sequential test
  would stop, knowing the truth of every answer and each worker's true accuracy, at
  ``stop_alpha`` against the line the settings draw from the crowd's true median; the median
  of their judgments (of those that arrived, in the replay's order) when it stops them, and
  the share of the near-chance workers' judgments that would arrive. No test with that error
  rate does much better on average, so the oracle says what the set allows;
* **judgments bought** against the full set;
* the **export's accuracy** against the truth, beside the nightly export's (every judgment
  ingested, one recompute). Labels: the share of items ``monitor export labels`` answers right.
  Pairs: that export is the ranking (each item's score under the preference model); its
  accuracy is the share of the full set's distinct pairs of unequal truth (the same pairs live
  and nightly, arrived or not) that its scores order as the truth does, a pair with an item
  it does not rank, or with equal scores, counting one half;
* the chunk, the cycles (a recompute each), the seconds a cycle, and the seconds of the
  replay and of the nightly run.

Preference sets have no live path (``--live`` applies to label sets): each answer is scored
once, by the first run that sees it, against the cavity consensus of the preference model.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from monitor.actions.worker_lists import worker_decisions
from monitor.core.settings import Settings
from monitor.incremental.live import update_live
from monitor.metrics.stopping import stop_line
from monitor.store.campaigns import get_campaign
from monitor.store.engine import make_engine, transaction
from monitor.store.runs import latest_run, run_values

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realdata import (  # noqa: E402
    DataSet,
    _cli,
    _rows,
    find_datasets,
    load_dataset,
    scrub_environment,
    worker_quality,
)

ROOT = Path(__file__).resolve().parents[2] / "shared"
MIN_N = 10
SETTINGS: list[str] = []
"""``KEY=VALUE`` settings of the live campaign (``--set``)."""
STOPPED = ("stop", "block")


PLANTED = "planted-left"
"""The annotator ``--plant`` adds to a preference set: the left item on exactly 90% of its
pairs."""


def _write(path: Path, rows: list[tuple[str, ...]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["worker", "left", "right", "preference"] if len(rows[0]) == 4
                   else ["worker", "item", "value"])  # fmt: skip
        w.writerows(rows)


def load_pairs(path: Path, plant: int = 0, seed: int = 0) -> DataSet:
    """A real preference set (``preferences.csv``, ``truth.csv``: a number per item, the
    preferred item the larger); with ``plant``, an annotator who picks the left item on
    exactly 90% of ``plant`` distinct pairs of the set (in a random order), each shown either
    way round: along the truth half the time."""
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    rows = [(r["worker"], r["left"], r["right"], r["preference"])
            for r in _rows(path / "preferences.csv")]  # fmt: skip
    rng = random.Random(seed + 1)
    pairs = sorted({tuple(sorted((r[1], r[2]))) for r in rows})
    lefts = [k < round(0.9 * plant) for k in range(plant)]  # exactly 90% left
    rng.shuffle(lefts)
    for (left, right), on_left in zip(rng.sample(pairs, plant), lefts, strict=True):
        if rng.random() < 0.5:
            left, right = right, left
        rows.append((PLANTED, left, right, "left" if on_left else "right"))
    truth = {r["item"]: r["truth"] for r in _rows(path / "truth.csv")}
    return DataSet(path.name, path, "pairwise", list(meta["args"]), rows, truth, [])  # type: ignore[arg-type]


def _along(ds: DataSet, row: tuple[str, ...]) -> bool | None:
    """Whether a comparison goes along the truth (None: equal truths, or a tie)."""
    _, left, right, pref = row
    a, b = float(ds.truth[left]), float(ds.truth[right])
    if a == b or pref not in ("left", "right"):
        return None
    return (pref == "left") == (a > b)


def quality_of(ds: DataSet) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
    """True quality per worker (labels: right; pairs: along the truth), their judgments, and
    the judgments that quality is measured on (labels: those of items with a truth; pairs: the
    comparisons of two items of unequal truth)."""
    if ds.kind != "pairwise":
        quality, n = worker_quality(ds)
        return quality, n, dict(Counter(w for w, i, _ in ds.judgments if i in ds.truth))
    hits: dict[str, list[bool]] = defaultdict(list)
    for row in ds.judgments:
        along = _along(ds, row)  # type: ignore[arg-type]
        if along is not None:
            hits[row[0]].append(along)
    n = Counter(r[0] for r in ds.judgments)
    return (
        {w: float(np.mean(h)) for w, h in hits.items()},
        dict(n),
        {w: len(h) for w, h in hits.items()},
    )


def _pair_right(ds: DataSet, score: dict[str, float], a: str, b: str) -> float:
    """1 if the scores order the pair as the truth does, 0 if the other way, 1/2 if they cannot
    order it (an item unranked, or equal scores)."""
    if a not in score or b not in score or score[a] == score[b]:
        return 0.5
    return float((score[a] > score[b]) == (float(ds.truth[a]) > float(ds.truth[b])))


def _accuracy(ds: DataSet, labels: Path) -> float:
    """Labels: the share of items exported right (an item without an answer is wrong). Pairs:
    the export is the ranking (``monitor export labels``: each item's score under the
    preference model); its accuracy is the share of the set's distinct judged pairs of unequal
    truth (all of the full set's, whether or not they arrived: the same pairs live and
    nightly) that its scores order as the truth does, a pair it cannot order (an item
    unranked, equal scores) counting one half."""
    if ds.kind == "pairwise":
        score = {r["item"]: float(r["score"]) for r in _rows(labels) if r["score"]}
        pairs = {tuple(sorted((r[1], r[2]))) for r in ds.judgments}
        unequal = [(a, b) for a, b in pairs if float(ds.truth[a]) != float(ds.truth[b])]
        return float(np.mean([_pair_right(ds, score, a, b) for a, b in sorted(unequal)]))
    got = {r["item"]: r["value"] for r in _rows(labels)}
    return float(np.mean([got.get(i) == t for i, t in ds.truth.items()]))


def _export(common: tuple[str, ...], ds: DataSet, tmp: Path) -> float:
    out = tmp / "labels.csv"
    _cli(*common, "export", "labels", "--campaign", ds.name, "--out", str(out))
    return _accuracy(ds, out)


def _decided(common: tuple[str, ...], name: str) -> dict[str, tuple[str, str]]:
    """Each worker's decision and its reason (``monitor workers --json``)."""
    text = _cli(*common, "workers", "--campaign", name, "--json")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {str(r["worker"]): (str(r["decision"]), str(r["decision_reason"])) for r in rows}


def _decisions(common: tuple[str, ...], name: str) -> dict[str, str]:
    return {w: d for w, (d, _) in _decided(common, name).items()}


def _stop_after(url: str, name: str) -> dict[str, int]:
    """The ``stop_after`` of the campaign's latest run, by worker."""
    engine = make_engine(url)
    try:
        with transaction(engine) as s:
            run = latest_run(s, get_campaign(s, name).id)
            values = [] if run is None else run_values(s, run.id, "worker", ["stop_after"])
    finally:
        engine.dispose()
    return {v.subject: int(v.value) for v in values if v.value is not None}


def nightly(ds: DataSet, tmp: Path) -> tuple[float, dict[str, str]]:
    """Every judgment at once: the export's accuracy and the decisions."""
    common = ("--db", f"sqlite:///{tmp}/nightly.db")
    _cli(*common, "campaign", "create", ds.name, *ds.args)
    path = tmp / "all.csv"
    _write(path, ds.judgments)
    _cli(*common, "ingest", str(path), "--campaign", ds.name)
    _cli(*common, "recompute", "--campaign", ds.name)
    return _export(common, ds, tmp), _decisions(common, ds.name)


def _need(common: tuple[str, ...], name: str, tmp: Path) -> dict[str, int]:
    path = tmp / "overlap.csv"
    _cli(*common, "export", "overlap", "--campaign", name, "--out", str(path))
    return {r["item"]: int(r["need"]) for r in _rows(path)}


def _live_batches(
    common: tuple[str, ...],
    url: str,
    name: str,
    rows: list[tuple[str, ...]],
    size: int,
    stopped_at: dict[str, int],
    arrived: Counter[str],
    tmp: Path,
) -> list[tuple[str, ...]]:
    """A chunk arriving ``size`` judgments at a time, the live path after each (as a pull or a
    webhook calls it): a worker it stops gets none of the chunk's later judgments. The rows
    that arrived."""
    engine = make_engine(url)
    came: list[tuple[str, ...]] = []
    try:
        for k in range(0, len(rows), size):
            batch = [j for j in rows[k : k + size] if j[0] not in stopped_at]
            if not batch:
                continue
            path = tmp / "batch.csv"
            _write(path, batch)
            _cli(*common, "ingest", str(path), "--campaign", name)
            arrived.update(j[0] for j in batch)
            came += batch
            if update_live(engine, name).stopped:
                with transaction(engine) as s:
                    decided = worker_decisions(s, get_campaign(s, name))
                for w, d in decided.items():
                    if d.get("decision") in STOPPED and w not in stopped_at:
                        stopped_at[w] = arrived[w]
    finally:
        engine.dispose()
    return came


def replay(
    ds: DataSet, tmp: Path, order: str, chunk: int, seed: int, overlap: bool, live: int = 0
) -> dict:
    """The live replay: arrivals in ``order``, a stopped worker's later judgments dropped (and
    with ``overlap``, those of an item that needs no more); with ``live``, the live path runs
    after every ``live`` judgments between the runs."""
    arrivals = arrival_order(ds, order, seed)
    url = f"sqlite:///{tmp}/live.db"
    common = ("--db", url)
    _cli(*common, "campaign", "create", ds.name, *ds.args)
    if overlap:  # the platform's planned overlap is the most any item had
        most = max(Counter(j[1] for j in ds.judgments).values())
        _cli(*common, "campaign", "set", ds.name, f"max_overlap={most}")
    if SETTINGS:
        _cli(*common, "campaign", "set", ds.name, *SETTINGS)
    stopped_at: dict[str, int] = {}
    test_after: dict[str, int | None] = {}  # None: the test had not stopped them (a block)
    stop_cycle: dict[str, int] = {}  # the cycle (1 = the first recompute) that read the stop
    stop_decision: dict[str, str] = {}  # stop or block (the live path's: stop)
    stop_reason: dict[str, str] = {}
    closed: set[str] = set()
    arrived: Counter[str] = Counter()
    bought, cycles, seconds = 0, 0, 0.0
    for start in range(0, len(arrivals), chunk):
        rows = [
            j
            for j in arrivals[start : start + chunk]
            if j[0] not in stopped_at and j[1] not in closed
        ]
        if not rows:
            continue
        t0 = time.perf_counter()
        if live:  # the live path between runs: a stop acts on the judgments still to come
            rows = _live_batches(common, url, ds.name, rows, live, stopped_at, arrived, tmp)
        else:
            path = tmp / "chunk.csv"
            _write(path, rows)
            _cli(*common, "ingest", str(path), "--campaign", ds.name)
            arrived.update(j[0] for j in rows)
        _cli(*common, "recompute", "--campaign", ds.name)
        decided = _decided(common, ds.name)
        decisions = {w: d for w, (d, _) in decided.items()}
        if overlap:
            closed = {i for i, k in _need(common, ds.name, tmp).items() if k == 0}
        seconds += time.perf_counter() - t0
        cycles += 1
        bought += len(rows)
        fresh = [w for w, d in decisions.items() if d in STOPPED and w not in stopped_at]
        for w in fresh:
            stopped_at[w] = arrived[w]
            stop_cycle[w] = cycles
            stop_decision[w] = decisions[w]
            stop_reason[w] = decided[w][1]
        untold = [w for w in stopped_at if w not in test_after]
        after = _stop_after(url, ds.name) if untold else {}
        for w in untold:
            test_after[w] = after.get(w)
    return {"stopped_at": stopped_at, "test_after": test_after, "stop_cycle": stop_cycle,
            "stop_decision": stop_decision, "stop_reason": stop_reason,
            "arrived": dict(arrived),
            "bought": bought,
            "export": _export(common, ds, tmp), "seconds_per_cycle": seconds / max(cycles, 1),
            "cycles": cycles}  # fmt: skip


def _correct(ds: DataSet, row: tuple[str, ...]) -> bool | None:
    """Whether a judgment is right by the truth (None: a pair of equal truths, or a tie)."""
    if ds.kind == "pairwise":
        return _along(ds, row)
    truth = ds.truth.get(row[1])
    return None if truth is None else row[2] == truth


def oracle(
    ds: DataSet, arrivals: list, workers: set[str], quality: dict[str, float], line: float
) -> dict[str, int]:
    """The fewest of each worker's judgments (in the order they arrive) after which a test that
    knew the truth of every answer would stop them at ``stop_alpha``: Wald's sequential ratio of
    "right with probability ``quality[w]``" (the worker's true accuracy, known to the oracle)
    against "right with probability ``line``", stopped when it first reaches ``1 / alpha``.
    Any test that stops a worker at the line at most ``alpha`` of the time, and this worker
    surely, needs on average at least ``log(1 / alpha)`` over the Kullback-Leibler divergence
    of their accuracy from the line (Wald's identity); this one needs that plus its overshoot.
    Workers the oracle would not stop are left out."""
    alpha = Settings().stop_alpha
    bound, out = math.log(1.0 / alpha), {}
    llr: dict[str, float] = defaultdict(float)
    seen: Counter[str] = Counter()
    for row in arrivals:
        w = row[0]
        if w not in workers or w in out or not 0.0 < quality[w] < line:
            continue
        seen[w] += 1
        right = _correct(ds, row)
        if right is None:
            continue
        q = quality[w]
        llr[w] += math.log(q / line) if right else math.log((1 - q) / (1 - line))
        if llr[w] >= bound:
            out[w] = seen[w]
    return out


def arrival_order(ds: DataSet, order: str, seed: int) -> list:
    """The judgments in the order the replay sends them (before any is held back)."""
    rng = random.Random(seed)
    arrivals = list(ds.judgments)
    if order == "bursts":
        by_worker: dict[str, list] = defaultdict(list)
        for j in arrivals:
            by_worker[j[0]].append(j)
        workers = sorted(by_worker)
        rng.shuffle(workers)
        return [j for w in workers for j in by_worker[w]]
    rng.shuffle(arrivals)
    return arrivals


def figures(
    ds: DataSet, order: str, chunk: int, seed: int, overlap: bool, live_every: int = 0
) -> dict:
    quality, n, measured = quality_of(ds)
    # the planted annotator is no worker of the set: reported on its own
    judged = {w for w in quality if measured.get(w, 0) >= MIN_N and w != PLANTED}
    k = 2 if ds.kind == "pairwise" else len(set(ds.truth.values()))
    chance = 1.0 / max(k, 2)
    near = {w for w in judged if quality[w] <= chance + 0.2 * (1 - chance)}
    median = float(np.median([quality[w] for w in judged]))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        night, night_decisions = nightly(ds, tmp)
        t1 = time.perf_counter()
        live = replay(ds, tmp, order, chunk, seed, overlap, live_every)
    t2 = time.perf_counter()
    stopped = live["stopped_at"]
    to_stop = [stopped[w] for w in near if w in stopped]
    by_test = [t for w in near if w in stopped and (t := live["test_after"][w]) is not None]
    share = sum(live["arrived"].get(w, 0) for w in near) / max(sum(n[w] for w in near), 1)
    false = sorted(w for w in stopped if w in judged and quality[w] >= median)
    # the oracle's line: the campaign's line drawn from the crowd's true median
    settings = Settings()
    line = stop_line(median, k, share=settings.stop_share, margin=settings.stop_margin)
    best = oracle(ds, arrival_order(ds, order, seed), near, quality, line)
    best_share = sum(best.get(w, n[w]) for w in near) / max(sum(n[w] for w in near), 1)
    return {
        "set": ds.name, "order": order + (" +overlap" if overlap else "")
        + (f" +live/{live_every}" if live_every else ""),
        "near_chance": len(near),
        "near_chance_judgments": sum(n[w] for w in near),
        "near_stopped": len(to_stop),
        "to_stop_median": float(np.median(to_stop)) if to_stop else None,
        "to_stop_p90": float(np.percentile(to_stop, 90)) if to_stop else None,
        "test_after_median": float(np.median(by_test)) if by_test else None,
        "near_share_arrived": share,
        "oracle_line": line, "oracle_stopped": len(best),
        "oracle_to_stop_median": float(np.median(list(best.values()))) if best else None,
        "oracle_share_arrived": best_share,
        "stopped": len(stopped), "false_stops": len(false),
        "blocked": sum(live["stop_decision"].get(w) == "block" for w in stopped),
        "false_stop_workers": false, "crowd_median": median,
        "stopped_unmeasured": sum(w not in judged and w != PLANTED for w in stopped),
        "stopped_workers": {
            w: {"true_accuracy": quality.get(w), "measured_on": measured.get(w, 0),
                "judgments": n.get(w, 0), "after": a, "test": live["test_after"].get(w),
                "cycle": live["stop_cycle"].get(w),
                "decision": live["stop_decision"].get(w, "stop"),
                "reason": live["stop_reason"].get(w, "the live path")}
            for w, a in sorted(stopped.items())
        },
        "bought": live["bought"], "full": len(ds.judgments),
        "export_live": live["export"], "export_nightly": night,
        "nightly_stopped": sum(d in STOPPED for d in night_decisions.values()),
        "seconds_per_cycle": live["seconds_per_cycle"], "cycles": live["cycles"],
        "chunk": chunk, "seconds_nightly": t1 - t0, "seconds_replay": t2 - t1,
        "planted_after": live["stopped_at"].get(PLANTED), "planted_test": live["test_after"].get(PLANTED),
        "planted_decision": live["stop_decision"].get(PLANTED),
    }  # fmt: skip


def _fmt(x: float | None, spec: str = ".0f") -> str:
    return "-" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real-data", type=Path, default=ROOT / "real-data")
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--order", choices=("random", "bursts"), default="random")
    parser.add_argument("--chunk", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overlap", action="store_true", help="apply dynamic overlap too")
    parser.add_argument(
        "--live",
        type=int,
        default=0,
        metavar="K",
        help="label sets: the live path after every K judgments between the runs (0: none)",
    )
    parser.add_argument("--real-preferences", type=Path, default=ROOT / "real-preferences")
    parser.add_argument(
        "--plant",
        type=int,
        default=60,
        metavar="N",
        help="preference sets: an annotator picking the left item 90%% of the "
        "time on N pairs (0: none)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the live campaign (monitor campaign set)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    scrub_environment()
    SETTINGS[:] = args.set
    out = []
    sets = [load_dataset(p) for p in find_datasets(args.real_data)]
    sets += [load_pairs(p, args.plant, args.seed) for p in find_datasets(args.real_preferences)]
    for ds in sets:
        if ds.kind not in ("label", "pairwise") or (args.only and ds.name not in args.only):
            continue
        live = args.live if ds.kind == "label" else 0
        r = figures(ds, args.order, args.chunk, args.seed, args.overlap and ds.kind == "label",
                    live)  # fmt: skip
        out.append(r)
        print(
            f"{r['set']:8s} {r['order']}: {r['near_chance']} near-chance workers "
            f"({r['near_chance_judgments']} judgments), {r['near_stopped']} stopped after "
            f"{_fmt(r['to_stop_median'])} (median) / {_fmt(r['to_stop_p90'])} (p90) of theirs "
            f"(the test: {_fmt(r['test_after_median'])}); "
            f"{r['near_share_arrived']:.0%} of their judgments arrived (an oracle on the truth, "
            f"line {r['oracle_line']:.2f}: {r['oracle_stopped']} stopped after "
            f"{_fmt(r['oracle_to_stop_median'])}, {r['oracle_share_arrived']:.0%} arrived) | "
            f"{r['stopped']} stopped "
            f"({r['blocked']} of them blocked), "
            f"{r['false_stops']} at or above the median ({r['crowd_median']:.3f}), "
            f"{r['stopped_unmeasured']} without 10 judgments the truth measures | bought "
            f"{r['bought']}/{r['full']} | export {r['export_live']:.3f} live, "
            f"{r['export_nightly']:.3f} nightly | chunks of {r['chunk']}: {r['cycles']} cycles, "
            f"{r['seconds_per_cycle']:.1f} s a cycle, {r['seconds_replay']:.0f} s the replay "
            f"({r['seconds_nightly']:.0f} s the nightly)"
            + (
                f" | planted left-clicker stopped after {_fmt(r['planted_after'])} "
                f"({r['planted_decision'] or '-'}; the test: {_fmt(r['planted_test'])})"
                if ds.kind == "pairwise" and args.plant
                else ""
            ),
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
