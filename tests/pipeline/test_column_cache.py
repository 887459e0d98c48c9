"""The last run's resolved columns kept in a file: a cold process takes its base's columns from
it (exactly what the store gives), ignores a file that is stale, damaged or made for anything
else, never finds one claiming a run that failed, and computes the same results as without it."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import Engine, update

from monitor.core.results import Column
from monitor.core.settings import Settings
from monitor.incremental import cache as cache_module
from monitor.incremental.columns import ColumnSnapshot
from monitor.pipeline import recompute
from monitor.pipeline import run as run_module
from monitor.store.campaigns import get_campaign
from monitor.store.engine import make_engine, transaction
from monitor.store.migrate import upgrade
from monitor.store.models import MetricRun
from monitor.store.runs import RunInfo, latest_run, run_columns, run_flags, run_values
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=0, phi="map", value_tolerance=0.01)
CASE = "rating_medium.json"


def _snapshot(engine: Engine, cache: Path) -> tuple[ColumnSnapshot, RunInfo]:
    with transaction(engine) as s:
        info = get_campaign(s, "golden")
        last = latest_run(s, info.id)
        assert last is not None
        return ColumnSnapshot(cache, s, info), last


def _store_columns(engine: Engine, run_id: int) -> dict[tuple[str, str], Column]:
    with transaction(engine) as s:
        return {(c.scope, c.metric): c for c in run_columns(s, run_id)}


def assert_same_columns(
    got: dict[tuple[str, str], Column], want: dict[tuple[str, str], Column]
) -> None:
    assert list(got) == list(want)
    for key, a in got.items():
        b = want[key]
        assert a.subjects == b.subjects, key
        assert (a.detail_key, a.names, a.integral) == (b.detail_key, b.names, b.integral), key
        for f in ("values", "low", "high", "n", "indptr", "indices", "data"):
            x, y = getattr(a, f), getattr(b, f)
            assert (x is None) == (y is None), (key, f)
            if x is not None:
                assert x.dtype == y.dtype, (key, f)
                np.testing.assert_array_equal(x, y, err_msg=f"{key}.{f}")


def _increments(
    engine: Engine, case: dict, settings: Settings, cuts: list[float], start: float = 0.0
) -> list[int]:
    """Store ``case`` from ``start`` up to each cut (shares of its judgments) and recompute in
    a "new process" (a new run cache, which ``recompute`` makes by default) each time."""
    n = len(case["judgments"])
    ids, lo = [], int(n * start)
    for f in cuts:
        hi = int(n * f)
        store_case(engine, case, upto=hi, start=lo)
        lo = hi
        [o] = recompute(engine, settings)
        assert o.status == "ok", o.message
        ids.append(o.run_id)
    return ids


def test_a_cold_run_takes_its_base_from_the_file(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = load(GOLDEN / "cases" / CASE)
    settings = SETTINGS.replace(cache_dir=str(tmp_path))
    runs = _increments(engine, case, settings, [0.9, 0.93])
    snap, last = _snapshot(engine, tmp_path)
    assert last.id == runs[-1]
    assert snap.path is not None
    assert snap.path.is_file()
    assert_same_columns(snap.read(last), _store_columns(engine, last.id))

    def no_store(*args: object, **kwargs: object) -> list[Column]:
        raise AssertionError("the base's columns were read from the store")

    monkeypatch.setattr(cache_module, "run_columns", no_store)
    [o] = _increments(engine, case, settings, [0.96], start=0.93)
    monkeypatch.undo()
    with transaction(engine) as s:
        assert s.get_one(MetricRun, o).base_run_id == last.id
    snap, last = _snapshot(engine, tmp_path)
    assert last.id == o
    assert_same_columns(snap.read(last), _store_columns(engine, o))


def _results(engine: Engine, run_ids: list[int]) -> list[tuple]:
    out = []
    with transaction(engine) as s:
        for r in run_ids:
            values = sorted(run_values(s, r), key=lambda v: (v.scope, v.subject, v.metric))
            flags = sorted(run_flags(s, r), key=lambda f: (f.scope, f.subject, f.rule))
            out.append((values, flags, s.get_one(MetricRun, r).base_run_id))
    return out


def test_a_chain_of_cold_runs_gives_what_it_gives_without_the_file(
    engine: Engine, tmp_path: Path
) -> None:
    from tests.conftest import _truncate

    case = load(GOLDEN / "cases" / CASE)
    cuts = [0.85, 0.9, 0.93, 0.96, 1.0]
    with_file = SETTINGS.replace(cache_dir=str(tmp_path / "cache"))
    runs = _increments(engine, case, with_file, cuts)
    got = _results(engine, runs)
    assert [b for *_, b in got] == [None, *runs[:-1]]
    _truncate(engine) if engine.dialect.name == "postgresql" else _empty_sqlite(engine)
    runs = _increments(engine, case, SETTINGS.replace(cache_dir=""), cuts)
    assert got == _results(engine, runs)


def _empty_sqlite(engine: Engine) -> None:
    from sqlalchemy import text

    from monitor.store.models import Base

    with engine.begin() as c:
        for t in reversed(Base.metadata.sorted_tables):
            c.execute(text(f'DELETE FROM "{t.name}"'))  # noqa: S608 - table names of the model


@pytest.mark.parametrize("damage", ["garbage", "truncated", "started", "other_run", "campaign"])
def test_a_file_that_does_not_fit_is_ignored(engine: Engine, tmp_path: Path, damage: str) -> None:
    case = load(GOLDEN / "cases" / CASE)
    settings = SETTINGS.replace(cache_dir=str(tmp_path))
    _increments(engine, case, settings, [0.9, 0.93])
    snap, last = _snapshot(engine, tmp_path)
    assert snap.path is not None
    want = _store_columns(engine, last.id)
    if damage == "garbage":
        snap.path.write_bytes(b"PK\x03\x04 not a snapshot")
    elif damage == "truncated":
        snap.path.write_bytes(snap.path.read_bytes()[: snap.path.stat().st_size // 2])
    elif damage == "started":  # a database restored: the same run id, another run
        with transaction(engine) as s:
            s.execute(
                update(MetricRun)
                .where(MetricRun.id == last.id)
                .values(started_at=last.started_at + timedelta(seconds=1))
            )
    elif damage == "other_run":
        assert snap.read(dataclasses.replace(last, n_judgments=last.n_judgments + 1)) is None
        assert snap.read(dataclasses.replace(last, id=last.id + 1)) is None
        snap.write(dataclasses.replace(last, id=last.id + 1), want)
    elif damage == "campaign":
        from monitor.store.models import Campaign

        with transaction(engine) as s:
            row = s.get_one(Campaign, get_campaign(s, "golden").id)
            row.created_at = row.created_at - timedelta(days=1)
    snap, last = _snapshot(engine, tmp_path)
    assert snap.read(last) is None
    # the run reads its base from the store and gives what it gives without any file
    [o] = _increments(engine, case, settings, [0.96], start=0.93)
    snap, last = _snapshot(engine, tmp_path)
    assert last.id == o
    assert_same_columns(snap.read(last), _store_columns(engine, o))


@pytest.mark.parametrize("where", ["policy", "commit"])
def test_a_run_that_failed_leaves_no_file_claiming_it(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    case = load(GOLDEN / "cases" / CASE)
    cache = tmp_path / "cache"
    settings = SETTINGS.replace(cache_dir=str(cache))
    [first] = _increments(engine, case, settings, [0.9])
    snap, last = _snapshot(engine, cache)
    before = snap.path.read_bytes() if snap.path else b""

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    target = "apply_policy" if where == "policy" else "prune_item_values"
    monkeypatch.setattr(run_module, target, boom)
    n = len(case["judgments"])
    store_case(engine, case, upto=int(n * 0.93), start=int(n * 0.9))
    [o] = recompute(engine, settings)
    assert o.status == "failed"
    monkeypatch.undo()
    snap, last = _snapshot(engine, cache)
    assert last.id == first
    assert snap.path is not None
    assert snap.path.read_bytes() == before
    assert sorted(cache.iterdir()) == sorted(cache.glob("*.npz"))  # no temporary file left
    assert_same_columns(snap.read(last), _store_columns(engine, first))


def test_no_file_without_a_cache_dir_or_a_next_delta(engine: Engine, tmp_path: Path) -> None:
    case = load(GOLDEN / "cases" / CASE)
    cache = tmp_path / "cache"
    _increments(engine, case, SETTINGS.replace(cache_dir=""), [0.9])
    assert not cache.exists()
    _increments(engine, case, SETTINGS.replace(cache_dir=str(cache)), [0.93], start=0.9)
    assert len(list(cache.glob("*.columns.npz"))) == 1
    # a negative tolerance: every column stored whole, nothing to keep
    negative = SETTINGS.replace(cache_dir=str(cache), value_tolerance=-1)
    _increments(engine, case, negative, [1.0], start=0.93)
    assert list(cache.glob("*.columns.npz")) == []


def test_a_file_that_cannot_be_written_costs_only_the_shortcut(
    engine: Engine, tmp_path: Path
) -> None:
    case = load(GOLDEN / "cases" / CASE)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    runs = _increments(engine, case, SETTINGS.replace(cache_dir=str(blocked)), [0.9, 0.93])
    assert len(runs) == 2
    assert blocked.read_text() == ""


# --- the file itself: any subjects, shared lists, optional arrays -------------------------

_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)


@st.composite
def _columns(draw: st.DrawFn) -> dict[tuple[str, str], Column]:
    lists = draw(st.lists(st.lists(_text, max_size=6), min_size=1, max_size=3))
    out = {}
    for k in range(draw(st.integers(1, 5))):
        subjects = lists[draw(st.integers(0, len(lists) - 1))]
        n = len(subjects)
        floats = st.lists(st.floats(allow_nan=True), min_size=n, max_size=n)
        arr = lambda xs: np.asarray(xs, dtype=np.float64)  # noqa: E731
        detail = draw(st.booleans())
        indptr = indices = data = None
        names: tuple[str, ...] = ()
        if detail:
            lengths = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
            indptr = np.r_[0, np.cumsum(lengths)].astype(np.int64)
            m = int(indptr[-1])
            names = ("a", "b", "c")
            indices = np.asarray(
                draw(st.lists(st.integers(0, 2), min_size=m, max_size=m)), dtype=np.int64
            )
            data = arr(draw(st.lists(st.floats(), min_size=m, max_size=m)))
        out[("item", f"m{k}")] = Column(
            "item",
            f"m{k}",
            subjects,
            arr(draw(floats)),
            arr(draw(floats)) if draw(st.booleans()) else None,
            None,
            np.arange(n, dtype=np.int64) if draw(st.booleans()) else None,
            "scores" if detail else None,
            names,
            indptr,
            indices,
            data,
            draw(st.booleans()),
        )
    return out


@pytest.fixture(scope="module")
def sqlite_snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[ColumnSnapshot, RunInfo]:
    root = tmp_path_factory.mktemp("colfile")
    engine = make_engine(f"sqlite:///{root / 'm.db'}")
    upgrade(engine)
    case = load(GOLDEN / "cases" / "rating_small_complete.json")
    store_case(engine, case)
    [o] = recompute(engine, SETTINGS.replace(cache_dir=""))
    snap, last = _snapshot(engine, root / "cache")
    engine.dispose()
    assert o.run_id == last.id
    return snap, last


@hsettings(max_examples=60, deadline=None)
@given(columns=_columns())
def test_any_columns_come_back_as_they_went(
    sqlite_snapshot: tuple[ColumnSnapshot, RunInfo], columns: dict[tuple[str, str], Column]
) -> None:
    snap, last = sqlite_snapshot
    snap.write(last, columns)
    got = snap.read(last)
    assert got is not None
    assert_same_columns(got, columns)
    by_subjects = {id(c.subjects) for c in got.values()}
    assert len(by_subjects) == len({tuple(c.subjects) for c in columns.values()})


def test_what_a_killed_save_left_is_removed_by_the_next_run(engine: Engine, tmp_path: Path) -> None:
    """A process killed while writing leaves temporary files (tens of MB); the next run of
    the campaign, which holds its lock, removes them, and nothing of another campaign."""
    case = load(GOLDEN / "cases" / CASE)
    settings = SETTINGS.replace(cache_dir=str(tmp_path))
    _increments(engine, case, settings, [0.9])
    snap, _ = _snapshot(engine, tmp_path)
    assert snap.path is not None
    stem = snap.path.name.split(".", 1)[0]
    left = [tmp_path / f"{stem}.columns.npzq1w2e3.tmp", tmp_path / f"{stem}.npz9x8y7.tmp"]
    other = tmp_path / f"{stem}0.columns.npzzzz.tmp"  # campaign 10 beside campaign 1, say
    for p in (*left, other):
        p.write_bytes(b"half a file")
    _increments(engine, case, settings, [0.93], start=0.9)
    assert not any(p.exists() for p in left)
    assert other.exists()
