"""Whether a rating campaign's exports fall back to the plain mean: the rating model's
held-out check (:mod:`monitor.metrics.ratings.model_check`), kept across incremental runs."""

from __future__ import annotations

from typing import Any

import numpy as np

from monitor.core.results import State
from monitor.metrics.ratings.model import RatingJudgments
from monitor.pipeline.collect import Values
from monitor.pipeline.params import Params

CHECK_MAX_JUDGMENTS = 200_000  # the held-out check's sample (5 fits of the model on it)
CHECK_STATE = "model_check"
RECHECK_GROWTH = 1.1
"""An incremental run keeps the last held-out check until the campaign has grown by 10% since
it: five fits of the model would cost more than the rest of the run, and a verdict on the whole
campaign moves little with a few more judgments. A full run always checks afresh."""


def rating_fallback(out: Values, params: Params, res: Any, data: RatingJudgments, N: int) -> bool:
    """``model_fallback``: whether the rating model predicts held-out judgments no better than
    the plain mean (:func:`~monitor.metrics.ratings.model_check.holdout_check`, every fold's fit
    started from this run's model); the exports then give the plain mean. Returns whether
    they do."""
    from monitor.metrics.ratings.model_check import HoldoutCheck, holdout_check
    from monitor.rules.campaign import FALLBACK_MESSAGE

    values, scale = data.values, data.scale
    options = params.model
    kept = params.warm.states.get(CHECK_STATE) if params.warm is not None else None
    meta = {"scale": list(scale), "n_workers": len(res.bias), "n_items": N}
    if (
        kept is not None
        and all(kept.meta.get(k) == v for k, v in meta.items())
        and values.size <= RECHECK_GROWTH * kept.meta["n_judgments"]
    ):
        m = kept.meta
        check = HoldoutCheck(m["model_mse"], m["plain_mse"], m["n"], m["folds"],
                             m.get("diff_se", float("nan")))  # fmt: skip
        out.states[CHECK_STATE] = kept
    else:
        check = holdout_check(
            data, n_workers=len(res.bias), fit=res, max_iter=options.model_max_iter,
            tol=options.model_tol, max_judgments=CHECK_MAX_JUDGMENTS,
        )  # fmt: skip
        if check.n and np.isfinite([check.model_mse, check.plain_mse]).all():
            checked = {"model_mse": check.model_mse, "plain_mse": check.plain_mse,
                       "diff_se": check.diff_se, "n": check.n, "folds": check.folds,
                       "n_judgments": int(values.size)}  # fmt: skip
            out.states[CHECK_STATE] = State({**meta, **checked}, np.zeros(0))
    if check.n == 0:
        out.campaign_value("model_fallback", None, reason="no item judged twice to hold out")
        return False
    known_se = bool(np.isfinite(check.diff_se))
    se = f", standard error of the difference {check.diff_se:.3g}" if known_se else ""
    if check.fallback:
        message = (
            f"{FALLBACK_MESSAGE} (held-out mean squared error {check.model_mse:.4g} against "
            f"{check.plain_mse:.4g}{se}, {check.n} judgments in {check.folds} folds)"
        )
    else:
        message = (
            f"the rating model predicts held-out judgments better than the plain mean beyond "
            f"its uncertainty (mean squared error {check.model_mse:.4g} against "
            f"{check.plain_mse:.4g}{se})"
        )
    detail = {"model_mse": check.model_mse, "plain_mse": check.plain_mse, "n": check.n,
              "folds": check.folds, "message": message}  # fmt: skip
    if known_se:
        detail["diff_se"] = check.diff_se
    out.campaign_value("model_fallback", float(check.fallback), n=check.n, detail=detail)
    return check.fallback
