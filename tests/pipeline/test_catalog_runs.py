"""Every value a run stores is declared in the catalog for the campaign's kind, and every
flag names a catalog rule of its scope for that kind."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from monitor.core import catalog
from monitor.core.settings import Settings
from monitor.pipeline.measure import measure
from monitor.pipeline.params import Coded, Params
from monitor.rules import Thresholds, evaluate
from monitor.store.arrays import load_arrays
from monitor.store.campaigns import get_campaign
from monitor.store.engine import transaction
from tests.golden import load as load_case
from tests.golden import params
from tests.pipeline.cases import store_case

SETTINGS = Settings(bootstrap_samples=20, phi="map")
LOOSE = Thresholds.of(
    SETTINGS.replace(ambiguous_p=0.9, ambiguous_posterior=0.9999,
                     min_item_judgments=1, min_judgments=1, min_triplets=1)
)  # fmt: skip


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("path", params("*.json"))
def test_what_a_run_stores_is_in_the_catalog(engine: Engine, path) -> None:  # noqa: ANN001
    store_case(engine, load_case(path))
    with transaction(engine) as s:
        info = get_campaign(s, "golden")
        arrays = load_arrays(s, info)
    out = measure(Coded(info, arrays), Params.of(SETTINGS, info.kind))
    stored = {(v.scope, v.metric) for v in out.values} | {(c.scope, c.metric) for c in out.columns}
    declared = {(m.scope.value, m.name) for m in catalog.measures(kind=info.kind)}
    assert stored - declared == set()
    flags = evaluate(out.values, LOOSE, kind=info.kind, columns=out.columns)
    rules = {(r.scope.value, r.name) for r in catalog.rules(kind=info.kind)}
    assert {(f.scope, f.rule) for f in flags} - rules == set()
