"""``monitor demo``: synthetic campaigns with planted problems, and the whole loop on them.

Four campaigns (ratings, labels, multi-label, pairwise), each with good workers, spammers
(random answers, fast), careless workers (half random), an adversarial worker (systematically
wrong) and ambiguous items (where even good workers split). Everything comes from one seeded
``numpy.random.Generator``, so a seed gives the same files, the same ids, and re-running the
demo on the same database is a no-op ingest.
"""

from __future__ import annotations

import contextlib
import csv
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine

from monitor.core.catalog import Kind
from monitor.core.settings import Settings
from monitor.store.campaigns import CampaignSpec

TOPICS = ("battery life", "customer service", "delivery", "screen", "price", "sound quality")
MOODS = ("loved", "hated", "did not mind", "was surprised by", "complained about", "praised")
LABELS = ("positive", "negative", "neutral")
OPTIONS = ("cat", "dog", "bird", "car")


@dataclass(frozen=True)
class Planted:
    """What the generator hid in a campaign: the report should find it."""

    spammers: tuple[str, ...]
    careless: tuple[str, ...]
    adversarial: tuple[str, ...]
    ambiguous: tuple[str, ...]


@dataclass(frozen=True)
class DemoCampaign:
    name: str
    spec: CampaignSpec
    judgments: Path
    items: Path
    planted: Planted
    n_rows: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Crowd:
    workers: tuple[str, ...]
    kind: dict[str, str]  # worker -> good | spammer | careless | adversarial | biased


def _crowd(rng: np.random.Generator, prefix: str, n: int) -> Crowd:
    workers = tuple(f"{prefix}{k:02d}" for k in range(1, n + 1))
    kinds = ["spammer"] * 2 + ["careless"] * 2 + ["adversarial"] + ["good"] * (n - 5)
    rng.shuffle(kinds)
    return Crowd(workers, dict(zip(workers, kinds, strict=True)))


def _planted(crowd: Crowd, ambiguous: list[str]) -> Planted:
    def of(kind: str) -> tuple[str, ...]:
        return tuple(w for w in crowd.workers if crowd.kind[w] == kind)

    return Planted(of("spammer"), of("careless"), of("adversarial"), tuple(ambiguous))


def _text(rng: np.random.Generator, k: int) -> str:
    return (
        f"Review {k}: the customer {MOODS[rng.integers(len(MOODS))]} the "
        f"{TOPICS[rng.integers(len(TOPICS))]}."
    )


def _assignments(rng: np.random.Generator, n_workers: int, n_items: int, per_item: int):
    """For each item, ``per_item`` distinct workers, balanced so that everyone works."""
    load = np.zeros(n_workers)
    for i in range(n_items):
        noise = rng.random(n_workers)
        chosen = np.argsort(load + noise)[:per_item]
        load[chosen] += 1
        yield i, chosen


def _duration(rng: np.random.Generator, kind: str) -> float:
    base = 3.0 if kind == "spammer" else 22.0
    return round(float(rng.lognormal(np.log(base), 0.35)), 1)


def _write(path: Path, header: tuple[str, ...], rows: list[tuple]) -> int:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return len(rows)


def _absolute(
    rng: np.random.Generator,
    out_dir: Path,
    name: str,
    kind: str,
    n_workers: int,
    n_items: int,
    per_item: int,
) -> DemoCampaign:
    crowd = _crowd(rng, "W" + kind[0].upper(), n_workers)
    items = [f"{kind[:3]}-{k:04d}" for k in range(1, n_items + 1)]
    ambiguous = set(rng.choice(n_items, size=max(1, n_items // 10), replace=False).tolist())
    start = datetime(2025, 11, 3, 9, 0, tzinfo=UTC)
    rows: list[tuple] = []
    item_rows: list[tuple] = []
    truth: list[Any] = []
    for i in range(n_items):
        if kind == "rating":
            truth.append(int(rng.integers(1, 6)))
        elif kind == "label":
            truth.append(LABELS[int(rng.choice(3, p=[0.45, 0.35, 0.2]))])
        else:
            held = {o for o in OPTIONS if rng.random() < 0.35} or {OPTIONS[rng.integers(4)]}
            truth.append(held)
        gold = ""
        if i % 10 == 0 and i not in ambiguous:
            gold = "|".join(sorted(truth[i])) if kind == "multilabel" else str(truth[i])
        item_rows.append((items[i], gold, _text(rng, i + 1)))

    def answer(worker: str, i: int) -> str:
        wk = crowd.kind[worker]
        if wk == "careless" and rng.random() < 0.5:
            wk = "spammer"
        t = truth[i]
        amb = i in ambiguous
        if kind == "rating":
            if wk == "spammer":
                v = int(rng.integers(1, 6))
            elif wk == "adversarial":
                v = 6 - t
            else:
                v = int(np.clip(round(t + rng.normal(0, 1.6 if amb else 0.45)), 1, 5))
            return str(v)
        if kind == "label":
            if wk == "spammer":
                return LABELS[rng.integers(3)]
            if wk == "adversarial":
                return LABELS[(LABELS.index(t) + 1) % 3]
            if amb:
                return [t, LABELS[(LABELS.index(t) + 2) % 3]][rng.integers(2)]
            return t if rng.random() < 0.9 else LABELS[rng.integers(3)]
        if wk == "spammer":
            chosen = {o for o in OPTIONS if rng.random() < 0.5}
        elif wk == "adversarial":
            chosen = set(OPTIONS) - t
        else:
            flip = 0.35 if amb else 0.06
            chosen = {o for o in OPTIONS if (o in t) != (rng.random() < flip)}
        return "|".join(sorted(chosen or {OPTIONS[rng.integers(4)]}))

    k = 0
    for i, chosen in _assignments(rng, n_workers, n_items, per_item):
        for wi in chosen:
            w = crowd.workers[wi]
            k += 1
            when = start + timedelta(seconds=37 * k)
            rows.append(
                (
                    w,
                    items[i],
                    answer(w, i),
                    f"{name}-{k}",
                    when.isoformat(),
                    _duration(rng, crowd.kind[w]),
                )
            )
    jpath, ipath = out_dir / f"{name}.csv", out_dir / f"{name}-items.csv"
    _write(jpath, ("worker", "item", "value", "judgment_id", "created_at", "duration_s"), rows)
    _write(ipath, ("item", "gold", "text"), item_rows)
    if kind == "rating":
        spec = CampaignSpec(name, Kind.RATING, scale_min=1, scale_max=5)
    elif kind == "label":
        spec = CampaignSpec(name, Kind.LABEL, categories=LABELS)
    else:
        spec = CampaignSpec(name, Kind.MULTILABEL, categories=OPTIONS)
    planted = _planted(crowd, [items[i] for i in sorted(ambiguous)])
    return DemoCampaign(name, spec, jpath, ipath, planted, len(rows))


def _pairwise(
    rng: np.random.Generator, out_dir: Path, name: str, n_workers: int, n_things: int
) -> DemoCampaign:
    """Each annotator compares every pair of 10 things drawn from ``n_things``."""
    crowd = _crowd(rng, "WP", n_workers)
    # one annotator with a position bias instead of a second careless one
    biased = next(w for w in crowd.workers if crowd.kind[w] == "careless")
    crowd.kind[biased] = "biased"
    things = [f"photo-{k:03d}" for k in range(1, n_things + 1)]
    strength = rng.normal(0, 1.2, n_things)
    start = datetime(2025, 11, 3, 9, 0, tzinfo=UTC)
    rows: list[tuple] = []
    k = 0
    for w in crowd.workers:
        subset = rng.choice(n_things, size=min(10, n_things), replace=False)
        for a_pos in range(len(subset)):
            for b_pos in range(a_pos + 1, len(subset)):
                a, b = (subset[a_pos], subset[b_pos])
                if rng.random() < 0.5:
                    a, b = b, a
                d = strength[a] - strength[b]
                wk = crowd.kind[w]
                if wk == "careless" and rng.random() < 0.5:
                    wk = "spammer"
                if wk == "spammer":
                    pref = ("left", "right", "tie")[rng.integers(3)]
                elif wk == "biased":
                    pref = "left" if rng.random() < 0.9 else "right"
                else:
                    p_left = 1 / (1 + np.exp(-3 * d))
                    pref = "tie" if abs(d) < 0.15 else "left" if rng.random() < p_left else "right"
                    if wk == "adversarial" and pref != "tie":
                        pref = "right" if pref == "left" else "left"
                k += 1
                when = start + timedelta(seconds=29 * k)
                rows.append(
                    (
                        w,
                        things[a],
                        things[b],
                        pref,
                        f"{name}-{k}",
                        when.isoformat(),
                        _duration(rng, wk),
                    )
                )
    jpath, ipath = out_dir / f"{name}.csv", out_dir / f"{name}-items.csv"
    _write(
        jpath,
        ("worker", "left", "right", "preference", "judgment_id", "created_at", "duration_s"),
        rows,
    )
    _write(ipath, ("item", "text"), [(t, f"Photo {t[-3:]} of the shortlist") for t in things])
    planted = _planted(crowd, [])
    return DemoCampaign(
        name,
        CampaignSpec(name, Kind.PAIRWISE),
        jpath,
        ipath,
        planted,
        len(rows),
        {"biased": biased},
    )


def generate(
    out_dir: Path,
    *,
    seed: int = 0,
    n_workers: int = 20,
    n_items: int = 200,
    per_item: int = 5,
    prefix: str = "demo",
) -> list[DemoCampaign]:
    """Write the four demo campaigns as canonical CSV files (judgments + items) into ``out_dir``."""
    if n_workers < 8:
        raise ValueError(f"The demo needs at least 8 workers, got {n_workers}.")
    rng = np.random.default_rng(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _absolute(rng, out_dir, f"{prefix}-ratings", "rating", n_workers, n_items, per_item),
        _absolute(rng, out_dir, f"{prefix}-labels", "label", n_workers, n_items, per_item),
        _absolute(rng, out_dir, f"{prefix}-multilabel", "multilabel", n_workers, n_items, per_item),
        _pairwise(rng, out_dir, f"{prefix}-pairwise", n_workers, 30),
    ]


def _split(path: Path, share: float) -> tuple[Path, Path]:
    """The judgments file cut in two batches (first ``share`` of rows, then the rest)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = 1 + int((len(lines) - 1) * share)
    first, second = path.with_name(path.stem + "-1.csv"), path.with_name(path.stem + "-2.csv")
    first.write_text("".join(lines[:cut]), encoding="utf-8")
    second.write_text(lines[0] + "".join(lines[cut:]), encoding="utf-8")
    return first, second


def run_demo(
    engine: Engine,
    settings: Settings,
    *,
    data_dir: Path | None = None,
    report_dir: Path | None = None,
    seed: int | None = None,
    n_workers: int = 20,
    n_items: int = 200,
    per_item: int = 5,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Generate, ingest (in two batches, so the report has a trend), recompute, report.

    Returns the report paths. An existing demo campaign is reused: re-ingesting the same
    files is a no-op and the recompute finds nothing new. The CSV files go to ``data_dir``,
    else to a temporary folder removed at the end (the database holds what they held).
    """
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="monitor-demo-"))
            )
            log(
                "demo data written to a temporary folder, removed at the end "
                "(--data-dir DIR keeps the CSV files)"
            )
        else:
            log(f"demo data written to {data_dir}")
        return _run_demo(
            engine,
            settings,
            data_dir,
            report_dir or Path(settings.report_dir),
            settings.seed if seed is None else seed,
            n_workers,
            n_items,
            per_item,
            log,
        )


def _run_demo(
    engine: Engine,
    settings: Settings,
    data_dir: Path,
    report_dir: Path,
    seed: int,
    n_workers: int,
    n_items: int,
    per_item: int,
    log: Callable[[str], None],
) -> list[Path]:
    from monitor.core.errors import UsageError
    from monitor.ingest.api import create_campaign, ingest_file, ingest_items
    from monitor.pipeline import recompute
    from monitor.report.render import report_filename, write_report

    campaigns = generate(
        data_dir, seed=seed, n_workers=n_workers, n_items=n_items, per_item=per_item
    )
    paths = []
    for c in campaigns:
        try:
            create_campaign(engine, c.spec)
        except UsageError:
            log(f"{c.name}: campaign exists, reusing it")
        ingest_items(engine, c.items, c.name)
        for batch in _split(c.judgments, 0.6):
            summary = ingest_file(engine, batch, c.name)
            outcome = recompute(engine, settings, campaign=c.name)
            for o in outcome:
                log(f"{o.line()} ({summary.n_new} judgments ingested from {batch.name})")
        path = write_report(
            engine, c.name, report_dir / report_filename(c.name), "html", follow=False
        )
        paths.append(path)
    return paths


__all__ = ["DemoCampaign", "Planted", "generate", "run_demo"]
