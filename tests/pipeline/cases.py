"""Golden cases written straight into a store (bypassing file ingestion), for pipeline tests."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert, select

from monitor.store.campaigns import CampaignSpec, create_campaign
from monitor.store.engine import transaction
from monitor.store.models import Item, Judgment, JudgmentAnnotation, Preference, Worker

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def spec_of(case: dict[str, Any], name: str = "golden") -> CampaignSpec:
    scale = case["scale"]
    kind = case["kind"]
    if kind == "rating":
        return CampaignSpec(
            name, "rating", scale.get("type", "interval"), scale["min"], scale["max"]
        )
    if kind == "label":
        return CampaignSpec(name, "label", categories=tuple(str(c) for c in scale["categories"]))
    if kind == "multilabel":
        if scale.get("closed", True):
            return CampaignSpec(name, "multilabel", categories=tuple(scale["options"]))
        return CampaignSpec(name, "multilabel", open=True)
    return CampaignSpec(name, "pairwise", strict=not scale["ties_allowed"])


def store_case(
    engine: Engine,
    case: dict[str, Any],
    name: str = "golden",
    upto: int | None = None,
    start: int = 0,
) -> str:
    """Store judgments ``start:upto`` of a golden case (creating the campaign if needed)."""
    rows = case["judgments"][start:upto]
    with transaction(engine) as s:
        from monitor.store.models import Campaign

        cid = s.scalar(select(Campaign.id).where(Campaign.name == name))
        if cid is None:
            cid = create_campaign(s, spec_of(case, name)).id
        names = {str(r["worker"]) for r in rows}
        things = {
            str(r[k])
            for r in rows
            for k in (("left", "right") if case["kind"] == "pairwise" else ("item",))
        }
        for model, ids in ((Worker, names), (Item, things)):
            known = set(s.scalars(select(model.external_id).where(model.campaign_id == cid)))
            new = sorted(ids - known)
            if new:
                s.execute(insert(model), [{"campaign_id": cid, "external_id": x} for x in new])
        wid = dict(
            s.execute(select(Worker.external_id, Worker.id).where(Worker.campaign_id == cid)).all()
        )
        iid = dict(
            s.execute(select(Item.external_id, Item.id).where(Item.campaign_id == cid)).all()
        )
        for k, r in enumerate(rows, start=start):
            w = wid[str(r["worker"])]
            if case["kind"] == "pairwise":
                s.add(
                    Preference(
                        campaign_id=cid,
                        worker_id=w,
                        left_item_id=iid[str(r["left"])],
                        right_item_id=iid[str(r["right"])],
                        outcome=r["preference"],
                        dedup_key=f"k{k}",
                        created_at=T0 + timedelta(seconds=r.get("t", k)),
                    )
                )
                continue
            j = Judgment(
                campaign_id=cid, worker_id=w, item_id=iid[str(r["item"])], dedup_key=f"k{k}"
            )
            if case["kind"] == "rating":
                j.value_num = float(r["value"])
            elif case["kind"] == "label":
                j.value_label = str(r["value"])
            s.add(j)
            if case["kind"] == "multilabel":
                s.flush()
                for ann in sorted(set(r["value"])):
                    s.add(
                        JudgmentAnnotation(
                            judgment_id=j.id, annotation=ann, count=r["value"].count(ann)
                        )
                    )
    return name


def incremental_runs(engine: Engine, case: dict[str, Any], settings: Any) -> list[int]:
    """Store 90% of ``case`` and recompute, then three increments up to all of it, each
    recomputed in one process that keeps what it can (a scheduler), except the second, made
    in a "cold process" (a new run cache). Returns the run ids, oldest first."""
    from monitor.incremental.cache import RunCache
    from monitor.pipeline import recompute

    n = len(case["judgments"])
    cuts = [int(n * f) for f in (0.9, 0.93, 0.96, 1.0)]
    store_case(engine, case, upto=cuts[0])
    cache = RunCache.from_settings(settings)
    [first] = recompute(engine, settings, cache=cache)
    runs = [first.run_id]
    for lo, hi in itertools.pairwise(cuts):
        store_case(engine, case, upto=hi, start=lo)
        if len(runs) == 2:
            cache = RunCache.from_settings(settings)
        [o] = recompute(engine, settings, cache=cache)
        runs.append(o.run_id)
    return runs
