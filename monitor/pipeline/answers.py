"""The model's answer per item for the label exports (``monitor export labels``): the
reliability model refitted on the judgments the export keeps (blocked workers left out)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind
from monitor.pipeline.collect import scale_codes
from monitor.pipeline.params import ModelOptions
from monitor.pipeline.reliability import gold_values
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignInfo


def model_answers(
    info: CampaignInfo, arrays: CampaignArrays, keep: NDArray[np.bool_], options: ModelOptions
) -> tuple[NDArray[np.float64], list[Any], NDArray[np.float64]]:
    """The model's answer per item from the judgments ``keep`` (the exports leave blocked
    workers out): (judged items mask as float 0/1, value per item, uncertainty per item).

    Labels: the posterior label and its posterior; ratings: the posterior mean and its sd;
    multi-label sets: the options with a posterior above 0.5, joined by ``|``, and the
    smallest ``max(p, 1 - p)`` over the options."""
    from monitor.metrics.labels.label_model import dawid_skene
    from monitor.metrics.labels.multilabel_model import multilabel_model
    from monitor.metrics.ratings.model import rating_model

    N, W = len(arrays.item_ids), len(arrays.worker_ids)
    values: list[Any] = [None] * N
    uncertainty = np.full(N, np.nan)
    if arrays.kind == Kind.MULTILABEL:
        names = arrays.annotation_names
        kept = np.flatnonzero(keep)
        per_item = np.bincount(arrays.items[kept], minlength=N)
        if not names or arrays.ann_judgment is None or arrays.ann_code is None or not kept.size:
            return per_item.astype(float), values, uncertainty
        position = np.full(arrays.n, -1)
        position[kept] = np.arange(kept.size)
        ann = keep[arrays.ann_judgment]
        ml = multilabel_model(
            arrays.items[kept], arrays.workers[kept], position[arrays.ann_judgment[ann]],
            arrays.ann_code[ann], n_items=N, n_workers=W, n_options=len(names),
            max_iter=options.model_max_iter, tol=options.model_tol,
        )  # fmt: skip
        post = np.asarray(ml.posterior)
        for i in np.flatnonzero(per_item):
            values[i] = "|".join(sorted(str(names[a]) for a in np.flatnonzero(post[i] > 0.5)))
        uncertainty = np.maximum(post, 1.0 - post).min(axis=1)
        return per_item.astype(float), values, uncertainty
    idx = arrays.latest
    idx = idx[keep[idx]]
    items, workers = arrays.items[idx], arrays.workers[idx]
    per_item = np.bincount(items, minlength=N)
    gold = gold_values(info, arrays)
    if arrays.kind == Kind.LABEL:
        codes, _, names = scale_codes(info, arrays)
        K = len(arrays.categories)
        gold_codes = np.where(np.isfinite(gold), gold, -1).astype(np.int64)
        if options.model_max_categories < K:  # as the run: the one-coin model
            from monitor.metrics.labels.one_coin import one_coin_dawid_skene

            oc = one_coin_dawid_skene(
                items, workers, codes[idx], n_items=N, n_workers=W, n_classes=K,
                gold=gold_codes if (gold_codes >= 0).any() else None,
                max_iter=options.model_max_iter, tol=options.model_tol,
            )  # fmt: skip
            for i in np.flatnonzero(per_item):
                values[i] = arrays.categories[int(oc.labels[i])] if oc.labels[i] >= 0 else None
            return per_item.astype(float), values, oc.label_posterior
        lm = dawid_skene(
            items, workers, codes[idx], n_items=N, n_workers=W, n_classes=K,
            gold=gold_codes if (gold_codes >= 0).any() else None,
            min_judgments=options.model_min_judgments,
            max_iter=options.model_max_iter, tol=options.model_tol,
        )  # fmt: skip
        for i in np.flatnonzero(per_item):
            values[i] = arrays.categories[int(lm.labels[i])] if lm.labels[i] >= 0 else None
        return per_item.astype(float), values, np.asarray(lm.posterior).max(axis=1)
    scale = (float(info.scale_min), float(info.scale_max))  # type: ignore[arg-type]
    rm = rating_model(
        items, workers, arrays.values[idx], n_items=N, n_workers=W, scale=scale,
        gold=gold if np.isfinite(gold).any() else None,
        max_iter=options.model_max_iter, tol=options.model_tol,
    )  # fmt: skip
    for i in np.flatnonzero(per_item):
        values[i] = float(rm.mean[i]) if np.isfinite(rm.mean[i]) else None
    return per_item.astype(float), values, np.asarray(rm.sd, dtype=np.float64)
