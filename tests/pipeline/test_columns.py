"""Per-item values stored as columns: the same numbers, details and flags as single values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine

from monitor.core.results import Column, Value
from monitor.core.settings import Settings
from monitor.pipeline.measure import measure
from monitor.pipeline.params import Coded, Params
from monitor.rules import Thresholds, evaluate
from monitor.store.arrays import load_arrays
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from tests.golden import GOLDEN, load
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=20, phi="map", min_item_judgments=2)


def _key(v: Value) -> tuple[str, str, str]:
    return (v.scope, v.subject, v.metric)


@pytest.mark.parametrize(
    "name",
    ["rating_small_complete", "label_small_complete_5_adversarial", "ct_closed_small"],
)
def test_columns_expand_to_the_single_values(engine: Engine, name: str) -> None:
    case = load(GOLDEN / "cases" / f"{name}.json")
    store_case(engine, case)
    with transaction(engine) as s:
        info = get_campaign(s, "golden")
        arrays = load_arrays(s, info)
    out = measure(Coded(info, arrays), Params.of(SETTINGS, info.kind))
    values, columns = out.values, out.columns
    flat = measure(Coded(info, arrays), Params.of(SETTINGS, info.kind, columnar=frozenset()))
    single, none = flat.values, flat.columns
    assert none == []
    assert {c.scope for c in columns} == {"item"}
    expanded = values + [v for c in columns for v in c.expand()]
    assert sorted(expanded, key=_key) == sorted(single, key=_key)
    assert any(v.detail and "answers" in v.detail for v in expanded)
    # Loose levels, so that the item rules fire on these small cases and are compared.
    loose = Thresholds.of(SETTINGS.replace(ambiguous_p=0.9, ambiguous_posterior=0.9999))
    assert evaluate(values, loose, kind=info.kind, columns=columns) == evaluate(
        single, loose, kind=info.kind
    )
    assert any(f.rule == "ambiguous" for f in evaluate(single, loose, kind=info.kind))


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)


@given(
    subjects=st.lists(names, min_size=0, max_size=20, unique=True),
    data=st.data(),
)
def test_column_bytes_round_trip(subjects: list[str], data: st.DataObject) -> None:
    k = len(subjects)
    floats = st.floats(allow_nan=True, allow_infinity=False, width=64)
    values = np.array(data.draw(st.lists(floats, min_size=k, max_size=k)), dtype=np.float64)
    per_row = data.draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    indptr = np.r_[0, np.cumsum(per_row)].astype(np.int64)
    indices = np.concatenate([np.arange(c) for c in per_row] or [np.empty(0)]).astype(np.int64)
    column = Column(
        "item",
        "n_judgments",
        subjects,
        values,
        n=np.arange(k, dtype=np.int64),
        detail_key="answers",
        names=("a", "b", "c"),
        indptr=indptr,
        indices=indices,
        data=np.ones(indices.size),
        integral=True,
    )
    back = Column.from_bytes("item", "n_judgments", subjects, column.meta(), column.to_bytes())
    assert list(back.expand()) == list(column.expand())
    assert [back.row_detail(i) for i in range(k)] == column.details()


def test_take_selects_rows_with_their_details() -> None:
    column = Column(
        "item",
        "n_judgments",
        ["a", "b", "c"],
        np.array([2.0, 0.0, 3.0]),
        n=np.array([2, 0, 3]),
        detail_key="answers",
        names=("x", "y"),
        indptr=np.array([0, 2, 2, 3]),
        indices=np.array([0, 1, 1]),
        data=np.array([1.0, 1.0, 3.0]),
        integral=True,
    )
    picked = column.take(np.array([2, 0, 1]))
    assert picked.subjects == ["c", "a", "b"]
    assert picked.details() == [
        {"answers": {"y": 3}},
        {"answers": {"x": 1, "y": 1}},
        {"answers": {}},
    ]
    assert list(picked.expand()) == [list(column.expand())[i] for i in (2, 0, 1)]
